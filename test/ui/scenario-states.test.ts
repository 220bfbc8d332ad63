import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllergyIntolerance } from "fhir/r4.js";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Child, http, killStray, startCli } from "../cli/cli-process.js";
import { example, messageBundle } from "../support/messages.js";
import { type Browser, launchBrowser, screenshot, seriousViolations, UI_TEST_TIMEOUT_MS } from "./browser.js";
import { send } from "./messages.js";

// The Scenarios page shows each scenario's state per key as messages move it, live, and resets one key, one
// scenario and all (asking first for the last two) — checked through the admin API, which the page only reads.

const EID = "urn:ae:emirates-id";
const ALICE = "784-1980-1111111-3";
const BOB = "784-1990-1234567-6";

// The scenario guide's flow: each patient's first allergy accepted, the second refused.
const FLOW = `
rules:
  - name: first-accepted
    when: { operation: add-allergy }
    scenario: allergy-flow
    requiredState: Started
    newState: one-added
    respond: { builtIn: true }
  - name: second-refused
    when: { operation: add-allergy }
    scenario: allergy-flow
    requiredState: one-added
    newState: refused-once
    respond:
      outcome: { diagnostics: one allergy per visit }
`;

const addAllergy = (value: string) =>
  messageBundle("add-allergy", [
    {
      ...example<AllergyIntolerance>("allergyintolerance-example.json"),
      patient: { identifier: { system: EID, value } },
    } as AllergyIntolerance,
  ]);

let sandbox: { child: Child; url: string };
let browser: Browser;
let folder: string;

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), "uae-fhir-sandbox-ui-states-"));
  writeFileSync(join(folder, "flow.yaml"), FLOW);
  [sandbox, browser] = await Promise.all([startCli(["--scenarios", folder, "--no-watch"]), launchBrowser()]);
}, UI_TEST_TIMEOUT_MS);

afterAll(async () => {
  await browser?.close();
  await killStray();
  rmSync(folder, { recursive: true, force: true });
});

/** The states the admin API gives, as `key state` lines. */
async function apiStates(base = sandbox.url): Promise<string[]> {
  const answer = await http(`${base}/__admin/scenarios/states`);
  expect(answer.status).toBe(200);
  return (answer.json.states as Array<{ scenario: string; key: string; state: string }>).map(
    (s) => `${s.scenario} ${s.key} ${s.state}`,
  );
}

const statesTable = (page: Page) => page.getByRole("table", { name: "States of scenario allergy-flow, per key" });
const rowOf = (page: Page, patient: string) =>
  statesTable(page)
    .getByRole("row")
    .filter({ has: page.getByRole("rowheader", { name: `${EID}|${patient}` }) });

async function moved(base: string, patient: string, rule: string | null): Promise<void> {
  const reply = await send(base, addAllergy(patient));
  expect(reply.status).toBe(200);
  expect(reply.headers.get("x-sandbox-rule")).toBe(rule);
}

