import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import {
  authFingerprint,
  contentFingerprint,
  retryAfterMs,
  SessionCallWatch,
} from "../../src/conformance/call-watch.js";
import { senderKinds } from "../../src/conformance/kinds/sender.js";
import type { Plan } from "../../src/conformance/plan-schema.js";
import { Session } from "../../src/conformance/session.js";
import type { SessionReport } from "../../src/conformance/session-report.js";
import type { ConformanceSandbox, StepContext, StepRun, StepVerdict } from "../../src/conformance/step-context.js";
import { allergyMessage, envelope, post, STANDARD } from "../support/messages.js";

/**
 * The runner's rules, with fake kinds: steps in order, a failed required step ends its test (the rest skipped), a
 * step that is not required warns, a kind without an implementation fails, a stop ends the step running.
 */

const apps: Array<ReturnType<typeof createApp>> = [];
afterEach(() => {
  for (const app of apps.splice(0)) app.close();
});

function sandbox(): { app: ReturnType<typeof createApp>; parts: ConformanceSandbox } {
  const app = createApp({ scenarios: undefined });
  apps.push(app);
  return {
    app,
    parts: {
      now: () => new Date(),
      newId: () => crypto.randomUUID(),
      publicUrl: () => "http://127.0.0.1:1",
      messageUrl: () => "http://127.0.0.1:1/uae-fhir/r4/$process-message",
      operationIds: () => ["add-allergy", "add-history"],
      deliver: async () => {
        throw new Error("no pushes here");
      },
    },
  };
}

/** A step kind whose verdict the step's own `expectNewId.within` names, so that one fake serves every step. */
const verdicts: Record<string, StepVerdict["status"]> = {};
const fake: StepRun = async (_ctx, _spec, step) => ({
  status: verdicts[step.id] ?? "pass",
  message: `${step.id} ${verdicts[step.id] ?? "pass"}`,
  evidence: [],
});

const step = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  title: `step ${id}`,
  expectNewId: {},
  ...extra,
});

function plan(tests: Plan["tests"]): Plan {
  return {
    id: "fake",
    title: "Fake",
    version: "1",
    role: "sender",
    rules: { r: { source: "host", ref: "https://example.org/r", text: "a rule" } },
    tests,
  };
}

function run(p: Plan, kinds: Record<string, StepRun>, timeScale = 1) {
  const { app, parts } = sandbox();
  const session = new Session({
    facts: { id: "s1", role: "sender", operations: [], pharmacyUrl: null, pharmacyLicence: null, timeScale },
    plan: { plan: p, source: "test" },
    workspace: app.workspace,
    sandbox: parts,
    kinds,
  });
  void session.run();
  return session;
}

const statuses = (report: SessionReport) =>
  Object.fromEntries(report.tests.map((t) => [t.id, [t.status, ...t.steps.map((s) => `${s.id}:${s.status}`)]]));

