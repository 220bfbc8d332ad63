import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Page, Route } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Child, http, killStray, ROOT, spawnCommand, startCli } from "../cli/cli-process.js";
import { type Browser, launchBrowser, screenshot, seriousViolations, UI_TEST_TIMEOUT_MS } from "./browser.js";

// The dashboard's conformance pages in a real browser. Every result a step can have is shown as a sign and a word
// (not by colour alone), with the message, the plan's fix on a failure and the evidence as links to the calls; the
// session's page follows a session from running to its end without being reloaded.

let browser: Browser;
let sandbox: { child: Child; url: string };

beforeAll(async () => {
  [browser, sandbox] = await Promise.all([launchBrowser(), startCli([])]);
}, UI_TEST_TIMEOUT_MS);

afterAll(async () => {
  sandbox?.child.process.kill("SIGTERM");
  await browser?.close();
  await killStray();
});

const step = (over: Record<string, unknown>) => ({
  kind: "expectRetry",
  type: "expectation",
  required: true,
  status: "pending",
  expected: "a retry with the same MessageHeader id within 30 s",
  message: null,
  fix: null,
  evidence: [],
  startedAt: null,
  endedAt: null,
  ...over,
});

/** A hand-written report of a sender session with one test of each result (the report format, not the engine's run). */
function report(state: "running" | "failed") {
  const ended = state === "failed";
  return {
    id: "s-ui-1",
    role: "sender",
    plan: { id: "sender", title: "Sender behaviour", version: "1.0.0", source: "conformance/sender.yaml" },
    workspace: "default",
    state,
    startedAt: "2026-11-27T10:00:00.000Z",
    endedAt: ended ? "2026-11-27T10:00:09.000Z" : null,
    stopReason: null,
    participants: {
      sandbox: { messageUrl: `${sandbox.url}/uae-fhir/r4/$process-message` },
      system: { operations: ["add-allergy"], pharmacyUrl: null, pharmacyLicence: null },
    },
    timeScale: 0.1,
    tests: [
      {
        id: "transient-error-retried",
        title: "A transient error is retried",
        description: null,
        rule: {
          id: "reliable-retry",
          source: "fhir-r4",
          ref: "https://hl7.org/fhir/R4/messaging.html#reliable",
          text: "A sender retries with the same MessageHeader id",
        },
        required: true,
        status: ended ? "fail" : "running",
        steps: [
          step({
            id: "answer-503",
            title: "Answer the next message 503",
            kind: "answerNext",
            type: "action",
            status: "pass",
            expected: "a message to answer",
            message: "answered add-allergy 6f1c with 503 transient-error",
            evidence: [
              {
                callId: "7",
                direction: "inbound",
                operation: "add-allergy",
                messageId: "6f1c",
                status: 503,
                at: "2026-11-27T10:00:01.000Z",
                note: "the answered message",
              },
            ],
          }),
          step({
            id: "retried-same-id",
            title: "Retried with the same id",
            status: ended ? "fail" : "running",
            message: ended
              ? "expected a retry of message 6f1c with the same MessageHeader id within 3 s; saw 1 message after the 503, with a new id (a91e)"
              : null,
            fix: "Keep the MessageHeader id when retrying a transient-error.",
            evidence: ended
              ? [
                  {
                    callId: "8",
                    direction: "inbound",
                    operation: "add-allergy",
                    messageId: "a91e",
                    status: 200,
                    at: "2026-11-27T10:00:02.000Z",
                    note: "a new id, not a retry",
                  },
                ]
              : [],
          }),
          step({
            id: "same-content",
            title: "With the same content",
            status: ended ? "skip" : "pending",
            message: ended ? "not run: step retried-same-id failed" : null,
          }),
        ],
      },
      {
        id: "retry-after-honoured",
        title: "Retry-After is honoured",
        description: null,
        rule: {
          id: "retry-after",
          source: "sandbox",
          ref: "https://example.org/retry-after",
          text: "Wait for Retry-After",
        },
        required: false,
        status: ended ? "warning" : "pending",
        steps: [
          step({
            id: "not-before",
            title: "Not before Retry-After",
            kind: "expectRetryAfterHonoured",
            required: false,
            status: ended ? "warning" : "pending",
            message: ended ? "expected the retry no sooner than 2 s after the 429; it came after 0.4 s" : null,
            fix: "Wait for the Retry-After the answer names.",
          }),
        ],
      },
      {
        id: "fatal-error-not-retried",
        title: "A fatal error is not retried",
        description: null,
        rule: {
          id: "no-retry",
          // As a host's own plan may write it: text, not a link target.
          source: "host",
          ref: "javascript:alert(document.domain)",
          text: "No retry after fatal-error",
        },
        required: true,
        status: ended ? "pass" : "pending",
        steps: [
          step({
            id: "no-retry",
            title: "No retry for 15 s",
            kind: "expectNoRetry",
            status: ended ? "pass" : "pending",
            // Text a session quotes from the system under test is shown as text, never as markup.
            message: ended ? 'no retry of <img src=x onerror="alert(1)"> in 1.5 s' : null,
          }),
        ],
      },
    ],
    summary: ended
      ? { tests: 3, passed: 1, failed: 1, warnings: 1, skipped: 0 }
      : { tests: 3, passed: 0, failed: 0, warnings: 0, skipped: 0 },
    coverage: {
      operations: { exercised: ["add-allergy"], notExercised: ["remove-allergy"] },
      rules: ended
        ? { checked: ["reliable-retry", "retry-after", "no-retry"], notChecked: [] }
        : { checked: [], notChecked: ["reliable-retry", "retry-after", "no-retry"] },
    },
  };
}

