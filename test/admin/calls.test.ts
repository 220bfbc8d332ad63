import type { AllergyIntolerance, Bundle, Patient } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { ALTERNATE, example, messageBundle, post, responseHeader, STANDARD } from "../support/messages.js";
import { admin, listCalls, manualClock } from "./admin-client.js";

const allergy = () => example<AllergyIntolerance>("allergyintolerance-example.json");
const patient = () => example<Patient>("patient-example.json");

describe("GET /__admin/health (CONTRACT §9)", () => {
  it.each([
    ["without an admin token configured", undefined],
    ["with an admin token configured, sent no token", "s3cret"],
  ])("answers 200 status ok %s", async (_, adminToken) => {
    const { app } = createApp({ adminToken });

    const reply = await admin(app, "GET", "/health");

    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ status: "ok" });
  });
});

describe("the call journal records every inbound call (CONTRACT §9)", () => {
  it("records a valid message with its operation, ids, request, response and timing", async () => {
    const clock = manualClock("2026-01-31T10:00:00.000Z");
    const { app } = createApp({}, { now: clock.now });
    const request = messageBundle("add-allergy", [allergy()], { id: "msg-rec-1" });

    const reply = await post(app, request, { headers: { "x-correlation": "abc-123" } });

    expect(reply.status).toBe(200);
    const [call, ...rest] = await listCalls(app);
    expect(rest).toEqual([]);
    expect(call).toMatchObject({
      direction: "inbound",
      operation: "add-allergy",
      messageId: "msg-rec-1",
      at: "2026-01-31T10:00:00.000Z",
      request: { method: "POST", path: STANDARD },
      response: { status: 200 },
    });
    expect(typeof call.id).toBe("string");
    expect(call.durationMs).toBeGreaterThanOrEqual(0);
    expect(call.request.headers).toMatchObject({ "content-type": "application/json", "x-correlation": "abc-123" });
    // The request body is the envelope as sent; the response body the response message as answered.
    expect(JSON.parse(call.request.body.content)).toEqual(request);
    expect(call.response.body).toEqual(reply.body);
    expect(responseHeader(call.response.body as Bundle).response?.identifier).toBe("msg-rec-1");
  });

  it("gives each call its own string id and keeps them oldest first", async () => {
    const { app } = createApp();
    const sent = ["msg-a", "msg-b", "msg-c"];
    for (const id of sent) await post(app, messageBundle("add-allergy", [allergy()], { id }));

    const calls = await listCalls(app);

    expect(calls.map((c) => c.messageId)).toEqual(sent);
    const ids = calls.map((c) => c.id);
    expect(ids.every((id) => typeof id === "string" && id !== "")).toBe(true);
    expect(new Set(ids).size).toBe(3);
    const times = calls.map((c) => Date.parse(c.at));
    expect(times.every((t) => !Number.isNaN(t))).toBe(true);
    expect([...times].sort((a, b) => a - b)).toEqual(times);
  });

  // Calls the sandbox refused before (or without) telling the operation are journaled too.
  it.each([
    {
      name: "a body that is not JSON",
      send: (app: ReturnType<typeof createApp>["app"]) => post(app, "this is not json"),
      status: 400,
      method: "POST",
      path: STANDARD,
      requestBody: "this is not json",
      operation: null,
      messageId: null,
    },
    {
      name: "an unknown event (the message id is still read)",
      send: (app: ReturnType<typeof createApp>["app"]) =>
        post(app, messageBundle("no-such-event", [patient()], { id: "msg-unknown-event" })),
      status: 400,
      method: "POST",
      path: STANDARD,
      operation: null,
      messageId: "msg-unknown-event",
    },
    {
      name: "an unknown path",
      send: (app: ReturnType<typeof createApp>["app"]) => post(app, "{}", { path: "/nowhere" }),
      status: 404,
      method: "POST",
      path: "/nowhere",
      operation: null,
      messageId: null,
    },
    {
      name: "a GET on a message path",
      send: (app: ReturnType<typeof createApp>["app"]) => app.request(ALTERNATE, { method: "GET" }),
      status: 405,
      method: "GET",
      path: ALTERNATE,
      operation: null,
      messageId: null,
    },
  ])("records $name (status $status, operation null)", async (c) => {
    const { app } = createApp();

    const reply = await c.send(app);

    expect(reply.status).toBe(c.status);
    const calls = await listCalls(app);
    expect(calls).toHaveLength(1);
    const [call] = calls;
    expect(call).toMatchObject({
      direction: "inbound",
      operation: c.operation,
      messageId: c.messageId,
      request: { method: c.method, path: c.path },
      response: { status: c.status, body: { resourceType: "OperationOutcome" } },
    });
    if (c.requestBody !== undefined) expect(call.request.body).toBe(c.requestBody);
  });

  it("records a body over the limit as a 413 with operation null", async () => {
    const { app } = createApp({ maxBody: 200 });

    const reply = await post(app, messageBundle("add-allergy", [allergy()], { id: "msg-too-big" }));

    expect(reply.status).toBe(413);
    const calls = await listCalls(app);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({
      operation: null,
      messageId: null,
      request: { method: "POST", path: STANDARD },
      response: { status: 413, body: { resourceType: "OperationOutcome" } },
    });
  });

  it("keeps the operation of a refused call when it could be told (a known operation on the wrong path)", async () => {
    const { app } = createApp();

    const reply = await post(app, messageBundle("remove-allergy", [allergy()], { id: "msg-wrong-path" }));

    expect(reply.status).toBe(404);
    const [call] = await listCalls(app);
    expect(call).toMatchObject({
      operation: "remove-allergy",
      messageId: "msg-wrong-path",
      response: { status: 404, body: { resourceType: "OperationOutcome" } },
    });
  });

  it("does not record admin calls", async () => {
    const { app, journal } = createApp();
    await post(app, messageBundle("view-patient-profile", [patient()]));

    await admin(app, "GET", "/health");
    await admin(app, "GET", "/operations");
    await admin(app, "GET", "/calls");
    await admin(app, "POST", "/calls/verify", { body: { operation: "view-patient-profile" } });
    await admin(app, "GET", "/calls/1");

    const calls = await listCalls(app);
    expect(calls.map((c) => c.operation)).toEqual(["view-patient-profile"]);
    expect(journal.size).toBe(1);
  });
});

