import { readFileSync } from "node:fs";
import type { AllergyIntolerance } from "fhir/r4.js";
import type { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { SimulatedNetworkFault } from "../../src/http/faults.js";
import type { LogSettings } from "../../src/log/request-log.js";
import { admin } from "../admin/admin-client.js";
import { subscribe } from "../orders/pharmacy-client.js";
import { loggedSandbox } from "../support/log-output.js";
import { envelope, example, messageBundle, STANDARD } from "../support/messages.js";
import { startReceiver } from "../support/receiver.js";

// Issue: "long operation names and unknown paths break the columns; faults repeat themselves". Every call's line
// keeps its columns — time, direction, operation, status, response.code, who answered, duration, call id — at fixed
// widths; a longer value is cut with an ellipsis and never shifts the rest.
//
// The widths, counted by hand (not read from src): time 12 (HH:MM:SS.mmm) or 29 (2026-01-15T13:30:00.123+04:00),
// direction 3, operation 29 (the longest operation id, subscribe-order-notifications), status 3, response code 15
// (transient-error), who answered 28 (the longest shipped rule name, exchange-down-for-pharmacies), duration 8
// (right-aligned), call id 8; one space between columns. From the direction on, the columns start at:
const AFTER_CLOCK = {
  direction: 13,
  operation: 17,
  status: 47,
  code: 51,
  by: 67,
  duration: 96,
  callId: 105,
  notes: 114,
};
const WIDTHS = { direction: 3, operation: 29, status: 3, code: 15, by: 28, duration: 8, callId: 8 };

/** The same offsets after an ISO 8601 time, 17 characters longer than the clock. */
const shifted = (by: number) =>
  Object.fromEntries(Object.entries(AFTER_CLOCK).map(([k, v]) => [k, v + by])) as typeof AFTER_CLOCK;

const LONG_RULE = "a-rule-whose-name-is-longer-than-its-column";
const LICENCE = "PH-DXB-LONG-LICENCE-NUMBER-0001";
const LONG_PATH = `/${"a".repeat(199)}`;

const RULES = `
rules:
  - name: ${LONG_RULE}
    when: { operation: add-allergy, headers: { X-Case: reset } }
    respond: { fault: connection-reset }
  - name: ${LONG_RULE}-down
    when: { operation: add-allergy, headers: { X-Case: down } }
    respond: { status: 503, outcome: { diagnostics: "down for maintenance" } }
`;

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const allergy = () =>
  envelope(messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")]));

async function send(app: Hono, path: string, body: string, headers: Record<string, string> = {}) {
  try {
    const res = await app.request(path, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body,
    });
    await res.text();
  } catch (error) {
    if (!(error instanceof SimulatedNetworkFault)) throw error;
  }
}

/** One line of each kind that stretched a column, from a sandbox whose log is pretty, without colours. */
async function stretchedLines(settings: Partial<LogSettings>): Promise<string[]> {
  const receiver = await startReceiver(() => ({ status: 503 }));
  cleanups.push(() => receiver.close());
  const { sandbox, log, out } = loggedSandbox({ format: "pretty", colours: false, ...settings }, { pushAttempts: 1 });
  cleanups.push(() => sandbox.close());
  const { app } = sandbox;
  expect(
    (await admin(app, "POST", "/scenarios", { body: RULES, headers: { "content-type": "text/yaml" } })).status,
  ).toBe(201);
  // The longest operation id, answered.
  expect((await subscribe(app, LICENCE, receiver.url)).status).toBe(200);
  // A path of 200 characters that nothing serves.
  await send(app, LONG_PATH, "{}");
  // A long rule's fault, and its 503.
  await send(app, STANDARD, allergy(), { "X-Case": "reset" });
  await send(app, STANDARD, allergy(), { "X-Case": "down" });
  // A push to a pharmacy with a long licence, refused.
  expect((await admin(app, "POST", "/orders", { body: {} })).status).toBe(201);
  await out.waitFor(/ OUT /);
  log.flush();
  return out.lines().filter((l) => / (IN |OUT) /.test(l));
}

/** The text of each column of a line, cut at the hand-counted offsets. */
function columns(line: string, at: typeof AFTER_CLOCK) {
  const slice = (name: keyof typeof WIDTHS) => line.slice(at[name], at[name] + WIDTHS[name]);
  return {
    direction: slice("direction"),
    operation: slice("operation"),
    status: slice("status"),
    code: slice("code"),
    by: slice("by"),
    duration: slice("duration"),
    callId: slice("callId"),
    notes: line.slice(at.notes),
    // The one space before each column, and before the notes when there are any.
    gaps: Object.values(at)
      .filter((start) => start < line.length)
      .map((start) => line[start - 1]),
  };
}

const pad = (text: string, width: number) => text + " ".repeat(width - text.length);

describe("the pretty line per call keeps its columns", () => {
  it("with the longest operation, a 200-character path, long rule names and a long pharmacy licence", async () => {
    const lines = await stretchedLines({});
    expect(lines).toHaveLength(5);
    const [longest, path, fault, down, push] = lines.map((l) => columns(l, AFTER_CLOCK)) as Array<
      ReturnType<typeof columns>
    > &
      Record<0 | 1 | 2 | 3 | 4, ReturnType<typeof columns>>;
    for (const line of lines) {
      expect(line.slice(0, 12), line).toMatch(/^\d\d:\d\d:\d\d\.\d{3}$/);
      expect(columns(line, AFTER_CLOCK).gaps, line).toEqual(Array(line.length > AFTER_CLOCK.notes ? 8 : 7).fill(" "));
      expect(columns(line, AFTER_CLOCK).duration, line).toMatch(/^ *\d+(\.\d)? ms$/);
      expect(columns(line, AFTER_CLOCK).callId, line).toMatch(/^#\d+ *$/);
    }

    expect(longest).toMatchObject({
      direction: "IN ",
      operation: "subscribe-order-notifications",
      status: "200",
      code: pad("ok", 15),
      by: pad("built-in", 28),
    });
    expect(path).toMatchObject({
      direction: "IN ",
      // "POST /" and 22 of the 199 a's, then the ellipsis: 29 characters.
      operation: `POST /${"a".repeat(22)}…`,
      status: "404",
      code: pad("-", 15),
      by: pad("built-in", 28),
    });
    expect(path.notes).toMatch(/^— Nothing is served at POST \/a+/);
    expect(fault).toMatchObject({
      direction: "IN ",
      operation: pad("add-allergy", 29),
      status: "---",
      code: pad("-", 15),
      // 27 characters of the name, then the ellipsis.
      by: "a-rule-whose-name-is-longer…",
    });
    expect(down).toMatchObject({
      operation: pad("add-allergy", 29),
      status: "503",
      code: "transient-error",
      by: "a-rule-whose-name-is-longer…",
      notes: "— down for maintenance",
    });
    expect(push).toMatchObject({
      direction: "OUT",
      operation: pad("order-fulfillment-request", 29),
      status: "503",
      code: pad("-", 15),
      // The licence cut, never the attempt: 17 characters, the ellipsis, " attempt 1".
      by: "PH-DXB-LONG-LICEN… attempt 1",
    });
  });

  it("says a scripted fault once", async () => {
    const fault = (await stretchedLines({})).find((l) => l.includes(" --- ")) as string;
    expect(columns(fault, AFTER_CLOCK).notes).toBe("scripted fault: connection-reset");
    expect(fault.split("connection-reset")).toHaveLength(2);
  });

  it("with --log-time iso: the date, the time and the UTC offset, 17 characters wider, the columns as wide", async () => {
    const before = Date.now();
    const lines = await stretchedLines({ time: "iso" });
    const after = Date.now();
    const at = shifted(17);
    expect(lines).toHaveLength(5);
    for (const line of lines) {
      const time = line.slice(0, 29);
      expect(time, line).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$/);
      const instant = Date.parse(time);
      expect(instant).toBeGreaterThanOrEqual(before);
      expect(instant).toBeLessThanOrEqual(after);
      // The offset is this machine's at that instant (Date's own, not the log's).
      const east = -new Date(instant).getTimezoneOffset();
      const sign = east < 0 ? "-" : "+";
      const hhmm = `${String(Math.floor(Math.abs(east) / 60)).padStart(2, "0")}:${String(Math.abs(east) % 60).padStart(2, "0")}`;
      expect(time.slice(23)).toBe(`${sign}${hhmm}`);
      expect(columns(line, at).gaps, line).toEqual(Array(line.length > at.notes ? 8 : 7).fill(" "));
    }
    expect(columns(lines[1] as string, at).operation).toBe(`POST /${"a".repeat(22)}…`);
    expect(columns(lines[2] as string, at).by).toBe("a-rule-whose-name-is-longer…");
  });
});

describe("the README's request-log example", () => {
  it("is in these columns, line by line (it was made by a real run)", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const section = readme.slice(
      readme.indexOf("## The request log"),
      readme.indexOf("## When something doesn't match"),
    );
    const quickStart = readme.slice(0, readme.indexOf("## The request log"));
    const calls = `${section}\n${quickStart}`.split("\n").filter((l) => /^\d\d:\d\d:\d\d\.\d{3} (IN |OUT) /.test(l));
    // The example's 7 calls and the quick start's one.
    expect(calls).toHaveLength(8);
    for (const line of calls) {
      const c = columns(line, AFTER_CLOCK);
      expect(c.gaps, line).toEqual(Array(line.length > AFTER_CLOCK.notes ? 8 : 7).fill(" "));
      expect(c.status, line).toMatch(/^(\d{3}|---)$/);
      expect(c.code.trimEnd(), line).toMatch(/^(ok|transient-error|fatal-error|-)$/);
      expect(c.duration, line).toMatch(/^ *\d+(\.\d)? ms$/);
      expect(c.callId, line).toMatch(/^#\d+ *$/);
    }
  });
});

describe("a tenant's words cannot print a line of their own", () => {
  // A forged call line, a terminal escape that erases the line, and a carriage return.
  const FORGED =
    "x\n10:00:00.000 IN  add-allergy                   200 ok              built-in    1 ms #7\u001b[2K\rY";

  it("a rule's diagnostics with line breaks and escapes stay on the call's line", async () => {
    const { sandbox, log, out } = loggedSandbox({ format: "pretty", colours: false });
    cleanups.push(() => sandbox.close());
    const rule = `rules:\n  - when: { operation: add-allergy }\n    respond: { status: 503, outcome: { diagnostics: ${JSON.stringify(FORGED)} } }\n`;
    expect(
      (await admin(sandbox.app, "POST", "/scenarios", { body: rule, headers: { "content-type": "text/yaml" } })).status,
    ).toBe(201);
    await send(sandbox.app, STANDARD, allergy());
    await out.waitFor(/ IN {2}add-allergy/);
    log.flush();
    const text = out.lines().join("\n");
    expect(text).not.toContain("\u001b");
    expect(text).not.toContain("\r");
    const calls = out.lines().filter((l) => / IN {2}/.test(l));
    expect(calls).toHaveLength(1);
    expect(calls[0]).toContain("— x\ufffd10:00:00.000 IN  add-allergy");
    expect(out.lines().filter((l) => l.startsWith("10:00:00.000"))).toEqual([]);
  });

  it("a warning that carries a tenant's text keeps its later lines indented", async () => {
    const { sandbox, log, out, err } = loggedSandbox({ format: "pretty", colours: false });
    cleanups.push(() => sandbox.close());
    log.logger.warn(`order 1: push to pharmacy ${FORGED} failed`);
    log.flush();
    const lines = [...out.lines(), ...err.lines()];
    const warn = lines.findIndex((l) => / WARN order 1: push to pharmacy x$/.test(l));
    expect(warn, lines.join("\n")).toBeGreaterThanOrEqual(0);
    expect(lines.slice(warn + 1, warn + 3)).toEqual([
      "  10:00:00.000 IN  add-allergy                   200 ok              built-in    1 ms #7\ufffd[2K",
      "  Y failed",
    ]);
    expect(lines.filter((l) => l.startsWith("10:00:00.000"))).toEqual([]);
  });
});