describe("the session runner", () => {
  it("runs tests and steps in order: a failed required step ends its test, a step not required warns", async () => {
    Object.assign(verdicts, { b2: "fail", c1: "fail", d1: "skip", d2: "skip" });
    const p = plan([
      { id: "a", title: "A", rule: "r", required: true, steps: [step("a1"), step("a2")] },
      { id: "b", title: "B", rule: "r", required: true, steps: [step("b1"), step("b2"), step("b3")] },
      { id: "c", title: "C", rule: "r", required: true, steps: [step("c1", { required: false }), step("c2")] },
      { id: "d", title: "D", rule: "r", required: true, steps: [step("d1"), step("d2")] },
    ]);
    const report = await run(p, { expectNewId: fake }).done;
    expect(statuses(report)).toEqual({
      a: ["pass", "a1:pass", "a2:pass"],
      b: ["fail", "b1:pass", "b2:fail", "b3:skip"],
      c: ["warning", "c1:warning", "c2:pass"],
      d: ["skip", "d1:skip", "d2:skip"],
    });
    expect(report.tests[1]?.steps[2]?.message).toBe("not run: step b2 failed");
    expect(report.state).toBe("failed");
    expect(report.summary).toEqual({ tests: 4, passed: 1, failed: 1, warnings: 1, skipped: 1 });
    expect(report.coverage.rules).toEqual({ checked: ["r"], notChecked: [] });
  });

  it("a test that is not required only warns, and the session passes", async () => {
    Object.assign(verdicts, { e1: "fail" });
    const p = plan([{ id: "e", title: "E", rule: "r", required: false, steps: [step("e1"), step("e2")] }]);
    const report = await run(p, { expectNewId: fake }).done;
    expect(statuses(report)).toEqual({ e: ["warning", "e1:warning", "e2:pass"] });
    expect(report.state).toBe("passed");
  });

  it("fails a step whose kind has no implementation, never passes it", async () => {
    const p = plan([{ id: "f", title: "F", rule: "r", required: true, steps: [step("f1"), step("f2")] }]);
    const report = await run(p, {}).done;
    expect(statuses(report)).toEqual({ f: ["fail", "f1:fail", "f2:skip"] });
    expect(report.tests[0]?.steps[0]?.message).toMatch(/^not implemented: .*expectNewId/);
  });

  it("scales every wait by the time scale, and caps it at 10 minutes", async () => {
    const seen: number[] = [];
    const measuring: StepRun = async (ctx: StepContext) => {
      seen.push(ctx.ms("2s", 0), ctx.ms(undefined, 60_000), ctx.ms("10m", 0));
      return { status: "pass", message: "", evidence: [] };
    };
    await run(
      plan([{ id: "g", title: "G", rule: "r", required: true, steps: [step("g1")] }]),
      { expectNewId: measuring },
      2,
    ).done;
    expect(seen).toEqual([4000, 120_000, 600_000]);
  });

  it("stop ends the step running as skipped, leaves the rest pending, and tells the listeners", async () => {
    const waiting: StepRun = (ctx) => new Promise<StepVerdict>(() => void ctx.signal);
    const p = plan([
      { id: "h", title: "H", rule: "r", required: true, steps: [step("h1"), step("h2")] },
      { id: "i", title: "I", rule: "r", required: true, steps: [step("i1")] },
    ]);
    const session = run(p, { expectNewId: waiting });
    const updates: SessionReport[] = [];
    session.onUpdate((r) => updates.push(r));
    await new Promise((resolve) => setImmediate(resolve));
    expect(session.report().tests[0]?.steps[0]?.status).toBe("running");
    session.stop("stopped by the test");
    const report = await session.done;
    expect(report.state).toBe("stopped");
    expect(report.stopReason).toBe("stopped by the test");
    expect(statuses(report)).toEqual({ h: ["skip", "h1:skip", "h2:pending"], i: ["pending", "i1:pending"] });
    expect(updates.at(-1)?.state).toBe("stopped");
  });
});

describe("a sender session through the admin API, in-process", () => {
  it("answers the declared operation's first message ok, the next one 503, and removes its rule when stopped", async () => {
    const { app } = sandbox();
    const started = await app.app.request("/__admin/conformance/sessions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ role: "sender", operations: ["add-allergy"], timeScale: 0.5 }),
    });
    expect(started.status).toBe(201);
    const report = (await started.json()) as SessionReport;
    expect(started.headers.get("location")).toBe(`/__admin/conformance/sessions/${report.id}`);
    expect(report.state).toBe("running");

    expect((await post(app.app, allergyMessage())).status).toBe(200);
    // The first test passed: the second one's rule answers the next message.
    const read = async () =>
      (await (await app.app.request(`/__admin/conformance/sessions/${report.id}`)).json()) as SessionReport;
    for (let i = 0; i < 100 && (await read()).tests[1]?.steps[0]?.status !== "running"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect((await read()).tests[0]?.status).toBe("pass");
    expect((await post(app.app, allergyMessage())).status).toBe(503);

    const stopped = await app.app.request(`/__admin/conformance/sessions/${report.id}`, { method: "DELETE" });
    expect(stopped.status).toBe(200);
    expect(((await stopped.json()) as SessionReport).state).toBe("stopped");
    const scenarios = (await (await app.app.request("/__admin/scenarios")).json()) as {
      rules: Array<{ source: string }>;
    };
    expect(scenarios.rules.filter((r) => r.source.startsWith("runtime-"))).toEqual([]);
  });
});

