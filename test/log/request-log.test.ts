import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllergyIntolerance } from "fhir/r4.js";
import type { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import type { SandboxApp } from "../../src/app.js";
import { SimulatedNetworkFault } from "../../src/http/faults.js";
import type { LogSettings } from "../../src/log/request-log.js";
import { admin } from "../admin/admin-client.js";
import { subscribe } from "../orders/pharmacy-client.js";
import { loggedSandbox } from "../support/log-output.js";
import { envelope, example, messageBundle, post, STANDARD } from "../support/messages.js";
import { startReceiver } from "../support/receiver.js";

// Issue: "one line per call, inbound and outbound: time, direction, operation (or path), status, response.code, the
// rule that answered (or built-in), duration, call id; for pushes the pharmacy and attempt. Warnings for failed
// pushes, refused scenario reloads, journal-file trouble." JSON: one object per line; pretty: a line for people.

const cashew = () => example<AllergyIntolerance>("allergyintolerance-example.json");

/** Rules added at run time: a scripted 503 and a connection reset, chosen by a header. */
const RULES = `
rules:
  - name: allergy-down
    when: { operation: add-allergy, headers: { X-Case: down } }
    respond:
      status: 503
      outcome: { diagnostics: "The allergy service is down; retry in 10 seconds." }
  - name: reset-allergy
    when: { operation: add-allergy, headers: { X-Case: reset } }
    respond: { fault: connection-reset }
`;

const LICENCE = "PH-LOG-0001";
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A POST that may meet a scripted connection reset: in-process, that rejects as fetch would. */
async function send(app: Hono, text: string, headers: Record<string, string> = {}) {
  try {
    const res = await app.request(STANDARD, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: text,
    });
    // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary FHIR JSON
    const body: any = await res.json();
    return { status: res.status, headers: res.headers, body };
  } catch (error) {
    if (error instanceof SimulatedNetworkFault) return null;
    throw error;
  }
}

/** The calls of the issue's list, sent to one sandbox; returns the answers the client saw. */
async function sendTheCalls(sandbox: SandboxApp) {
  const { app } = sandbox;
  expect(
    (await admin(app, "POST", "/scenarios", { body: RULES, headers: { "content-type": "text/yaml" } })).status,
  ).toBe(201);
  const ok = await send(app, envelope(messageBundle("add-allergy", [cashew()])));
  const refusal = await send(app, envelope(messageBundle("update-allergy", [{ ...cashew(), id: "no-such-allergy" }])));
  const notProcessed = await send(app, "this is not JSON");
  const ruled = await send(app, envelope(messageBundle("add-allergy", [cashew()])), { "X-Case": "down" });
  const fault = await send(app, envelope(messageBundle("add-allergy", [cashew()])), { "X-Case": "reset" });
  return { ok, refusal, notProcessed, ruled, fault };
}

/** A pharmacy whose endpoint answers 503 to every push, subscribed; an order then fails to reach it. */
async function failedPush(settings: Partial<LogSettings>) {
  const receiver = await startReceiver(() => ({ status: 503 }));
  cleanups.push(() => receiver.close());
  const logged = loggedSandbox(settings, { pushAttempts: 2 });
  cleanups.push(() => logged.sandbox.close());
  expect((await subscribe(logged.sandbox.app, LICENCE, receiver.url)).status).toBe(200);
  const order = await admin(logged.sandbox.app, "POST", "/orders", { body: {} });
  expect(order.status).toBe(201);
  return { ...logged, receiver, orderId: order.body.id as string };
}

function start(settings: Partial<LogSettings>) {
  const logged = loggedSandbox(settings);
  cleanups.push(() => logged.sandbox.close());
  return logged;
}

