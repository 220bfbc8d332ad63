import type { AllergyIntolerance, Bundle } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { SandboxEvents } from "../../src/events.js";
import type { CallDraft } from "../../src/journal/call-record.js";
import { Journal } from "../../src/journal/journal.js";
import { example, messageBundle, post, responseHeader } from "../support/messages.js";
import { admin, listCalls } from "./admin-client.js";

const allergy = () => example<AllergyIntolerance>("allergyintolerance-example.json");

describe("the journal is bounded (--journal-limit)", () => {
  it("keeps only the newest calls, oldest first", async () => {
    const { app, journal } = createApp({ journalLimit: 5 });
    const answers: Bundle[] = [];
    const sent: Bundle[] = [];
    for (let i = 1; i <= 12; i++) {
      sent.push(messageBundle("add-allergy", [allergy()], { id: `msg-${i}` }));
      answers.push((await post(app, sent.at(-1) as Bundle)).body);
    }

    const calls = await listCalls(app);

    expect(journal.size).toBe(5);
    expect(calls.map((c) => c.id)).toEqual(["8", "9", "10", "11", "12"]);
    expect(calls.map((c) => c.messageId)).toEqual(["msg-8", "msg-9", "msg-10", "msg-11", "msg-12"]);
    // Dropped calls are gone for every reader, not just the listing.
    expect((await admin(app, "GET", "/calls/1")).status).toBe(404);
    expect((await admin(app, "POST", "/calls/verify", { body: { operation: "add-allergy" } })).body.matched).toBe(5);

    // A resent recent message id is still answered with its original response.
    const again = await post(app, sent[11] as Bundle);
    expect(responseHeader(again.body as Bundle).id).toBe(responseHeader(answers[11] as Bundle).id);
    const newest = await listCalls(app, "limit=1");
    expect(newest[0]).toMatchObject({ id: "13", messageId: "msg-12", duplicate: true });
    expect(journal.size).toBe(5);
  });

  it("forgets the answers of the oldest message ids too, so that memory stays bounded", async () => {
    const { app } = createApp({ journalLimit: 5 });
    const first = await post(app, messageBundle("add-allergy", [allergy()], { id: "msg-1" }));
    for (let i = 2; i <= 12; i++) await post(app, messageBundle("add-allergy", [allergy()], { id: `msg-${i}` }));

    const again = await post(app, messageBundle("add-allergy", [allergy()], { id: "msg-1" }));

    expect(again.status).toBe(200);
    expect(responseHeader(again.body as Bundle).id).not.toBe(responseHeader(first.body as Bundle).id);
  });

  it("stays at its bound over many calls", () => {
    const events = new SandboxEvents();
    const journal = new Journal({ maxCalls: 3, maxBytes: 1_000_000 }, events);

    for (let i = 0; i < 5000; i++) events.emit("call:completed", draft(`call ${i}`));

    expect(journal.size).toBe(3);
    expect(journal.list().map((c) => c.request.body)).toEqual(["call 4997", "call 4998", "call 4999"]);
    expect(journal.list().map((c) => c.id)).toEqual(["4998", "4999", "5000"]);
  });

  it("drops the oldest calls when their bodies pass the text budget, keeping at least the newest", () => {
    const events = new SandboxEvents();
    const journal = new Journal({ maxCalls: 100, maxBytes: 250 }, events);

    for (const body of ["a".repeat(100), "b".repeat(100), "c".repeat(100)]) events.emit("call:completed", draft(body));
    expect(journal.list().map((c) => c.request.body[0])).toEqual(["b", "c"]);

    events.emit("call:completed", draft("d".repeat(1000)));
    expect(journal.list().map((c) => c.request.body[0])).toEqual(["d"]);
  });
});

function draft(body: string): CallDraft {
  return {
    direction: "inbound",
    at: new Date("2026-01-31T10:00:00Z"),
    durationMs: 1,
    operation: null,
    messageId: null,
    rule: null,
    request: { method: "POST", url: "http://localhost/x", path: "/x", headers: {}, body },
    response: { status: 400, headers: {}, body: "" },
  };
}
