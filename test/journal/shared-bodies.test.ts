import type { AllergyIntolerance } from "fhir/r4.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app.js";
import { SandboxEvents } from "../../src/events.js";
import type { CallDraft } from "../../src/journal/call-record.js";
import { callView } from "../../src/journal/call-view.js";
import { Journal } from "../../src/journal/journal.js";
import { RecordedRequest, RecordedResponse } from "../../src/journal/kept-call.js";
import { type KeptText, PackedTexts } from "../../src/text/packed-texts.js";
import { envelope, example, messageBundle, STANDARD } from "../support/messages.js";

// The journal and the duplicate memory keep one text of each body: the pipeline hands the journal the texts it
// kept (the request as received, the answer as serialized), and the journal keeps no second copy of them.

const QUIET = { info: () => undefined, error: () => undefined };
const allergy = () => example<AllergyIntolerance>("allergyintolerance-example.json");

afterEach(() => vi.restoreAllMocks());

function draft(body: string, answer: string, kept?: CallDraft["kept"]): CallDraft {
  return {
    direction: "inbound",
    at: new Date("2026-01-01T00:00:00Z"),
    durationMs: 1,
    operation: "add-allergy",
    messageId: "m-1",
    rule: null,
    request: { method: "POST", url: "http://x/p?q=1", path: "/p", headers: { "content-type": "a/b" }, body },
    response: { status: 200, headers: { "content-type": "a/b" }, body: answer },
    ...(kept ? { kept } : {}),
  };
}

const keptOf = (side: unknown) => (side as RecordedRequest | RecordedResponse).keptBody;

describe("the journal and the duplicate memory share one kept body", () => {
  it("an add-allergy message keeps two texts, its request and its answer, each read by both", async () => {
    const keep = vi.spyOn(PackedTexts.prototype, "keep");
    const { app, journal } = createApp({}, { logger: QUIET });
    const body = envelope(messageBundle("add-allergy", [allergy()], { id: "shared-1" }));

    const res = await app.request(STANDARD, { method: "POST", headers: { "content-type": "application/json" }, body });
    const answer = await res.text();

    const [call] = journal.list();
    expect(res.status).toBe(200);
    const kept = keep.mock.results.map((r) => r.value as KeptText);
    expect(kept).toHaveLength(2);
    expect(keptOf(call?.request)).toBe(kept[0]);
    expect(keptOf(call?.response)).toBe(kept[1]);
    expect(call?.request.body).toBe(body);
    expect(call?.response?.body).toBe(answer);
  });

  it("a resend is answered from the memory, and its record shares the remembered answer", async () => {
    const { app, journal } = createApp({}, { logger: QUIET });
    const body = envelope(messageBundle("add-allergy", [allergy()], { id: "shared-2" }));
    const send = () => app.request(STANDARD, { method: "POST", headers: { "content-type": "application/json" }, body });
    const first = await (await send()).text();
    const again = await send();

    expect(again.headers.get("x-sandbox-duplicate")).toBe("true");
    expect(await again.text()).toBe(first);
    const [original, resent] = journal.list();
    expect(keptOf(resent?.response)).toBe(keptOf(original?.response));
  });

  it("keeps the texts handed over when redaction leaves the bodies as they are", () => {
    const events = new SandboxEvents();
    const texts = new PackedTexts();
    const journal = new Journal({ maxCalls: 10, maxBytes: 1_000_000 }, events, { texts });
    const body = `{"resourceType":"Bundle","id":"${"x".repeat(100)}"}`;
    const answer = `{"resourceType":"Bundle","id":"${"y".repeat(100)}"}`;
    const kept = { request: texts.keep(body), response: texts.keep(answer) };

    events.emit("call:completed", draft(body, answer, kept));

    const [call] = journal.list();
    expect(keptOf(call?.request)).toBe(kept.request);
    expect(keptOf(call?.response)).toBe(kept.response);
    expect(call).not.toHaveProperty("kept");
    expect(call?.size).toBe(Buffer.byteLength(body) + Buffer.byteLength(answer));
  });

  it("keeps its own redacted text when redaction changes a body: the memory's text stays the one sent", () => {
    const events = new SandboxEvents();
    const texts = new PackedTexts();
    const journal = new Journal({ maxCalls: 10, maxBytes: 1_000_000 }, events, { texts });
    const subscription = {
      resourceType: "Subscription",
      status: "requested",
      reason: "orders",
      criteria: "Task?x=y",
      channel: { type: "rest-hook", endpoint: "https://p.example/hook", header: ["X-Auth: s3cr3t"] },
    };
    const body = JSON.stringify({
      content: JSON.stringify({ resourceType: "Bundle", entry: [{ resource: subscription }] }),
    });
    const answer = `{"resourceType":"Bundle","id":"${"y".repeat(100)}"}`;
    const kept = { request: texts.keep(body), response: texts.keep(answer) };

    events.emit("call:completed", draft(body, answer, kept));

    const [call] = journal.list();
    expect(keptOf(call?.request)).not.toBe(kept.request);
    expect(call?.request.body).not.toContain("s3cr3t");
    expect(call?.request.body).toContain("X-Auth: [redacted]");
    expect(kept.request.text).toBe(body);
    expect(keptOf(call?.response)).toBe(kept.response);
  });
  // A body the journal dropped stays readable for as long as the memory keeps it: packed-bodies.test.ts.
});

describe("a recorded call's sides", () => {
  it("read their body through a getter on the prototype, and show it last wherever they are written", () => {
    const events = new SandboxEvents();
    const journal = new Journal({ maxCalls: 10, maxBytes: 1_000_000 }, events);
    events.emit("call:completed", draft('{"a":1}', '{"b":2}'));
    const [call] = journal.list();
    const request = call?.request as RecordedRequest;

    expect(request).toBeInstanceOf(RecordedRequest);
    expect(call?.response).toBeInstanceOf(RecordedResponse);
    expect(Object.getOwnPropertyDescriptor(request, "body")).toBeUndefined();
    expect(Object.keys(request)).toEqual(["method", "url", "path", "headers"]);
    expect(request.body).toBe('{"a":1}');
    expect(JSON.stringify(request)).toBe(
      '{"method":"POST","url":"http://x/p?q=1","path":"/p","headers":{"content-type":"a/b"},"body":"{\\"a\\":1}"}',
    );
    expect(JSON.stringify(call?.response)).toBe('{"status":200,"headers":{"content-type":"a/b"},"body":"{\\"b\\":2}"}');
    const view = callView(call as NonNullable<typeof call>);
    expect(Object.keys(view.request)).toEqual(["method", "url", "path", "headers", "body"]);
    expect(view.request.body).toEqual({ a: 1 });
    expect(view.response?.body).toEqual({ b: 2 });
  });
});
