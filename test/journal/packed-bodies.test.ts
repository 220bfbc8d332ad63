import type { AllergyIntolerance } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { listCalls } from "../admin/admin-client.js";
import { envelope, example, messageBundle, STANDARD } from "../support/messages.js";

/** An add-allergy message of the specification's example allergy, each with its own MessageHeader id. */
function message(i: number): string {
  return envelope(
    messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")], {
      id: `packed-${i}`,
    }),
  );
}

async function send(app: ReturnType<typeof createApp>["app"], body: string) {
  const res = await app.request(STANDARD, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

describe("journal bodies packed with other calls' bodies", () => {
  it("shows the oldest calls' bodies exactly as they crossed the wire, long after they were packed", async () => {
    const { app, journal } = createApp();
    const sent: string[] = [];
    const answers: string[] = [];
    for (let i = 0; i < 120; i++) {
      sent.push(message(i));
      const answer = await send(app, sent[i] as string);
      expect(answer.status).toBe(200);
      answers.push(answer.text);
    }

    const calls = await listCalls(app, "cursor=0&limit=200");
    expect(journal.packedBytes).toBeGreaterThan(0);
    // The answers name the patient in Arabic too: text that is not Latin-1 is packed and read back as well.
    expect(answers.filter((a) => /[\u0600-\u06ff]/.test(a))).toHaveLength(120);

    expect(calls).toHaveLength(120);
    for (let i = 0; i < 120; i++) {
      expect(calls[i].request.body).toEqual(JSON.parse(sent[i] as string));
      expect(calls[i].response.body).toEqual(JSON.parse(answers[i] as string));
    }
  });

  it("answers a resend of an early message with its original answer, and a changed one with 409", async () => {
    const { app, journal } = createApp();
    const original = message(0);
    const first = await send(app, original);
    for (let i = 1; i < 80; i++) expect((await send(app, message(i))).status).toBe(200);

    const again = await send(app, original);
    // The same MessageHeader id with other content (new entry ids and timestamp).
    const changed = await send(app, message(0));

    expect(journal.packedBytes).toBeGreaterThan(0);
    expect(again.status).toBe(200);
    expect(again.headers.get("x-sandbox-duplicate")).toBe("true");
    expect(again.text).toBe(first.text);
    expect(changed.status).toBe(409);
  });

  it("streams every call's bodies as NDJSON", async () => {
    const { app, journal } = createApp();
    const sent = Array.from({ length: 90 }, (_, i) => message(i));
    for (const body of sent) await send(app, body);

    const res = await app.request("/__admin/calls?format=ndjson");
    const lines = (await res.text())
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));

    expect(journal.packedBytes).toBeGreaterThan(0);
    expect(lines.map((l) => l.request.body)).toEqual(sent.map((s) => JSON.parse(s)));
  });

  it("still answers a resend with its original answer after the journal was cleared", async () => {
    const { app, journal } = createApp();
    const original = message(0);
    const first = await send(app, original);
    for (let i = 1; i < 60; i++) await send(app, message(i));
    expect((await app.request("/__admin/calls", { method: "DELETE" })).status).toBeLessThan(300);
    for (let i = 60; i < 120; i++) await send(app, message(i));

    const again = await send(app, original);

    expect(journal.packedBytes).toBeGreaterThan(0);
    expect(again.headers.get("x-sandbox-duplicate")).toBe("true");
    expect(again.text).toBe(first.text);
  });
});
