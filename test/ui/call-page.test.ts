import type { AllergyIntolerance, Bundle, Patient } from "fhir/r4.js";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Child, http, killStray, startCli } from "../cli/cli-process.js";
import { subscriptionMessage } from "../orders/pharmacy-client.js";
import { EMIRATES_ID_SYSTEM, emiratesId } from "../support/emirates-id.js";
import { startReceiver } from "../support/receiver.js";
import {
  type Browser,
  launchBrowser,
  screenshot,
  seriousViolations,
  UI_TEST_TIMEOUT_MS,
  UI_TIMEOUT_MS,
} from "./browser.js";
import { addAllergy, EMIRATES_ID, send } from "./messages.js";

// A call's page and the pages around it, as a newcomer met them: live, linking only to what exists, patients by
// name, one way of writing a time, rules with what they match and answer, a refusal's rule outcomes said once, and
// bodies folded so that a page stays a few screens tall.

const LICENCE = "PH-UI-CALL-0001";

let sandbox: { child: Child; url: string };
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let browser: Browser;
/** The order the first test triggers, and the push's first attempt. */
let orderId: string;
let firstAttempt: string;

beforeAll(async () => {
  // The first push is refused with a 503 (retried), the second held until the test lets it through. A long push
  // timeout, so the held attempt is not given up on while the page is looked at.
  [sandbox, receiver, browser] = await Promise.all([
    startCli(["--scenarios", "scenarios", "--push-timeout", "60s"]),
    startReceiver((_req, n) => (n === 1 ? { status: 503 } : n === 2 ? "hang" : { status: 200 })),
    launchBrowser(),
  ]);
}, UI_TEST_TIMEOUT_MS);

afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  await killStray();
});

// biome-ignore lint/suspicious/noExplicitAny: the admin API's JSON, read as the tests need it
const getJson = async (path: string): Promise<any> => (await http(`${sandbox.url}${path}`)).json;

/** A page's whole height, as the browser lays it out. */
const height = (page: Page) =>
  page.evaluate(
    () =>
      (globalThis as unknown as { document: { documentElement: { scrollHeight: number } } }).document.documentElement
        .scrollHeight,
  );

const sameDocument = (page: Page) =>
  page.evaluate(() => (globalThis as unknown as { sameDocument?: boolean }).sameDocument);

/** An add-allergy the sandbox refuses (400): a clinical status outside its value set, for a patient never seen. */
function refusedAllergy(patientId: string): Bundle {
  const bundle = addAllergy((a: AllergyIntolerance) => {
    (a.clinicalStatus?.coding?.[0] as { code: string }).code = "bogus";
  });
  (bundle.entry?.[2]?.resource as Patient).identifier = [{ system: EMIRATES_ID_SYSTEM, value: patientId }];
  return bundle;
}

/** ISO 8601 in UTC with milliseconds, as the admin API writes instants. */
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const RELATIVE = /^(?:just now|\d+ (?:s|min|h|d) ago|in \d+ (?:s|min|h|d))$/;