describe("the request log as JSON: one object per call", () => {
  it("an ok call, a refusal, a message not processed, a rule's answer and a fault", async () => {
    const { sandbox, log, out, err } = start({ format: "json" });
    const a = await sendTheCalls(sandbox);
    log.flush();
    // The rules added first are a line too (test/log/changes.test.ts).
    const [added, ok, refusal, notProcessed, ruled, fault, ...rest] = out.events();
    expect(rest).toEqual([]);
    expect(added).toMatchObject({ level: "info", event: "rules-added", rules: 2 });
    expect(err.text).toBe("");

    const inbound = { level: "info", event: "call", direction: "inbound", method: "POST", path: STANDARD };
    expect(ok).toMatchObject({
      ...inbound,
      callId: a.ok?.headers.get("x-sandbox-call-id"),
      operation: "add-allergy",
      status: 200,
      responseCode: "ok",
      rule: null,
      answeredBy: "built-in",
      messageId: expect.any(String),
    });
    expect(ok.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(ok.durationMs).toBeGreaterThan(0);
    expect(ok).not.toHaveProperty("issue");

    // Processed and refused: 200 with response.code fatal-error, and the OperationOutcome's first diagnostics.
    const refusalOutcome = a.refusal?.body.entry.find(
      (e: { resource: { resourceType: string } }) => e.resource.resourceType === "OperationOutcome",
    ).resource;
    expect(refusal).toMatchObject({
      ...inbound,
      callId: a.refusal?.headers.get("x-sandbox-call-id"),
      operation: "update-allergy",
      status: 200,
      responseCode: "fatal-error",
      answeredBy: "built-in",
      issue: refusalOutcome.issue[0].diagnostics,
    });

    // Not processed: a bare OperationOutcome, no operation, no response code.
    expect(notProcessed).toMatchObject({
      ...inbound,
      callId: a.notProcessed?.headers.get("x-sandbox-call-id"),
      operation: null,
      status: 400,
      responseCode: null,
      answeredBy: "built-in",
      issue: a.notProcessed?.body.issue[0].diagnostics,
    });

    // A scripted 5xx is a transient-error response message, answered by the rule.
    expect(ruled).toMatchObject({
      ...inbound,
      callId: a.ruled?.headers.get("x-sandbox-call-id"),
      operation: "add-allergy",
      status: 503,
      responseCode: "transient-error",
      rule: "allergy-down",
      answeredBy: "allergy-down",
      issue: "The allergy service is down; retry in 10 seconds.",
    });

    // A connection reset sends nothing: no status, the fault and the rule named.
    expect(a.fault).toBeNull();
    expect(fault).toMatchObject({
      ...inbound,
      operation: "add-allergy",
      status: null,
      responseCode: null,
      rule: "reset-allergy",
      fault: "connection-reset",
    });
    // Said once: not again as an error ("scripted fault: connection-reset").
    expect(fault).not.toHaveProperty("error");
    expect(Number(fault.callId)).toBe(Number(ruled.callId) + 1);
  });

  it("a failed push: a line per attempt with the pharmacy and the attempt, then a warning", async () => {
    const { log, out, err, receiver, orderId } = await failedPush({ format: "json" });
    await err.waitFor(/push-failed/);
    log.flush();
    const pushes = out.events().filter((e) => e.direction === "outbound");
    expect(pushes).toEqual([
      expect.objectContaining({
        event: "call",
        operation: "order-fulfillment-request",
        status: 503,
        pharmacy: LICENCE,
        target: receiver.url,
        attempt: 1,
      }),
      expect.objectContaining({ operation: "order-fulfillment-request", status: 503, pharmacy: LICENCE, attempt: 2 }),
    ]);
    expect(pushes[0]).not.toHaveProperty("answeredBy");
    const [warning, ...others] = err.events();
    expect(others).toEqual([]);
    expect(warning).toMatchObject({
      level: "warn",
      event: "push-failed",
      order: orderId,
      pharmacy: LICENCE,
      push: "order-fulfillment-request",
      target: receiver.url,
      attempts: 2,
      status: 503,
    });
    expect(warning.msg).toBe(
      `order ${orderId}: order-fulfillment-request to pharmacy ${LICENCE} (${receiver.url}) failed after 2 attempts: answered 503`,
    );
  });
});

describe("the request log for people: a line per call", () => {
  const TIME = String.raw`\d\d:\d\d:\d\d\.\d{3}`;
  const DURATION = String.raw`\d+(\.\d)? ms`;

  it("an ok call, a refusal, a message not processed, a rule's answer and a fault", async () => {
    const { sandbox, log, out } = start({ format: "pretty", colours: false });
    const a = await sendTheCalls(sandbox);
    log.flush();
    const id = (reply: { headers: Headers } | null) => reply?.headers.get("x-sandbox-call-id");
    const [added, ...lines] = out.lines();
    expect(added).toMatch(new RegExp(`^${TIME} INFO 2 rules added to workspace default \\(runtime-1\\)$`));
    expect(lines).toHaveLength(5);
    expect(lines[0]).toMatch(new RegExp(`^${TIME} IN  add-allergy +200 ok +built-in +${DURATION} #${id(a.ok)}$`));
    expect(lines[1]).toMatch(
      new RegExp(`^${TIME} IN  update-allergy +200 fatal-error +built-in +${DURATION} #${id(a.refusal)} +— \\S`),
    );
    expect(lines[2]).toMatch(
      new RegExp(
        `^${TIME} IN  POST /uae-fhir/r4/\\$process-m… 400 - +built-in +${DURATION} #${id(a.notProcessed)} +— \\S`,
      ),
    );
    expect(lines[3]).toMatch(
      new RegExp(
        `^${TIME} IN  add-allergy +503 transient-error +allergy-down +${DURATION} #${id(a.ruled)} +— The allergy service is down; retry in 10 seconds\\.$`,
      ),
    );
    expect(lines[4]).toMatch(
      new RegExp(
        `^${TIME} IN  add-allergy +--- - +reset-allergy +${DURATION} #\\d+ +scripted fault: connection-reset$`,
      ),
    );
  });

  it("a failed push: OUT lines with the pharmacy and attempt, and a WARN line on the error stream", async () => {
    const { log, out, err, receiver, orderId } = await failedPush({ format: "pretty", colours: false });
    await err.waitFor(/WARN/);
    log.flush();
    const pushes = out.lines().filter((l) => l.includes(" OUT "));
    expect(pushes).toHaveLength(2);
    expect(pushes[0]).toMatch(
      new RegExp(`^${TIME} OUT order-fulfillment-request +503 - +${LICENCE} attempt 1 +${DURATION} #\\d+$`),
    );
    expect(pushes[1]).toMatch(new RegExp(` ${LICENCE} attempt 2 `));
    expect(err.lines()).toEqual([
      expect.stringMatching(
        new RegExp(
          `^${TIME} WARN order ${orderId}: order-fulfillment-request to pharmacy ${LICENCE} \\(${receiver.url}\\) failed after 2 attempts: answered 503$`,
        ),
      ),
    ]);
  });

  it("is coloured only when asked (a terminal)", async () => {
    const plain = start({ format: "pretty", colours: false });
    await post(plain.sandbox.app, messageBundle("add-allergy", [cashew()]));
    plain.log.flush();
    expect(plain.out.text).not.toContain("\u001b[");

    const coloured = start({ format: "pretty", colours: true });
    await post(coloured.sandbox.app, messageBundle("add-allergy", [cashew()]));
    coloured.log.flush();
    // The status of an ok answer in green (ANSI 32).
    expect(coloured.out.text).toContain("\u001b[32m200\u001b[39m");
  });
});

describe("levels and the other warnings", () => {
  it("at level warn there is no line per call, but a refused reload is still said", async () => {
    const dir = mkdtempSync(join(tmpdir(), "log-reload-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, "rules.yaml"), "rules: []\n");
    const { sandbox, log, out, err } = loggedSandbox({ level: "warn" }, { scenarios: dir });
    cleanups.push(() => sandbox.close());
    await post(sandbox.app, messageBundle("add-allergy", [cashew()]));
    writeFileSync(join(dir, "rules.yaml"), "rules:\n  - when: { operation: add-allergy }\n");
    expect((await admin(sandbox.app, "POST", "/scenarios/reload")).status).toBe(400);
    log.flush();
    expect(out.text).toBe("");
    const [refused, ...others] = err.events();
    expect(others).toEqual([]);
    expect(refused).toMatchObject({ level: "warn", event: "scenarios-refused", source: dir });
    expect(refused.problems).toEqual([expect.stringMatching(/rules\.yaml:2:/)]);
    expect(refused.msg).toMatch(/^scenarios not reloaded, the previous set keeps serving:\n.*rules\.yaml:2:/);
  });

  it("journal-file trouble is a warning naming the file", async () => {
    const { sandbox, err } = loggedSandbox({}, { journalFile: "/dev/full" });
    cleanups.push(() => sandbox.close());
    await post(sandbox.app, messageBundle("add-allergy", [cashew()]));
    const [warning] = err.events();
    expect(warning).toMatchObject({ level: "warn", event: "journal-file", path: "/dev/full" });
    expect(warning.msg).toMatch(/^journal file \/dev\/full: could not write call 1 \(ENOSPC/);
  });

  it("a sandbox bug is an error with the stack", async () => {
    const { sandbox, log, err } = loggedSandbox(
      {},
      {},
      {
        handlers: {
          "add-allergy": () => {
            throw new Error("a bug in a handler");
          },
        },
      },
    );
    cleanups.push(() => sandbox.close());
    expect((await post(sandbox.app, messageBundle("add-allergy", [cashew()]))).status).toBe(500);
    log.flush();
    const [bug] = err.events();
    expect(bug).toMatchObject({ level: "error", msg: `unhandled error on POST ${STANDARD}` });
    expect(bug.err).toMatchObject({ type: "Error", message: "a bug in a handler" });
    expect(bug.err.stack).toContain("a bug in a handler");
  });

  it("admin API requests are logged at debug only", async () => {
    const info = start({ level: "info" });
    await admin(info.sandbox.app, "GET", "/health");
    info.log.flush();
    expect(info.out.text).toBe("");

    const debug = start({ level: "debug" });
    await admin(debug.sandbox.app, "GET", "/health");
    debug.log.flush();
    expect(debug.out.events()).toEqual([
      expect.objectContaining({ level: "debug", event: "admin", method: "GET", path: "/__admin/health", status: 200 }),
    ]);
  });

  it("an event holding U+2028 or U+2029 stays one line for readers that end lines there (Node's readline)", async () => {
    const { sandbox, log, out } = start({ format: "json" });
    const id = "line\u2028paragraph\u2029end";
    sandbox.logger.info(`a message with ${id}`);
    await send(sandbox.app, envelope(messageBundle("add-allergy", [cashew()], { id })));
    log.flush();
    // Node's readline splits at \n, \r, U+2028 and U+2029: as many lines as events.
    const lines = out.text.trimEnd().split(/\r\n|\n|\r|\u2028|\u2029/);
    expect(lines).toHaveLength(2);
    const [message, call] = lines.map((l) => JSON.parse(l));
    expect(message.msg).toBe(`a message with ${id}`);
    expect(call).toMatchObject({ event: "call", messageId: id });
  });

  it("output held until released comes out in order", async () => {
    const { sandbox, log, out, err } = start({ format: "json" });
    log.hold();
    sandbox.logger.info("first");
    sandbox.logger.warn("second");
    sandbox.logger.info("third");
    expect(`${out.text}${err.text}`).toBe("");
    log.release();
    expect(out.events().map((e) => e.msg)).toEqual(["first", "third"]);
    expect(err.events().map((e) => e.msg)).toEqual(["second"]);
  });
});