describe("secrets are redacted in recorded calls (CONTRACT §9)", () => {
  it("replaces credential headers with [redacted] and keeps ordinary ones", async () => {
    const { app } = createApp();

    await post(app, messageBundle("view-patient-profile", [patient()]), {
      headers: {
        Authorization: "Bearer very-secret-token",
        Cookie: "session=abc123",
        "X-Api-Key": "key-987",
        "X-Request-Id": "req-42",
        Accept: "application/fhir+json",
      },
    });

    const [call] = await listCalls(app);
    expect(call.request.headers).toMatchObject({
      authorization: "[redacted]",
      cookie: "[redacted]",
      "x-api-key": "[redacted]",
      "x-request-id": "req-42",
      accept: "application/fhir+json",
    });
    const stored = JSON.stringify(call);
    for (const secret of ["very-secret-token", "abc123", "key-987"]) expect(stored).not.toContain(secret);
  });
});

describe("GET /__admin/calls filters (CONTRACT §9)", () => {
  /** Three add-allergy and two view-patient-profile calls, one minute apart from 10:00Z. */
  async function journalOfFive() {
    const clock = manualClock("2026-01-31T10:00:00.000Z");
    const sandbox = createApp({}, { now: clock.now });
    const plan = ["add-allergy", "view-patient-profile", "add-allergy", "view-patient-profile", "add-allergy"];
    for (const [i, event] of plan.entries()) {
      clock.set(`2026-01-31T10:0${i}:00.000Z`);
      const focus = event === "add-allergy" ? allergy() : patient();
      await post(sandbox.app, messageBundle(event, [focus], { id: `msg-${i}` }));
    }
    return sandbox;
  }

  it.each([
    ["no filter", "", ["msg-0", "msg-1", "msg-2", "msg-3", "msg-4"]],
    ["operation", "operation=add-allergy", ["msg-0", "msg-2", "msg-4"]],
    ["operation with no calls", "operation=cancel-task", []],
    ["direction inbound", "direction=inbound", ["msg-0", "msg-1", "msg-2", "msg-3", "msg-4"]],
    ["direction outbound", "direction=outbound", []],
    ["since, inclusive", "since=2026-01-31T10:02:00.000Z", ["msg-2", "msg-3", "msg-4"]],
    ["since with a UAE offset", `since=${encodeURIComponent("2026-01-31T14:03:30+04:00")}`, ["msg-4"]],
    ["since in the future", "since=2026-02-01T00:00:00Z", []],
    ["limit: the most recent N, oldest first", "limit=2", ["msg-3", "msg-4"]],
    ["limit over the count", "limit=50", ["msg-0", "msg-1", "msg-2", "msg-3", "msg-4"]],
    ["operation and limit", "operation=add-allergy&limit=2", ["msg-2", "msg-4"]],
    ["operation and since", "operation=view-patient-profile&since=2026-01-31T10:02:00Z", ["msg-3"]],
  ])("%s", async (_, query, expected) => {
    const { app } = await journalOfFive();

    const calls = await listCalls(app, query);

    expect(calls.map((c) => c.messageId)).toEqual(expected);
  });

  it.each([
    ["limit=abc", "limit"],
    ["limit=0", "limit"],
    ["since=notadate", "since"],
    ["direction=sideways", "direction"],
    ["colour=blue", "colour"],
  ])("answers 400 with an OperationOutcome for %s", async (query, named) => {
    const { app } = await journalOfFive();

    const reply = await admin(app, "GET", `/calls?${query}`);

    expect(reply.status).toBe(400);
    expect(reply.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    expect(reply.body.resourceType).toBe("OperationOutcome");
    expect(reply.body.issue[0]).toMatchObject({ severity: "error", code: "invalid" });
    expect(reply.body.issue[0].diagnostics).toContain(named);
  });
});

describe("GET /__admin/calls/{id} (CONTRACT §9)", () => {
  it("answers the call with that id", async () => {
    const { app } = createApp();
    await post(app, messageBundle("add-allergy", [allergy()], { id: "msg-first" }));
    await post(app, messageBundle("view-patient-profile", [patient()], { id: "msg-second" }));
    const calls = await listCalls(app);

    const reply = await admin(app, "GET", `/calls/${calls[1].id}`);

    expect(reply.status).toBe(200);
    // The call as listed, the explanation of its answer (test/admin/explain.test.ts) and the issues of its answer
    // (none for an ok answer; test/admin/dashboard-api.test.ts).
    const { explanation, issues, ...call } = reply.body;
    expect(call).toEqual(calls[1]);
    expect(explanation.summary).toBe("No rule answered; the built-in behaviour did.");
    expect(issues).toEqual([]);
    expect(reply.body.messageId).toBe("msg-second");
  });

  it("answers 404 with an OperationOutcome for an unknown id", async () => {
    const { app } = createApp();
    await post(app, messageBundle("add-allergy", [allergy()]));

    const reply = await admin(app, "GET", "/calls/does-not-exist");

    expect(reply.status).toBe(404);
    expect(reply.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    expect(reply.body).toMatchObject({ resourceType: "OperationOutcome", issue: [{ code: "not-found" }] });
    expect(reply.body.issue[0].diagnostics).toContain("does-not-exist");
  });
});

describe("DELETE /__admin/calls (CONTRACT §9)", () => {
  it("clears the journal and the journal records again afterwards", async () => {
    const { app } = createApp();
    await post(app, messageBundle("add-allergy", [allergy()]));
    await post(app, messageBundle("add-allergy", [allergy()]));

    const reply = await admin(app, "DELETE", "/calls");

    expect(reply.status).toBe(200);
    expect(await listCalls(app)).toEqual([]);
    await post(app, messageBundle("view-patient-profile", [patient()], { id: "msg-after-clear" }));
    expect((await listCalls(app)).map((c) => c.messageId)).toEqual(["msg-after-clear"]);
  });
});