/** Answers the page's admin API calls about sessions with `current()`: the engine's answers, as the API gives them. */
async function mockSessions(page: Page, current: () => ReturnType<typeof report>): Promise<void> {
  const json = (route: Route, body: unknown) =>
    route.fulfill({ status: 200, contentType: "application/json", body: JSON.stringify(body) });
  await page.route(/\/__admin\/conformance\/sessions\/s-ui-1$/, (route) => json(route, current()));
  await page.route(/\/__admin\/conformance\/sessions$/, (route) => {
    const r = current();
    return json(route, {
      sessions: [
        {
          id: r.id,
          role: r.role,
          plan: r.plan.id,
          state: r.state,
          startedAt: r.startedAt,
          endedAt: r.endedAt,
          summary: r.summary,
        },
      ],
    });
  });
  await page.route(/\/__admin\/conformance\/plans$/, (route) =>
    json(route, {
      plans: [
        {
          id: "sender",
          title: "Sender behaviour",
          version: "1.0.0",
          role: "sender",
          source: "conformance/sender.yaml",
          tests: 7,
        },
      ],
    }),
  );
}

const stepRow = (page: Page, title: string) =>
  page.getByRole("row").filter({ has: page.getByRole("rowheader", { name: new RegExp(`^${title}`) }) });