describe.sequential("scenario states on the Scenarios page", { timeout: UI_TEST_TIMEOUT_MS }, () => {
  it("shows each key's state as messages move it, live, and resets one key", async () => {
    const page = await browser.page();
    await page.goto(`${sandbox.url}/__admin/ui/scenarios`);
    const scenario = page.getByRole("region", { name: "Scenario allergy-flow" });
    await scenario.getByText("Every key is in Started").waitFor();
    // Its rules' transitions, in words.
    expect(await scenario.textContent()).toContain("first-accepted: Started → one-added");
    await page.getByRole("status").filter({ hasText: "Live updates: on" }).waitFor();

    await moved(sandbox.url, ALICE, "first-accepted");
    await rowOf(page, ALICE).getByText("one-added", { exact: true }).waitFor();
    await moved(sandbox.url, BOB, "first-accepted");
    await moved(sandbox.url, ALICE, "second-refused");
    await rowOf(page, ALICE).getByText("refused-once", { exact: true }).waitFor();
    await rowOf(page, BOB).getByText("one-added", { exact: true }).waitFor();
    // When the state last moved: a moment, written as every page writes one.
    expect(await rowOf(page, ALICE).locator("time").textContent()).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    await screenshot(page, "scenario-states");
    expect(await seriousViolations(page)).toEqual([]);

    // One key: at once (it touches that key alone).
    await page.getByRole("button", { name: `Reset allergy-flow for ${EID}|${ALICE}` }).click();
    await page.getByRole("status").filter({ hasText: "1 state back in Started" }).waitFor();
    await rowOf(page, ALICE).waitFor({ state: "detached" });
    expect(await apiStates()).toEqual([`allergy-flow ${EID}|${BOB} one-added`]);
    // Alice starts the flow over.
    await moved(sandbox.url, ALICE, "first-accepted");
    await rowOf(page, ALICE).getByText("one-added", { exact: true }).waitFor();
    // A reset through the admin API (a test suite's, between tests) shows at once too.
    const reset = await http(`${sandbox.url}/__admin/scenarios/states?key=${encodeURIComponent(`${EID}|${ALICE}`)}`, {
      method: "DELETE",
    });
    expect(reset.json).toEqual({ reset: 1 });
    await rowOf(page, ALICE).waitFor({ state: "detached" });
    await moved(sandbox.url, ALICE, "first-accepted");
    await rowOf(page, ALICE).getByText("one-added", { exact: true }).waitFor();
    await page.close();
  });

  it("resets a scenario and all of them only once asked, and a dismissed question changes nothing", async () => {
    const page = await browser.page();
    await page.goto(`${sandbox.url}/__admin/ui/scenarios`);
    await rowOf(page, BOB).waitFor();
    const before = await apiStates();
    expect(before).toHaveLength(2);

    await page.getByRole("button", { name: "Reset allergy-flow", exact: true }).click();
    const question = page.getByRole("group", { name: "Put allergy-flow back in Started for all 2 keys?" });
    await question.waitFor();
    // The question takes the focus, on its button that goes on.
    const focused = () =>
      (globalThis as unknown as { document: { activeElement: { textContent: string } | null } }).document.activeElement
        ?.textContent;
    expect(await page.evaluate(focused)).toBe("Reset allergy-flow");
    expect(await seriousViolations(page)).toEqual([]);
    await question.getByRole("button", { name: "Cancel" }).click();
    await question.waitFor({ state: "detached" });
    expect(await apiStates()).toEqual(before);

    await page.getByRole("button", { name: "Reset allergy-flow", exact: true }).click();
    await question.getByRole("button", { name: "Reset allergy-flow" }).click();
    await page.getByRole("status").filter({ hasText: "allergy-flow: 2 states back in Started" }).waitFor();
    await page.getByRole("region", { name: "Scenario allergy-flow" }).getByText("Every key is in Started").waitFor();
    expect(await apiStates()).toEqual([]);

    // All scenarios.
    await moved(sandbox.url, BOB, "first-accepted");
    await page.getByRole("button", { name: "Reset all scenario states" }).click();
    await page
      .getByRole("group", { name: "Put every scenario back in Started, for all 1 key?" })
      .getByRole("button", { name: "Reset all" })
      .click();
    await page.getByRole("status").filter({ hasText: "All scenarios: 1 state back in Started" }).waitFor();
    expect(await apiStates()).toEqual([]);
    await moved(sandbox.url, BOB, "first-accepted");
    await page.close();
  });

  it("a workspace's page shows that workspace's states only, and resets them only", async () => {
    const team = `${sandbox.url}/w/team-a`;
    await moved(team, ALICE, "first-accepted");
    const page = await browser.page();
    await page.goto(`${team}/__admin/ui/scenarios`);
    await rowOf(page, ALICE).getByText("one-added", { exact: true }).waitFor();
    // Bob moved the default workspace's scenario (the test above), not this one's.
    expect(await rowOf(page, BOB).count()).toBe(0);
    await page.getByRole("button", { name: "Reset all scenario states" }).click();
    await page.getByRole("button", { name: "Reset all", exact: true }).click();
    await page.getByRole("status").filter({ hasText: "All scenarios: 1 state back in Started" }).waitFor();
    expect(await apiStates(team)).toEqual([]);
    expect(await apiStates()).toEqual([`allergy-flow ${EID}|${BOB} one-added`]);
    await page.close();
  });
});