describe("what the call watch takes from a call before the journal redacts it", () => {
  const bundle = (headerId: string, text: string, bundleId = crypto.randomUUID()) =>
    JSON.stringify({
      resourceType: "Bundle",
      id: bundleId,
      type: "message",
      timestamp: new Date().toISOString(),
      entry: [
        {
          fullUrl: `urn:uuid:${headerId}`,
          resource: { resourceType: "MessageHeader", id: headerId, eventCoding: { code: "add-allergy" } },
        },
        { fullUrl: "urn:uuid:1", resource: { resourceType: "AllergyIntolerance", code: { text } } },
      ],
    });

  it("a content fingerprint that leaves out the ids and timestamp a resend or a new id changes, and nothing else", () => {
    const a = contentFingerprint(bundle("id-1", "sesame"));
    expect(a).not.toBeNull();
    expect(contentFingerprint(bundle("id-2", "sesame"))).toBe(a);
    expect(contentFingerprint(JSON.stringify({ content: bundle("id-3", "sesame") }))).toBe(a);
    expect(contentFingerprint(bundle("id-1", "peanut"))).not.toBe(a);
    expect(contentFingerprint("not json")).toBeNull();
    expect(contentFingerprint("")).toBeNull();
  });

  it("Retry-After as seconds or an HTTP date, and an Authorization fingerprint", () => {
    const end = Date.parse("2026-01-01T00:00:00Z");
    expect(retryAfterMs("2", end)).toBe(2000);
    expect(retryAfterMs("Thu, 01 Jan 2026 00:00:05 GMT", end)).toBe(5000);
    expect(retryAfterMs("soon", end)).toBeNull();
    expect(retryAfterMs(undefined, end)).toBeNull();
    expect(authFingerprint(undefined)).toBeNull();
    expect(authFingerprint("Bearer a")).toMatch(/^[0-9a-f]{16}$/);
    expect(authFingerprint("Bearer a")).not.toBe(authFingerprint("Bearer b"));
  });

  it("keeps the last calls of a long session, with positions that go on counting", async () => {
    const { app } = sandbox();
    const watch = new SessionCallWatch(app.workspace, 3);
    for (let i = 0; i < 5; i++) await post(app.app, allergyMessage());
    expect(watch.position).toBe(5);
    expect(watch.all()).toHaveLength(3);
    const fifth = await watch.next(() => true, 0, 4);
    expect(fifth?.record.id).toBe(watch.all()[2]?.record.id);
    expect(await watch.next(() => true, 0, 5)).toBeUndefined();
    watch.close();
    // Closed: it hears no more calls, and lets go of those it kept.
    await post(app.app, allergyMessage());
    expect(watch.position).toBe(5);
    expect(watch.all()).toEqual([]);
  });

  it("keeps calls within a byte budget too (the journal's size of each), the newest whatever its size", async () => {
    const { app } = sandbox();
    const watch = new SessionCallWatch(app.workspace, 1_000, 1);
    for (let i = 0; i < 3; i++) await post(app.app, allergyMessage());
    expect(watch.position).toBe(3);
    expect(watch.all()).toHaveLength(1);
    expect(watch.all()[0]?.record.id).toBe(app.workspace.journal.list().at(-1)?.id);
    // What the forgotten calls carried still counts for the session's coverage.
    expect([...watch.operationsSeen()]).toEqual(["add-allergy"]);
    watch.close();
  });
});

