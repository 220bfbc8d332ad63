import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Child, killStray, startCli } from "../cli/cli-process.js";
import { type Browser, launchBrowser, seriousViolations, UI_TEST_TIMEOUT_MS } from "./browser.js";
import { addAllergy, send } from "./messages.js";

// A workspace's dashboard (/w/{workspace}/__admin/ui/) shows that workspace only: its calls, live, and not
// another's; the default dashboard does not show them either.

/** Waits for the row of call `shown`; the row of call `hidden` is not there. */
async function listsOnly(page: Page, shown: string, hidden: string): Promise<void> {
  await page
    .getByRole("row")
    .filter({ hasText: `#${shown}` })
    .waitFor();
  expect(
    await page
      .getByRole("row")
      .filter({ hasText: `#${hidden}` })
      .count(),
  ).toBe(0);
}

let sandbox: { child: Child; url: string };
let browser: Browser;

beforeAll(async () => {
  [sandbox, browser] = await Promise.all([startCli(["--scenarios", "scenarios"]), launchBrowser()]);
}, UI_TEST_TIMEOUT_MS);

afterAll(async () => {
  await browser?.close();
  await killStray();
});

describe.sequential("a workspace's dashboard", { timeout: UI_TEST_TIMEOUT_MS }, () => {
  it("says whose it is and lists that workspace's calls live, not another's", async () => {
    const page = await browser.page();
    await page.goto(`${sandbox.url}/w/team-a/__admin/ui/`);
    await page.getByText("workspace team-a").waitFor();
    await page.getByRole("status").filter({ hasText: "Live updates: on" }).waitFor();

    const other = await send(`${sandbox.url}/w/team-b`, addAllergy());
    const mine = await send(`${sandbox.url}/w/team-a`, addAllergy());
    expect([other.status, mine.status]).toEqual([200, 200]);

    await listsOnly(page, mine.callId, other.callId);
    // Opened again (not live): the list is the workspace's journal, the same one call.
    await page.reload();
    await listsOnly(page, mine.callId, other.callId);
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });

  it("the default dashboard shows neither, and names no workspace", async () => {
    const mine = await send(sandbox.url, addAllergy());
    const page = await browser.page();
    await page.goto(`${sandbox.url}/__admin/ui/`);
    await page
      .getByRole("row")
      .filter({ hasText: `#${mine.callId}` })
      .waitFor();
    // Only the default workspace's call: the header row and this one.
    expect(await page.getByRole("row").count()).toBe(2);
    expect(await page.getByText(/workspace /).count()).toBe(0);
    await page.close();
  });
});
