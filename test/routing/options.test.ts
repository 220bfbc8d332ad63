import type { AllergyIntolerance, Bundle, OperationOutcome } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { issue } from "../../src/fhir/outcome.js";
import { builtInHandlers } from "../../src/handlers/built-in.js";
import { type Handler, refuse } from "../../src/handlers/handler.js";
import { example, messageBundle, post, type Reply, responseHeader, STANDARD } from "../support/messages.js";
import { expectOk, expectRefusal, expectResponseMessage, journalledCall } from "./response-checks.js";

const allergyMessage = (options: { id?: string } = {}) =>
  messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")], options);

const REFUSAL = "This patient's record is locked by a merge in progress; resend after the merge completes.";

/** The handler table with add-allergy refusing on a business rule, counting its calls. */
function refusingAllergy() {
  const calls = { count: 0 };
  const refusing: Handler = () => {
    calls.count++;
    return refuse(issue("business-rule", REFUSAL, "Bundle.entry[1].resource"));
  };
  return { calls, handlers: { ...builtInHandlers, "add-allergy": refusing } };
}

/** The Bundle inside an enveloped answer, as the FHIR body it is (the envelope's own Content-Type is checked apart). */
const inside = (reply: Reply): Reply => ({
  status: reply.status,
  headers: new Headers({ "content-type": "application/fhir+json" }),
  body: JSON.parse(reply.body.content),
});