describe("the sandbox closing", () => {
  it("stops every running session and removes its rules at once", async () => {
    const { app } = sandbox();
    const started = await app.app.request("/__admin/conformance/sessions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ role: "sender" }),
    });
    const { id } = (await started.json()) as SessionReport;
    await post(app.app, allergyMessage());
    const session = app.conformance.get("default", id);
    for (let i = 0; i < 100 && session?.report().tests[1]?.steps[0]?.status !== "running"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(app.workspace.scenarios.runtimeRules).toBe(1);
    app.close();
    expect(app.workspace.scenarios.runtimeRules).toBe(0);
    const report = await session?.done;
    expect(report?.state).toBe("stopped");
    expect(report?.stopReason).toBe("the sandbox closed");
  });
});

describe("the message path without a session", () => {
  it("pays nothing: a workspace's calls are heard only while a session runs in it", async () => {
    const { app } = sandbox();
    const { events } = app.workspace;
    const heard = () => [events.listenerCount("call:completed"), events.listenerCount("call:recorded")];
    const idle = heard();
    const started = await app.app.request("/__admin/conformance/sessions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ role: "sender" }),
    });
    const { id } = (await started.json()) as SessionReport;
    expect(heard()).toEqual([(idle[0] ?? 0) + 1, (idle[1] ?? 0) + 1]);
    app.conformance.get("default", id)?.stop("done with it");
    expect(heard()).toEqual(idle);
  });
});

describe("answerNext", () => {
  it("takes a message its rule answered in time whose call ends later (a timeout held until the client gives up)", async () => {
    const { app, parts } = sandbox();
    const p: Plan = plan([
      {
        id: "t",
        title: "T",
        rule: "r",
        required: true,
        steps: [{ id: "t1", title: "no answer", answerNext: { respond: { fault: "timeout" }, within: "100ms" } }],
      },
    ]);
    const session = new Session({
      facts: { id: "s2", role: "sender", operations: [], pharmacyUrl: null, pharmacyLicence: null, timeScale: 1 },
      plan: { plan: p, source: "test" },
      workspace: app.workspace,
      sandbox: parts,
      kinds: senderKinds,
    });
    void session.run();
    // The client gives up after 400 ms, well after the step's 100 ms: its message still came in time.
    const gaveUp = Promise.resolve(
      app.app.request(STANDARD, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: envelope(allergyMessage()),
        signal: AbortSignal.timeout(400),
      }),
    ).catch(() => "gave up");
    const report = await session.done;
    await gaveUp;
    expect(report.tests[0]?.steps[0]?.status).toBe("pass");
    expect(report.tests[0]?.steps[0]?.message).toMatch(/^answered add-allergy \S+ with timeout \(no answer\)$/);
  });
});

describe("the conformance admin API behind --admin-token", () => {
  it("needs the token, as every admin route does", async () => {
    const app = createApp({ adminToken: "conformance-admin-token" });
    apps.push(app);
    const request = (headers: Record<string, string>) =>
      app.app.request("/__admin/conformance/sessions", {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ role: "sender" }),
      });
    expect((await request({})).status).toBe(401);
    expect((await app.app.request("/__admin/conformance/plans")).status).toBe(401);
    const started = await request({ authorization: "Bearer conformance-admin-token" });
    expect(started.status).toBe(201);
  });
});

describe("a session's rules", () => {
  it("are no change by hand: the sandbox announces neither their adding nor their removal", async () => {
    const { app } = sandbox();
    const changes: string[] = [];
    app.sandboxEvents.on("sandbox:changed", (c) => changes.push(c.change));
    const started = await app.app.request("/__admin/conformance/sessions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ role: "sender" }),
    });
    const { id } = (await started.json()) as SessionReport;
    await post(app.app, allergyMessage());
    const session = app.conformance.get("default", id);
    for (let i = 0; i < 100 && session?.report().tests[1]?.steps[0]?.status !== "running"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(app.workspace.scenarios.runtimeRules).toBe(1);
    session?.stop("done");
    expect(app.workspace.scenarios.runtimeRules).toBe(0);
    expect(changes).toEqual([]);
  });
});
