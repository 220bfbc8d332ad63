import type { EventEmitter } from "node:events";
import type { AllergyIntolerance, Patient } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import type { SandboxEvents } from "../../src/events.js";
import { example, messageBundle, post, STANDARD } from "../support/messages.js";
import { admin, listCalls } from "./admin-client.js";

type App = ReturnType<typeof createApp>["app"];

const cashew = () => example<AllergyIntolerance>("allergyintolerance-example.json");
const fish = () => example<AllergyIntolerance>("allergyintolerance-fishallergy.json");
const patient = () => example<Patient>("patient-example.json");

const CASHEW = "Bundle.entry.resource.ofType(AllergyIntolerance).code.coding.where(code = '227493005').exists()";

/** A deadline far beyond the test's own timeout: reaching it would fail the test, so answering proves no timer ran out. */
const LONG = 60_000;

const wait = (app: App, query: unknown) => admin(app, "POST", "/calls/wait", { body: query });

/** Resolves when a long-poll has subscribed to recorded calls (the journal itself only listens to call:completed). */
function waiterSubscribed(events: SandboxEvents): Promise<void> {
  const emitter = events as unknown as EventEmitter;
  return new Promise((resolve) => {
    const onListener = (name: string | symbol) => {
      if (name !== "call:recorded") return;
      emitter.off("newListener", onListener);
      resolve();
    };
    emitter.on("newListener", onListener);
  });
}

describe("POST /__admin/calls/wait (CONTRACT §9)", () => {
  it("answers at once when the expectation already holds", async () => {
    const { app, events } = createApp();
    await post(app, messageBundle("add-allergy", [cashew()], { id: "msg-before" }));

    const reply = await wait(app, { operation: "add-allergy", timeoutMs: LONG });

    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ ok: true, matched: 1, nearMisses: [] });
    expect(events.listenerCount("call:recorded")).toBe(0);
  });

  it("answers as soon as a matching call arrives, not before", async () => {
    const { app, events } = createApp();
    const subscribed = waiterSubscribed(events);
    const pending = wait(app, { operation: "add-allergy", where: CASHEW, timeoutMs: LONG });
    await subscribed;

    // Calls that do not match leave the long-poll waiting.
    await post(app, messageBundle("view-patient-profile", [patient()]));
    await post(app, messageBundle("add-allergy", [fish()]));
    expect(events.listenerCount("call:recorded")).toBe(1);

    const [reply, sent] = await Promise.all([
      pending,
      post(app, messageBundle("add-allergy", [cashew()], { id: "msg-cashew" })),
    ]);

    expect(sent.status).toBe(200);
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ ok: true, matched: 1, nearMisses: [] });
    const calls = await listCalls(app);
    expect(reply.body.callIds).toEqual([calls.find((c) => c.messageId === "msg-cashew").id]);
    expect(events.listenerCount("call:recorded")).toBe(0);
  });

  it("waits for a count to be reached", async () => {
    const { app, events } = createApp();
    await post(app, messageBundle("add-allergy", [cashew()]));
    const subscribed = waiterSubscribed(events);
    const pending = wait(app, { operation: "add-allergy", atLeast: 2, timeoutMs: LONG });
    await subscribed;

    const [reply] = await Promise.all([pending, post(app, messageBundle("add-allergy", [cashew()]))]);

    expect(reply.body).toMatchObject({ ok: true, matched: 2 });
  });

  it("answers ok:false with near misses at the timeout", async () => {
    const { app, events } = createApp();
    await post(app, messageBundle("add-allergy", [fish()], { id: "msg-fish" }));

    const reply = await wait(app, { operation: "add-allergy", where: CASHEW, timeoutMs: 50 });

    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ ok: false, matched: 0 });
    const [fishCall] = await listCalls(app);
    expect(reply.body.nearMisses).toEqual([
      expect.objectContaining({
        callId: fishCall.id,
        operation: "add-allergy",
        reasons: [expect.stringMatching(/where/)],
      }),
    ]);
    expect(events.listenerCount("call:recorded")).toBe(0);
  });

  it("stops waiting when the client goes away", async () => {
    const { app, events } = createApp();
    const controller = new AbortController();
    const subscribed = waiterSubscribed(events);
    const pending = Promise.resolve(
      app.request("/__admin/calls/wait", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ operation: "add-allergy", timeoutMs: LONG }),
        signal: controller.signal,
      }),
    );
    await subscribed;

    controller.abort();

    // No waiter is left re-verifying the journal on every call until its deadline.
    expect(events.listenerCount("call:recorded")).toBe(0);
    await pending.catch(() => undefined);
  });

  it.each([
    ["an invalid FHIRPath", { operation: "add-allergy", where: "((", timeoutMs: 50 }],
    ["count with atLeast", { operation: "add-allergy", count: 1, atLeast: 1, timeoutMs: 50 }],
    ["a negative timeoutMs", { operation: "add-allergy", timeoutMs: -1 }],
    ["a timeoutMs that is not a number", { operation: "add-allergy", timeoutMs: "soon" }],
    ["an unknown key", { operation: "add-allergy", timeout: 50 }],
    ["a body that is not JSON", "not json"],
  ])("answers 400 at once for %s", async (_, query) => {
    const { app, events } = createApp();

    const reply = await wait(app, query);

    expect(reply.status).toBe(400);
    expect(reply.body.resourceType).toBe("OperationOutcome");
    expect(events.listenerCount("call:recorded")).toBe(0);
  });
});

describe("POST /__admin/calls/wait in a workspace (CONTRACT §13)", () => {
  it("is not answered by another workspace's calls, and is by its own", async () => {
    const { app, workspaces } = createApp();
    // Made first (a use of the workspace), so that its waiter can be watched.
    await admin(app, "GET", "/calls", { prefix: "/w/team-a" });
    const events = workspaces.find("team-a")?.events as SandboxEvents;
    const subscribed = waiterSubscribed(events);
    const pending = admin(app, "POST", "/calls/wait", {
      prefix: "/w/team-a",
      body: { operation: "add-allergy", timeoutMs: LONG },
    });
    await subscribed;

    await post(app, messageBundle("add-allergy", [cashew()]), { headers: { "X-Sandbox-Workspace": "team-b" } });
    // Recording is synchronous: had team-b's call counted, the waiter would have finished and left.
    expect(events.listenerCount("call:recorded")).toBe(1);

    await post(app, messageBundle("add-allergy", [fish()]), { path: `/w/team-a${STANDARD}` });
    expect((await pending).body).toMatchObject({ ok: true, matched: 1 });
    expect(events.listenerCount("call:recorded")).toBe(0);
  });
});