describe.sequential("a call's page", { timeout: UI_TEST_TIMEOUT_MS }, () => {
  it("is live: a push's later attempt and its order's state appear without a reload", async () => {
    expect((await send(sandbox.url, subscriptionMessage(LICENCE, receiver.url))).status).toBe(200);
    const created = await http(`${sandbox.url}/__admin/orders`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ pharmacies: [LICENCE], deadline: "10m" }),
    });
    expect(created.status).toBe(201);
    orderId = created.json.id;
    // The first attempt (answered 503) is recorded before the second is made; the second is held.
    await receiver.next();
    await receiver.next();
    const pushes = await getJson("/__admin/calls?direction=outbound&view=summary");
    firstAttempt = pushes.calls.find((c: { attempt?: number }) => c.attempt === 1).id;

    const page = await browser.page();
    await page.goto(`${sandbox.url}/__admin/ui/calls/${firstAttempt}`);
    await page.getByRole("heading", { level: 1, name: `Call ${firstAttempt}` }).waitFor();
    await page.getByRole("status").filter({ hasText: "Live updates: on" }).waitFor();
    const order = page.getByRole("region", { name: "Order" });
    await order.getByRole("link", { name: `Order ${orderId}` }).waitFor();
    expect(await order.textContent()).toMatch(/now open/);
    await page.evaluate(() => Object.assign(globalThis, { sameDocument: true }));

    // The second attempt is answered 200: it is recorded, and the pharmacy's request is delivered.
    expect(receiver.release(1)).toBe(1);
    const calls = page.getByRole("region", { name: "Calls of this message" });
    const second = calls.getByRole("row").filter({ hasText: "outbound (attempt 2)" });
    await second.waitFor();
    expect(await second.textContent()).toContain("200");
    expect(await calls.getByRole("row").filter({ hasText: "(this one)" }).textContent()).toContain("attempt 1");
    await order.getByText(`${LICENCE}'s request: delivered`).waitFor();
    expect(await sameDocument(page)).toBe(true);

    await screenshot(page, "call-push");
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });

  it("links a patient only when the sandbox holds them, by name", async () => {
    // A patient no message has named: the refused message stores nothing, so there is no profile to link to.
    const stranger = emiratesId(1977, 4_242_424);
    const refused = await send(sandbox.url, refusedAllergy(stranger));
    expect(refused.status).toBe(400);
    expect(
      (await http(`${sandbox.url}/__admin/patients/${encodeURIComponent(`${EMIRATES_ID_SYSTEM}|${stranger}`)}`)).status,
    ).toBe(404);

    const page = await browser.page();
    await page.goto(`${sandbox.url}/__admin/ui/calls/${refused.callId}`);
    const resources = page.getByRole("region", { name: "Resources" });
    await resources.getByText("the sandbox holds no such patient").waitFor();
    expect(await resources.textContent()).toContain(`${EMIRATES_ID_SYSTEM}|${stranger}`);
    expect(await resources.getByRole("link").count()).toBe(0);

    // An accepted message's patient is held: linked, by the name docs/operations.md shows for this patient.
    const accepted = await send(sandbox.url, addAllergy());
    expect(accepted.status).toBe(200);
    await page.goto(`${sandbox.url}/__admin/ui/calls/${accepted.callId}`);
    const link = page.getByRole("region", { name: "Resources" }).getByRole("link", { name: "Reem Al Dhaheri" });
    await link.waitFor();
    expect(decodeURIComponent(new URL((await link.getAttribute("href")) as string, page.url()).pathname)).toBe(
      `/__admin/ui/patients/${EMIRATES_ID_SYSTEM}|${EMIRATES_ID}`,
    );
    await page.close();
  });

  it("says the rules a refused message met once per reason, with a count, and lists them on demand", async () => {
    const refused = await send(sandbox.url, refusedAllergy(EMIRATES_ID));
    expect(refused.status).toBe(400);
    // What the admin API says the message met: every one not matched, for the same reason (it was invalid).
    const met: Array<{ rule: string; outcome: string }> = (await getJson(`/__admin/calls/${refused.callId}`))
      .explanation.rules;
    expect(met.length).toBeGreaterThan(1);
    expect(new Set(met.map((r) => r.outcome))).toEqual(new Set(["not-matched"]));

    const page = await browser.page();
    await page.goto(`${sandbox.url}/__admin/ui/calls/${refused.callId}`);
    const table = page.getByRole("table", { name: "Scenario rules this message met, and their outcome" });
    await table.waitFor();
    const rows = table.getByRole("row");
    expect(await rows.count()).toBe(2);
    const row = rows.nth(1);
    expect(await row.textContent()).toContain("the message was invalid");
    const count = row.getByText(`${met.length} rules`, { exact: true });
    await count.click();
    const listed = row.getByRole("listitem");
    await listed.first().waitFor();
    expect(await listed.count()).toBe(met.length);
    for (const r of met) expect(await row.textContent()).toContain(r.rule);
    await screenshot(page, "call-refused");
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });

  it("folds long bodies: a page a few screens tall, the whole body a click away", async () => {
    const accepted = await send(sandbox.url, addAllergy());
    const refused = await send(sandbox.url, refusedAllergy(EMIRATES_ID));
    const page = await browser.page();
    for (const call of [accepted.callId, refused.callId, firstAttempt]) {
      await page.goto(`${sandbox.url}/__admin/ui/calls/${call}`);
      const request = page.getByRole("region", { name: "Request" });
      const unfold = request.getByText("Show the whole body");
      await unfold.waitFor();
      const folded = await height(page);
      expect(folded, `call ${call}'s page folded`).toBeLessThan(3000);
      // Folded, the request's last entry (a Patient in a message, the MedicationRequest of an order push) is hidden.
      const last = request.locator("details.fhir-entry").last();
      expect(await last.isVisible()).toBe(false);
      await unfold.click();
      await last.getByText('"resourceType":').first().waitFor();
      expect(await height(page)).toBeGreaterThan(folded);
      await request.getByText("Fold the body").waitFor();
    }
    await page.close();
  });

  it("opens a folded body at an issue's mark when its link is followed", async () => {
    const refused = await send(sandbox.url, refusedAllergy(EMIRATES_ID));
    const page = await browser.page();
    await page.goto(`${sandbox.url}/__admin/ui/calls/${refused.callId}`);
    const link = page.getByRole("link", { name: "show issue 1 in the request" });
    await link.click();
    const mark = page.locator("#request-issue-1");
    await expect.poll(() => mark.isVisible(), { timeout: UI_TIMEOUT_MS }).toBe(true);
    expect(await mark.textContent()).toContain('"code": "bogus"');
    await page.close();
  });
});

