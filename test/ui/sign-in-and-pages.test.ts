import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page, Response } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Child, http, killStray, ROOT, startCli } from "../cli/cli-process.js";
import { type Browser, launchBrowser, screenshot, seriousViolations, UI_TEST_TIMEOUT_MS } from "./browser.js";
import { addAllergy, send } from "./messages.js";

// The dashboard behind --admin-token: the pages load, the data does not until the token is given; then every
// page works. Also the pages not covered elsewhere (patients, scenarios with a failed reload, health, landing).

const TOKEN = "ui-test-admin-token";

let sandbox: { child: Child; url: string };
let browser: Browser;
let folder: string;

beforeAll(async () => {
  // A copy of the shipped scenarios, so that a test can break it.
  folder = mkdtempSync(join(tmpdir(), "uae-fhir-sandbox-ui-scenarios-"));
  cpSync(join(ROOT, "scenarios"), folder, { recursive: true });
  [sandbox, browser] = await Promise.all([startCli(["--scenarios", folder, "--admin-token", TOKEN]), launchBrowser()]);
}, UI_TEST_TIMEOUT_MS);

afterAll(async () => {
  await browser?.close();
  await killStray();
  rmSync(folder, { recursive: true, force: true });
});

/** Answers of the admin API's data endpoints (not the pages and assets under /__admin/ui/) a page received. */
function dataAnswers(page: Page): Response[] {
  const seen: Response[] = [];
  page.on("response", (r) => {
    const path = new URL(r.url()).pathname;
    if (path.startsWith("/__admin/") && !path.startsWith("/__admin/ui")) seen.push(r);
  });
  return seen;
}

