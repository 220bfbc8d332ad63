import type { AllergyIntolerance, Bundle, Patient } from "fhir/r4.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Child, http, killStray, startCli } from "../cli/cli-process.js";
import {
  type Browser,
  launchBrowser,
  screenshot,
  seriousViolations,
  UI_TEST_TIMEOUT_MS,
  UI_TIMEOUT_MS,
} from "./browser.js";
import { addAllergy, EMIRATES_ID, send } from "./messages.js";

// The calls pages in a real browser: a message's row appears live, its page shows request, answer and the
// stored resource, and every issue of a refused message is marked where it points in the request.

let sandbox: { child: Child; url: string };
let browser: Browser;

beforeAll(async () => {
  [sandbox, browser] = await Promise.all([startCli(["--scenarios", "scenarios"]), launchBrowser()]);
}, UI_TEST_TIMEOUT_MS);

afterAll(async () => {
  await browser?.close();
  await killStray();
});

describe.sequential("calls, live", { timeout: UI_TEST_TIMEOUT_MS }, () => {
  let allergyCall: string;
  let storedId: string;

  it("shows a new add-allergy call's row without a reload", async () => {
    const page = await browser.page();
    await page.goto(`${sandbox.url}/__admin/ui/`);
    await page.getByRole("status").filter({ hasText: "Live updates: on" }).waitFor();
    // Gone if the page were loaded again.
    await page.evaluate(() => Object.assign(globalThis, { sameDocument: true }));

    const reply = await send(sandbox.url, addAllergy());
    expect(reply.status).toBe(200);
    allergyCall = reply.callId;
    storedId = reply.json.entry[1].resource.id;

    const row = page.getByRole("row").filter({ hasText: `#${allergyCall}` });
    await row.waitFor();
    const cells = await row.getByRole("cell").allTextContents();
    // time, direction, operation, status, response code, rule, duration
    expect(cells.slice(1, 6)).toEqual(["inbound", "add-allergy", "200", "ok", "—"]);
    expect(cells[6]).toMatch(/^\d+(\.\d)? ms$/);
    expect(await page.evaluate(() => (globalThis as unknown as { sameDocument?: boolean }).sameDocument)).toBe(true);

    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });

  it("opens the call: the request, the answer and the stored resource", async () => {
    const page = await browser.page();
    await page.goto(`${sandbox.url}/__admin/ui/`);
    await page
      .getByRole("row")
      .filter({ hasText: `#${allergyCall}` })
      .getByRole("link")
      .click();
    await page.getByRole("heading", { level: 1, name: `Call ${allergyCall}` }).waitFor();

    const request = page.getByRole("region", { name: "Request" });
    // A message Bundle of three entries is longer than a body shown unfolded.
    await request.getByText("Show the whole body").click();
    await request.getByText('"Allergy to penicillin"').waitFor();
    expect(await request.getByRole("link", { name: "entry 1" }).count()).toBe(1);
    const answer = page.getByRole("region", { name: "Answer" });
    // So is the answer (a MessageHeader, the allergy and the patient).
    await answer.getByText("Show the whole body").click();
    // The stored allergy: the server's id and version 1 (CONTRACT §4), in the answer and named above it.
    // The entry whose title names the stored allergy (the MessageHeader's focus names it too, as a reference).
    const entry = answer
      .locator("details.fhir-entry")
      .filter({ has: page.getByText(`AllergyIntolerance/${storedId}`, { exact: true }) });
    await entry.getByText(`"id": "${storedId}"`).waitFor();
    await entry.getByText('"versionId": "1"').waitFor();
    await entry.getByText('"Allergy to penicillin"').waitFor();
    const resources = page.getByRole("region", { name: "Resources" });
    await resources.getByText(`AllergyIntolerance/${storedId} (stored, version 1)`, { exact: false }).waitFor();
    await screenshot(page, "call");
    expect(await seriousViolations(page)).toEqual([]);

    // The patient's profile lists the allergy just added; the link names the patient (docs/operations.md's name).
    const patient = resources.getByRole("listitem").filter({ hasText: `urn:ae:emirates-id|${EMIRATES_ID}` });
    await patient.getByRole("link", { name: "Reem Al Dhaheri" }).click();
    const allergies = page.getByRole("region", { name: "Allergies" });
    await allergies
      .getByRole("row")
      .filter({ hasText: storedId })
      .filter({ hasText: "Allergy to penicillin" })
      .waitFor();
    await screenshot(page, "patient");
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });

  it("acts on a call: copy as curl, resend, turn into a scenario rule", async () => {
    const page = await browser.page();
    await page.goto(`${sandbox.url}/__admin/ui/calls/${allergyCall}`);
    const actions = page.getByRole("region", { name: "Actions" });
    await actions.getByText("Copy as curl").click();
    const curl = await actions.getByRole("figure", { name: "curl command" }).textContent();
    expect(curl).toContain(`curl -X POST '${sandbox.url}/uae-fhir/r4/$process-message'`);
    expect(curl).toContain("-H 'content-type: application/json'");
    expect(curl).toContain('--data-binary \'{"content":');

    await actions.getByRole("button", { name: "Turn into a scenario rule" }).click();
    const yaml = actions.getByRole("figure", { name: "Scenario rule (YAML)" });
    await yaml.waitFor();
    expect(await yaml.textContent()).toMatch(/^rules:$/m);
    expect(await yaml.textContent()).toContain("operation: add-allergy");
    expect(
      await actions.getByRole("link", { name: `Download call-${allergyCall}.yaml` }).getAttribute("download"),
    ).toBe(`call-${allergyCall}.yaml`);

    // With a new MessageHeader id (the default): processed again, a new call.
    await actions.getByRole("button", { name: "Resend" }).click();
    const sent = actions.getByRole("status").filter({ hasText: "Sent again: answered 200" });
    await sent.waitFor();
    await sent.getByRole("link").click();
    await page.getByRole("heading", { level: 1, name: /^Call \d+$/ }).waitFor();
    expect(await page.getByRole("heading", { level: 1 }).textContent()).not.toBe(`Call ${allergyCall}`);
    await page
      .getByRole("region", { name: "Resources" })
      .getByRole("listitem")
      .filter({ hasText: /AllergyIntolerance\/.+ \(stored, version 1\)/ })
      .waitFor();
    await page.close();
  });

  it("marks each issue of a refused message at its place in the request", async () => {
    // Three mistakes, and where each is (by hand, from the message below): a code outside the required value set
    // at clinicalStatus.coding[0].code; a string where Age.value needs a number at onsetAge.value; and the
    // required `patient` missing, at its parent, the AllergyIntolerance.
    const bad: Bundle = addAllergy((a: AllergyIntolerance) => {
      (a.clinicalStatus?.coding?.[0] as { code: string }).code = "bogus";
      Object.assign(a, { onsetAge: { value: "x" } });
      delete (a as Partial<AllergyIntolerance>).patient;
    });
    const reply = await send(sandbox.url, bad);
    expect(reply.status).toBe(400);

    const page = await browser.page();
    await page.goto(`${sandbox.url}/__admin/ui/calls/${reply.callId}`);
    const issues = page.getByRole("region", { name: /^Issues/ }).getByRole("listitem");
    await issues.first().waitFor();
    const texts = await issues.allTextContents();
    expect(texts).toHaveLength(3);
    const number = (pattern: RegExp) => texts.findIndex((t) => pattern.test(t)) + 1;
    const expected: Array<[RegExp, string]> = [
      [/"bogus"/, '"code": "bogus"'],
      [/Age\.value/, '"value": "x"'],
      [/patient is required/, '"resourceType": "AllergyIntolerance"'],
    ];
    const request = page.getByRole("region", { name: "Request" });
    for (const [diagnostics, node] of expected) {
      const n = number(diagnostics);
      expect(n, `an issue saying ${diagnostics}`).toBeGreaterThan(0);
      const marked = request.locator("mark").filter({ hasText: new RegExp(`^Issue ${n}(?!\\d)`) });
      expect(await marked.count(), `issue ${n} marked once`).toBe(1);
      expect(await marked.textContent()).toContain(node);
      // The issue's link leads to its mark.
      await issues
        .nth(n - 1)
        .getByRole("link", { name: `show issue ${n} in the request` })
        .click();
      expect(new URL(page.url()).hash).toBe(`#request-issue-${n}`);
      expect(await marked.evaluate((el) => el.id)).toBe(`request-issue-${n}`);
      // Shown, though the request's body starts folded.
      await marked.waitFor();
    }
    // The two leaf issues mark only their own node, not the resource around them.
    for (const [diagnostics, node] of expected.slice(0, 2)) {
      const marked = request.locator("mark").filter({ hasText: new RegExp(`^Issue ${number(diagnostics)}(?!\\d)`) });
      expect((await marked.textContent())?.replace(/^Issue \d+/, "").trim()).toBe(node);
    }
    await screenshot(page, "call-issues");
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });

  it("filters the calls and pages through them, newest first", async () => {
    // 55 more add-allergy calls and one of each kind below: more than the 50 rows of a page.
    for (let i = 0; i < 55; i++) expect((await send(sandbox.url, addAllergy())).status).toBe(200);
    const magic = addAllergy();
    (magic.entry?.[2]?.resource as Patient).identifier = [
      { system: "urn:ae:emirates-id", value: "784-1900-0000422-7" },
    ];
    const refused = await send(sandbox.url, magic);
    expect(refused.json.entry[0].resource.response.code).toBe("fatal-error");
    const missing = await http(`${sandbox.url}/uae-fhir/r4/nowhere`);
    expect(missing.status).toBe(404);

    const page = await browser.page();
    await page.goto(`${sandbox.url}/__admin/ui/`);
    const table = page.getByRole("table", { name: /newest first/ });
    const ids = async () =>
      (await table.getByRole("row").allTextContents()).slice(1).map((row) => /#(\d+)/.exec(row)?.[1]);
    // Newest first: the 404, then the refusal.
    await expect
      .poll(async () => (await ids()).slice(0, 2), { timeout: UI_TIMEOUT_MS })
      .toEqual([missing.headers.get("x-sandbox-call-id"), refused.callId]);
    expect(await ids()).toHaveLength(50);
    await screenshot(page, "calls");

    // Older, then back.
    const newest = await ids();
    await page.getByRole("button", { name: "Older" }).click();
    await expect.poll(async () => (await ids())[0], { timeout: UI_TIMEOUT_MS }).toBe(String(Number(newest.at(-1)) - 1));
    await page.getByRole("button", { name: "Newer" }).click();
    await expect.poll(ids, { timeout: UI_TIMEOUT_MS }).toEqual(newest);

    const filters = page.getByRole("search", { name: "Filter calls" });
    await filters.getByLabel("Response code").selectOption("fatal-error");
    await expect.poll(ids, { timeout: UI_TIMEOUT_MS }).toEqual([refused.callId]);
    expect(new URL(page.url()).search).toBe("?code=fatal-error");
    await filters.getByLabel("Response code").selectOption("");
    await filters.getByLabel("Status", { exact: true }).fill("4xx");
    await filters.getByRole("button", { name: "Apply filters" }).click();
    // The refused message of the previous test (400) and the unknown path (404).
    await expect.poll(async () => (await ids()).length, { timeout: UI_TIMEOUT_MS }).toBe(2);
    await filters.getByLabel("Status", { exact: true }).fill("");
    await filters.getByLabel("Patient", { exact: true }).fill("784-1900-0000422-7");
    await filters.getByRole("button", { name: "Apply filters" }).click();
    await expect.poll(ids, { timeout: UI_TIMEOUT_MS }).toEqual([refused.callId]);
    await filters.getByLabel("Patient", { exact: true }).fill("");
    await filters.getByLabel("Text", { exact: true }).fill("/uae-fhir/r4/nowhere");
    await filters.getByRole("button", { name: "Apply filters" }).click();
    await expect.poll(ids, { timeout: UI_TIMEOUT_MS }).toEqual([missing.headers.get("x-sandbox-call-id")]);
    await page.close();
  });
});