describe.sequential("the pages around it", { timeout: UI_TEST_TIMEOUT_MS }, () => {
  it("titles a patient's page with the patient's name, whatever key it was opened by", async () => {
    // scenarios/00-test-patients.yaml: id fixture-mariam, Emirates ID 784-1985-1000001-5, given Mariam, family Al Mansoori.
    const page = await browser.page();
    for (const key of ["fixture-mariam", `${EMIRATES_ID_SYSTEM}|784-1985-1000001-5`]) {
      await page.goto(`${sandbox.url}/__admin/ui/patients/${encodeURIComponent(key)}`);
      await page.getByRole("heading", { level: 1, name: "Patient Mariam Al Mansoori" }).waitFor();
      expect(await page.title()).toBe("Patient Mariam Al Mansoori · uae-fhir-sandbox");
    }
    await page.close();
  });

  it("writes every time one way, ISO 8601 in UTC, with how long ago in its tooltip", async () => {
    const page = await browser.page();
    const pages = [
      "",
      `calls/${firstAttempt}`,
      "orders",
      `orders/${orderId}`,
      "pharmacies",
      "scenarios",
      "patients/fixture-mariam",
      "health",
    ];
    for (const path of pages) {
      await page.goto(`${sandbox.url}/__admin/ui/${path}`);
      await page.locator("main time").first().waitFor();
      const times = await page
        .locator("main time")
        .evaluateAll((els) => els.map((e) => ({ text: e.textContent, title: e.getAttribute("title") })));
      // A moment (not a date such as a birth date) is written one way, and says how long ago in its tooltip.
      const moments = times.filter((t) => t.text?.includes("T"));
      expect(moments.length, `moments on ${path || "calls"}`).toBeGreaterThan(0);
      for (const t of moments) {
        expect(t.text, `a time on ${path || "calls"}`).toMatch(ISO_UTC);
        expect(t.title, `its tooltip on ${path || "calls"}`).toMatch(RELATIVE);
      }
      // No time written another way: a clock time or a month's name outside those moments.
      // The dashboard's own words, not the headers and bodies of calls (what was sent, as it was sent: an HTTP Date).
      const words = await page.locator("main").evaluate((main) => {
        const copy = main.cloneNode(true) as typeof main;
        for (const body of copy.querySelectorAll(".fhir, pre, table.headers")) body.remove();
        return copy.textContent ?? "";
      });
      const text = words.replace(/\d{4}-\d{2}-\d{2}T[\d:.]+Z/g, "");
      expect(text, `other times on ${path || "calls"}`).not.toMatch(/\b\d{1,2}:\d{2}:\d{2}\b|\b(?:AM|PM)\b/);
      expect(text).not.toMatch(/\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* \d/);
    }
    // Mariam's body weight was measured at 2025-11-02T09:00:00+04:00 (the fixture): 05:00 UTC.
    await page.goto(`${sandbox.url}/__admin/ui/patients/fixture-mariam`);
    const weight = page
      .getByRole("region", { name: "Measurements" })
      .getByRole("row")
      .filter({ hasText: "Body weight" });
    expect(await weight.locator("time").textContent()).toBe("2025-11-02T05:00:00.000Z");
    await page.close();
  });

  it("shows each rule with what it matches, what it answers and its hits", async () => {
    // A message about the magic patient 784-1900-0000500-0: answered by magic-server-error.
    const magic = addAllergy();
    (magic.entry?.[2]?.resource as Patient).identifier = [{ system: EMIRATES_ID_SYSTEM, value: "784-1900-0000500-0" }];
    expect((await send(sandbox.url, magic)).status).toBe(500);

    const page = await browser.page();
    await page.goto(`${sandbox.url}/__admin/ui/scenarios`);
    const table = page.getByRole("table", { name: /^Rules: what each matches and answers/ });
    await table.waitFor();
    const headers = await table.getByRole("columnheader").allTextContents();
    expect(headers).toEqual(["Rule", "Where", "Matches", "Answers", "Matched", "Answered", "Times"]);
    const cells = async (rule: string) =>
      table
        .getByRole("row")
        .filter({ has: page.getByRole("rowheader", { name: rule, exact: true }) })
        .getByRole("cell")
        .allTextContents();
    // From scenarios/10-magic-patients.yaml and its table of answers, and the other shipped files, by hand.
    const expected: Array<[string, RegExp, string, string]> = [
      [
        "magic-server-error",
        /any operation.*patient is urn:ae:emirates-id\|784-1900-0000500-0/,
        "500 transient-error, issue exception",
        "1",
      ],
      [
        "magic-business-refusal",
        /patient is urn:ae:emirates-id\|784-1900-0000422-7/,
        "200 fatal-error, issue business-rule",
        "0",
      ],
      ["magic-unavailable", /784-1900-0000503-4/, "503 transient-error, issue transient, header Retry-After", "0"],
      ["magic-slow", /784-1900-0000408-6/, "the built-in answer, after 8s", "0"],
      ["magic-connection-reset", /784-1900-0000104-1/, "fault connection-reset", "0"],
      [
        "slow-first-confirmation",
        /confirm-drugs-availability.*header X-Sandbox-Scenario is "slow-confirm"/,
        "the built-in answer, after 3s",
        "0",
      ],
    ];
    for (const [rule, matches, answers, answered] of expected) {
      const [, match, answer, , hits] = await cells(rule);
      expect(match, rule).toMatch(matches);
      expect(answer, rule).toBe(answers);
      expect(hits, rule).toBe(answered);
    }
    // A sequence: each response in turn.
    const [, , flaky] = await cells("flaky-add-allergy");
    expect(flaky).toMatch(/^A sequence, the last repeated:.*503 transient-error.*the built-in answer$/);
    await screenshot(page, "scenarios-rules");
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });
});