async function signIn(page: Page, token = TOKEN): Promise<void> {
  await page.getByLabel("Admin token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
}

describe.sequential("with --admin-token", { timeout: UI_TEST_TIMEOUT_MS }, () => {
  it("shows no data before signing in, on any page", async () => {
    expect((await send(sandbox.url, addAllergy())).status).toBe(200);
    const page = await browser.page();
    const answers = dataAnswers(page);
    for (const path of ["", "calls/1", "orders", "pharmacies", "patients", "scenarios", "health"]) {
      await page.goto(`${sandbox.url}/__admin/ui/${path}`);
      await page.getByRole("heading", { name: "Sign in" }).waitFor();
      expect(await page.getByRole("table").count(), `no table on ${path || "calls"}`).toBe(0);
      expect(await page.getByText("add-allergy").count(), `no call on ${path || "calls"}`).toBe(0);
    }
    expect(answers.filter((r) => r.status() < 400).map((r) => r.url())).toEqual([]);
    // The data itself is refused without the token.
    expect((await http(`${sandbox.url}/__admin/calls`)).status).toBe(401);
    expect((await http(`${sandbox.url}/__admin/events`)).status).toBe(401);
    await screenshot(page, "sign-in");
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });

  it("refuses a wrong token and keeps asking", async () => {
    const page = await browser.page();
    await page.goto(`${sandbox.url}/__admin/ui/`);
    await signIn(page, "not-the-token");
    await page.getByRole("alert").filter({ hasText: "That token was not accepted" }).waitFor();
    expect(await page.getByRole("table").count()).toBe(0);
    await page.close();
  });

  it("shows everything after signing in, live, for the rest of the tab's session", async () => {
    const page = await browser.page();
    await page.goto(`${sandbox.url}/__admin/ui/`);
    await signIn(page);
    await page.getByRole("table", { name: /^Calls, newest first/ }).waitFor();
    await page.getByRole("row").filter({ hasText: "add-allergy" }).first().waitFor();
    await page.getByRole("status").filter({ hasText: "Live updates: on" }).waitFor();
    const reply = await send(sandbox.url, addAllergy());
    await page
      .getByRole("row")
      .filter({ hasText: `#${reply.callId}` })
      .waitFor();

    // Another page of the same tab: still signed in (sessionStorage), data shown.
    await page.getByRole("navigation", { name: "Dashboard" }).getByRole("link", { name: "Health" }).click();
    await page.getByRole("heading", { level: 1, name: "Health" }).waitFor();
    await page.getByText("Push queue").waitFor();
    expect(await page.getByRole("heading", { name: "Sign in" }).count()).toBe(0);

    // A new tab is a new session: asked again.
    const other = await browser.page();
    await other.goto(`${sandbox.url}/__admin/ui/`);
    await other.getByRole("heading", { name: "Sign in" }).waitFor();
    await other.close();

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    expect(
      await page.evaluate(
        () => (globalThis as unknown as { sessionStorage: { length: number } }).sessionStorage.length,
      ),
    ).toBe(0);
    await page.close();
  });
});

describe.sequential("every other page", { timeout: UI_TEST_TIMEOUT_MS }, () => {
  it("patients: the known patients, most recent first", async () => {
    const page = await browser.page();
    await page.goto(`${sandbox.url}/__admin/ui/patients`);
    await signIn(page);
    const table = page.getByRole("table", { name: /^Patients the sandbox knows/ });
    await table.waitFor();
    // The add-allergy messages above were about the README's patient, whose generated name is Reem Al Dhaheri.
    await table.getByRole("row").filter({ hasText: "784-1990-1234567-6" }).waitFor();
    await screenshot(page, "patients");
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });

  it("scenarios: rules with hit counts, and a failed reload with file:line:column", async () => {
    const page = await browser.page();
    await page.goto(`${sandbox.url}/__admin/ui/scenarios`);
    await signIn(page);
    await page.getByRole("table", { name: /^Rules: what each matches and answers/ }).waitFor();
    // Written by hand: the unknown operation is on line 4, its value starting at column 18.
    writeFileSync(
      join(folder, "90-broken.yaml"),
      "rules:\n  - name: broken\n    when:\n      operation: add-alergy\n    respond:\n      builtIn: true\n",
    );
    await page.getByRole("button", { name: "Reload from disk" }).click();
    const problems = page.getByRole("region", { name: /^The last reload failed/ });
    // Files are named relative to the scenarios folder.
    await problems.getByText("90-broken.yaml:4:18", { exact: true }).waitFor();
    expect(await problems.textContent()).toContain('unknown operation "add-alergy"');
    await screenshot(page, "scenarios");
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });

  it("health: uptime, memory, the journal against its limits, the push queue", async () => {
    const page = await browser.page();
    await page.goto(`${sandbox.url}/__admin/ui/health`);
    await signIn(page);
    await page.getByText("uptime").waitFor();
    for (const heading of ["Journal", "Memory", "Push queue"])
      await page.getByRole("heading", { level: 2, name: heading }).waitFor();
    await screenshot(page, "health");
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });

  it("the landing page links the dashboard, the docs, metadata and health", async () => {
    const page = await browser.page();
    await page.goto(`${sandbox.url}/`);
    for (const name of ["Dashboard", "Documentation", "Capability statement", "Health check"])
      await page.getByRole("link", { name }).waitFor();
    await page.getByRole("link", { name: "Capability statement" }).click();
    await page.waitForURL(/\/uae-fhir\/r4\/metadata$/);
    await page.goto(`${sandbox.url}/`);
    await screenshot(page, "landing");
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole("link", { name: "Dashboard" }).click();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await page.close();
  });

  it("is readable in a narrow window", async () => {
    const page = await browser.page({ width: 390, height: 844 });
    await page.goto(`${sandbox.url}/__admin/ui/`);
    await signIn(page);
    await page.getByRole("table", { name: /^Calls, newest first/ }).waitFor();
    // Nothing wider than the window but the table, which scrolls in its own box.
    const overflow = await page.evaluate(
      () =>
        (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement
          .scrollWidth,
    );
    expect(overflow).toBeLessThanOrEqual(390);
    await screenshot(page, "calls-narrow");
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });
});