describe.sequential("conformance pages", { timeout: UI_TEST_TIMEOUT_MS }, () => {
  it("show each result as a sign and a word, with the message, the fix and the calls behind it", async () => {
    let state: "running" | "failed" = "running";
    const page = await browser.page();
    await mockSessions(page, () => report(state));
    await page.goto(`${sandbox.url}/__admin/ui/conformance/s-ui-1`);
    await page.getByText(/^State: /).waitFor();
    expect(await page.getByText(/^State: /).textContent()).toBe("State: … running");
    expect(await stepRow(page, "Answer the next message 503").getByText("pass").textContent()).toBe("✓ pass");
    await page.evaluate(() => Object.assign(globalThis, { sameDocument: true }));

    // The session ends: the page shows it without a reload.
    state = "failed";
    await page.getByText("State: ✗ failed").waitFor();
    expect(await page.evaluate(() => (globalThis as unknown as { sameDocument?: boolean }).sameDocument)).toBe(true);
    const failed = stepRow(page, "Retried with the same id");
    expect(await failed.getByText("fail", { exact: false }).first().textContent()).toBe("✗ fail");
    expect(await failed.textContent()).toContain("saw 1 message after the 503, with a new id (a91e)");
    expect(await failed.textContent()).toContain("To fix: Keep the MessageHeader id when retrying a transient-error.");
    const evidence = failed.getByRole("link", { name: /^Call 8: inbound add-allergy, 200/ });
    expect(await evidence.getAttribute("href")).toBe("/__admin/ui/calls/8");
    expect(await stepRow(page, "With the same content").textContent()).toContain("– skip");
    expect(await stepRow(page, "Not before Retry-After").textContent()).toContain("! warning");
    expect(await stepRow(page, "Not before Retry-After").textContent()).toContain("To fix: Wait for the Retry-After");
    expect(await stepRow(page, "No retry for 15 s").textContent()).not.toContain("To fix");
    expect(await stepRow(page, "No retry for 15 s").textContent()).toContain(
      'no retry of <img src=x onerror="alert(1)">',
    );
    expect(await page.locator("img[src=x]").count()).toBe(0);
    // A rule's ref that is no web address is shown, not linked.
    expect(await page.locator('a[href^="javascript:"]').count()).toBe(0);
    await page.getByText("where it is written: javascript:alert(document.domain)").waitFor();
    // The signs are decoration: a screen reader hears the word alone.
    expect(await page.locator('.badge [aria-hidden="true"]').count()).toBeGreaterThan(0);
    const coverage = page.getByRole("region", { name: "Coverage" });
    expect(await coverage.textContent()).toContain("Operations exercised (1 of 2)add-allergy");
    const reports = page.getByRole("region", { name: "Reports" });
    for (const name of ["testreport.json", "junit.xml", "report.json"])
      await reports.getByRole("link", { name: new RegExp(`^${name.replace(".", "\\.")}`) }).waitFor();
    await screenshot(page, "conformance-session");
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByRole("navigation", { name: "Dashboard" }).getByRole("link", { name: "Conformance" }).click();
    const row = page.getByRole("row").filter({ has: page.getByRole("link", { name: "Session s-ui-1" }) });
    await row.waitFor();
    expect(await row.textContent()).toContain("✗ failed");
    await page.getByRole("region", { name: "Start a session" }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });
});

describe.sequential("a real session", { timeout: UI_TEST_TIMEOUT_MS }, () => {
  it("follows a session from running to its end, and links each step's evidence to its call", async () => {
    // A sender that never retries, every wait a twentieth as long: the session fails within seconds.
    const started = await http(`${sandbox.url}/__admin/conformance/sessions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ role: "sender", operations: ["add-allergy"], timeScale: 0.05 }),
    });
    expect(started.status, started.text).toBe(201);
    const id = started.json.id as string;
    const page = await browser.page();
    await page.goto(`${sandbox.url}/__admin/ui/conformance/${id}`);
    await page.getByText("State: … running").waitFor();
    await page.evaluate(() => Object.assign(globalThis, { sameDocument: true }));
    const sender = spawnCommand([
      process.execPath,
      join(ROOT, "conformance/examples/reference-sender.mjs"),
      "--sandbox",
      sandbox.url,
      "--time-scale",
      "0.05",
      "--variant",
      "no-retry",
    ]);
    try {
      // The plan's waits at 0.05 (the longest 3 s) and the sender's pace: well within the page's wait.
      await page.getByText("State: ✗ failed").waitFor({ timeout: 60_000 });
    } finally {
      sender.process.kill("SIGTERM");
    }
    expect(await page.evaluate(() => (globalThis as unknown as { sameDocument?: boolean }).sameDocument)).toBe(true);
    const failed = page
      .getByRole("region", { name: /^A transient error is retried/ })
      .getByRole("row")
      .filter({ hasText: "✗ fail" });
    expect(await failed.textContent()).toContain("To fix:");
    // The answered message is the evidence: its link opens the call's page.
    const answered = page
      .getByRole("region", { name: /^A transient error is retried/ })
      .getByRole("link", { name: /^Call \d+: inbound add-allergy, 503/ })
      .first();
    const href = (await answered.getAttribute("href")) as string;
    expect(href).toMatch(/^\/__admin\/ui\/calls\/\d+$/);
    // report.json is the session's report, saved under its name (fetched with the token when there is one).
    const reports = page.getByRole("region", { name: "Reports" });
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      reports.getByRole("link", { name: /^report\.json/ }).click(),
    ]);
    expect(download.suggestedFilename()).toBe("report.json");
    const saved = JSON.parse(readFileSync(await download.path(), "utf8"));
    expect(saved.id).toBe(id);
    expect(saved.state).toBe("failed");
    await screenshot(page, "conformance-session-live");
    expect(await seriousViolations(page)).toEqual([]);
    await answered.click();
    await page.getByRole("heading", { level: 1, name: /^Call \d+$/ }).waitFor();
    expect(page.url()).toBe(`${sandbox.url}${href}`);
    await page.close();
  });

  it("starts a session from the form, and stops it from its page", async () => {
    const page = await browser.page();
    await page.goto(`${sandbox.url}/__admin/ui/conformance`);
    const form = page.getByRole("region", { name: "Start a session" });
    await form.getByRole("radio", { name: /^Sender/ }).check();
    await form.getByLabel("Operations the system sends (comma-separated)").fill("add-allergy");
    // Every wait ten times as long: it runs until stopped.
    await form.getByLabel(/^Time scale/).fill("10");
    await form.getByRole("button", { name: "Start session" }).click();
    await page.getByText("State: … running").waitFor();
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toMatch(/^Conformance session [0-9a-f-]{36}$/);
    await page.getByRole("button", { name: "Stop the session" }).click();
    await page.getByText(/^State: ■ stopped — /).waitFor();
    // Its steps that never ran stay pending; the one that was waiting ended as skipped.
    expect(await page.getByText("– skip").count()).toBeGreaterThan(0);
    await page.close();
  });
});