describe("--response-envelope", () => {
  it("wraps an ok response message as {content: <bundle string>}", async () => {
    const { app } = createApp({ responseEnvelope: true });
    const request = allergyMessage();

    const reply = await post(app, request);

    expect(reply.status).toBe(200);
    // The envelope is JSON that holds FHIR, not a FHIR resource.
    expect(reply.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(Object.keys(reply.body)).toEqual(["content"]);
    expect(reply.body.content).toEqual(expect.any(String));
    expectOk(inside(reply), request, STANDARD);
  });

  it("wraps a business refusal too: it is a response message", async () => {
    const { handlers } = refusingAllergy();
    const { app } = createApp({ responseEnvelope: true }, { handlers });
    const request = allergyMessage();

    const reply = await post(app, request);

    expect(reply.status).toBe(200);
    expect(reply.headers.get("content-type")).toBe("application/json; charset=utf-8");
    const bundle = expectResponseMessage(inside(reply), request, STANDARD);
    expectRefusal(bundle);
  });

  it.each([
    ["an unknown event (400)", () => messageBundle("no-such-event", [example("patient-example.json")]), STANDARD, 400],
    ["an incomplete MessageHeader (400)", () => allergyMessage({ id: "" }), STANDARD, 400],
    ["a known operation on the wrong path (404)", () => allergyMessage(), "/fhir/$process-message", 404],
  ])("leaves a not-processed answer to %s a bare OperationOutcome", async (_, build, path, status) => {
    const { app } = createApp({ responseEnvelope: true });

    const reply = await post(app, build(), { path });

    expect(reply.status).toBe(status);
    expect(reply.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    expect(reply.body.resourceType).toBe("OperationOutcome");
    expect(reply.body.content).toBeUndefined();
  });

  it("leaves a body that is not JSON answered by a bare OperationOutcome", async () => {
    const { app } = createApp({ responseEnvelope: true });

    const reply = await post(app, "{not json");

    expect(reply.status).toBe(400);
    expect(reply.body.resourceType).toBe("OperationOutcome");
  });
});

describe("business refusals (processed and refused, CONTRACT §5)", () => {
  it.each([
    ["by default", {}, 200],
    ["with --business-errors http", { businessErrors: "http" as const }, 422],
  ])("are a fatal-error response message %s", async (_, options, status) => {
    const { handlers, calls } = refusingAllergy();
    const { app } = createApp(options, { handlers });
    const request = allergyMessage();
    const requestId = responseHeader(request).id as string;

    const reply = await post(app, request);

    expect(reply.status).toBe(status);
    const bundle = expectResponseMessage(reply, request, STANDARD);
    const outcome: OperationOutcome = expectRefusal(bundle);
    expect(outcome.issue).toEqual([
      { severity: "error", code: "business-rule", diagnostics: REFUSAL, expression: ["Bundle.entry[1].resource"] },
    ]);
    // Nothing but the OperationOutcome comes back, and focus points at nothing.
    expect(bundle.entry).toHaveLength(2);
    expect(responseHeader(bundle).focus).toBeUndefined();
    expect(calls.count).toBe(1);
    const call = await journalledCall(app, requestId);
    expect(call).toMatchObject({ operation: "add-allergy", messageId: requestId, response: { status } });
  });

  it("leaves other operations answered ok", async () => {
    const { handlers } = refusingAllergy();
    const { app } = createApp({ businessErrors: "http" }, { handlers });
    const request = messageBundle("add-history", [example("condition-example.json")]);

    expectOk(await post(app, request), request, STANDARD);
  });
});

describe("a resent message (same MessageHeader id)", () => {
  function countingAllergy() {
    const calls = { count: 0 };
    const add = builtInHandlers["add-allergy"] as Handler;
    const counting: Handler = (input, context) => {
      calls.count++;
      return add(input, context);
    };
    return { calls, handlers: { ...builtInHandlers, "add-allergy": counting } };
  }

  it("is answered with the original response and not applied twice", async () => {
    const { handlers, calls } = countingAllergy();
    const { app } = createApp({}, { handlers });
    const request = allergyMessage({ id: "msg-resent-1" });

    const first = await post(app, request);
    const again = await post(app, request);

    expectOk(first, request, STANDARD);
    expect(again.status).toBe(200);
    expect(again.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    expect(JSON.stringify(again.body)).toBe(JSON.stringify(first.body));
    expect(responseHeader(again.body as Bundle).id).toBe(responseHeader(first.body as Bundle).id);
    expect(calls.count).toBe(1);
    // Both calls are journalled under the message id.
    const res = await app.request("/__admin/calls?messageId=msg-resent-1");
    const { calls: recorded } = (await res.json()) as { calls: Array<{ response: { status: number } }> };
    expect(recorded.map((c) => c.response.status)).toEqual([200, 200]);
  });

  it("is refused with 409 duplicate, not answered with the stale response, when its content changed", async () => {
    const { handlers, calls } = countingAllergy();
    const { app } = createApp({}, { handlers });
    const first = await post(app, allergyMessage({ id: "msg-resent-2" }));
    const changed = messageBundle("add-allergy", [example("allergyintolerance-medication.json")], {
      id: "msg-resent-2",
    });

    const again = await post(app, changed);

    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ resourceType: "OperationOutcome", issue: [{ code: "duplicate" }] });
    expect(again.body).not.toEqual(first.body);
    expect(calls.count).toBe(1);
  });

  it("is processed anew under a different id", async () => {
    const { handlers, calls } = countingAllergy();
    const { app } = createApp({}, { handlers });
    const first = await post(app, allergyMessage({ id: "msg-a" }));
    const second = await post(app, allergyMessage({ id: "msg-b" }));

    expect(calls.count).toBe(2);
    const [a, b] = [responseHeader(first.body), responseHeader(second.body)];
    expect(a.id).not.toBe(b.id);
    expect(a.response?.identifier).toBe("msg-a");
    expect(b.response?.identifier).toBe("msg-b");
  });

  it("returns the original refusal again, under --business-errors http too", async () => {
    const { handlers, calls } = refusingAllergy();
    const { app } = createApp({ businessErrors: "http" }, { handlers });
    const request = allergyMessage({ id: "msg-refused" });

    const first = await post(app, request);
    const again = await post(app, request);

    expect([first.status, again.status]).toEqual([422, 422]);
    expect(again.body).toEqual(first.body);
    expect(calls.count).toBe(1);
  });

  it("is processed when the first attempt was not processed (a bad request changes nothing)", async () => {
    const { handlers, calls } = countingAllergy();
    const { app } = createApp({}, { handlers });
    const broken = allergyMessage({ id: "msg-fixed" });
    const header = responseHeader(broken) as { source?: unknown };
    delete header.source;

    const refused = await post(app, broken);
    const fixed = allergyMessage({ id: "msg-fixed" });
    const accepted = await post(app, fixed);

    expect(refused.status).toBe(400);
    expectOk(accepted, fixed, STANDARD);
    expect(calls.count).toBe(1);
  });

  it("is processed anew after a reset, which puts state back to fixtures", async () => {
    const { handlers, calls } = countingAllergy();
    const sandbox = createApp({}, { handlers });
    const request = allergyMessage({ id: "msg-after-reset" });

    await post(sandbox.app, request);
    sandbox.reset();
    const again = await post(sandbox.app, request);

    expectOk(again, request, STANDARD);
    expect(calls.count).toBe(2);
  });
});
