import { request } from "node:http";
import { afterAll, describe, expect, it } from "vitest";
import { createApp, type SandboxApp } from "../../src/app.js";
import { type RunningServer, startServer } from "../../src/server/start-server.js";
import { allergyMessage, envelope, STANDARD } from "../support/messages.js";

// The fast path encodes an answer once and hands the journal those bytes to measure the call by. What the journal
// gives back, and the size it counts, must be those of the texts all the same: a request of valid UTF-8 exactly, one
// with bytes UTF-8 cannot decode as Node decodes them (U+FFFD), Arabic exactly, before and after packing; a
// duplicate's answer from the duplicate memory; an enveloped answer.

const open: Array<() => unknown> = [];
afterAll(async () => {
  for (const close of open.reverse()) await close();
});

async function served(
  options: { responseEnvelope?: boolean } = {},
): Promise<{ app: SandboxApp; server: RunningServer }> {
  const app = createApp({ watch: false, ...options });
  const server = await startServer(app, { port: 0, host: "127.0.0.1" });
  open.push(
    () => server.close(),
    () => app.close(),
  );
  expect(app.node).toBeDefined();
  return { app, server };
}

/** POSTs raw bytes; resolves with the status and the answer's bytes. */
function post(url: string, body: Buffer): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${STANDARD}`, { method: "POST", headers: { "content-type": "application/json" } });
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("the journal keeps what crossed the wire on the fast path", { timeout: 30_000 }, () => {
  it("gives back each request and answer as sent, before and after their block is packed", async () => {
    const { app, server } = await served();
    // Each message its own (a fresh MessageHeader id): a resent one would be answered from the duplicate memory.
    const valid = () => Buffer.from(envelope(allergyMessage("سمسم — sesame")), "utf8");
    // A byte UTF-8 has no meaning for, inside the message's text: Node decodes it as U+FFFD.
    const invalid = () => {
      const bytes = Buffer.from(envelope(allergyMessage("sesame XX")), "utf8");
      const at = bytes.indexOf("XX");
      bytes[at] = 0xff;
      bytes[at + 1] = 0xfe;
      return bytes;
    };

    const sent: Buffer[] = [];
    const answers: Buffer[] = [];
    const check = () => {
      const calls = app.journal.list().slice(-sent.length);
      expect(calls.map((c) => c.request.body)).toEqual(sent.map((b) => b.toString("utf8")));
      expect(calls.map((c) => c.response?.body)).toEqual(answers.map((b) => b.toString("utf8")));
      // The size counts the texts as kept (a byte UTF-8 cannot decode counts as U+FFFD's three).
      expect(calls.map((c) => c.size)).toEqual(
        sent.map((b, i) => Buffer.byteLength(b.toString("utf8")) + (answers[i] as Buffer).length),
      );
    };
    for (const body of [valid(), invalid()]) {
      const answer = await post(server.url, body);
      sent.push(body);
      answers.push(answer.body);
      check(); // kept unpacked
    }
    expect(sent[1]?.toString("utf8")).toContain("\uFFFD");
    // Enough calls to fill and pack blocks (256 Ki characters each), read back after the turn that packs them.
    for (let i = 0; i < 300; i++) {
      const body = i % 2 === 0 ? valid() : invalid();
      const answer = await post(server.url, body);
      sent.push(body);
      answers.push(answer.body);
    }
    await new Promise((resolve) => setImmediate(resolve));
    expect(app.journal.list().length).toBe(sent.length);
    expect(app.journal.packedBytes).toBeGreaterThan(0);
    check();
  });

  it("a message sent again is answered and journaled as the first was, before and after its block is packed", async () => {
    const { app, server } = await served();
    const body = Buffer.from(envelope(allergyMessage("سمسم — sesame")), "utf8");
    const first = await post(server.url, body);
    expect(first.status).toBe(200);
    const again = await post(server.url, body); // the duplicate memory's answer, its text kept as bytes
    expect(again.body.toString("utf8")).toBe(first.body.toString("utf8"));
    for (let i = 0; i < 300; i++) await post(server.url, Buffer.from(envelope(allergyMessage(`filler ${i}`)), "utf8"));
    await new Promise((resolve) => setImmediate(resolve));
    expect(app.journal.packedBytes).toBeGreaterThan(0);
    const late = await post(server.url, body); // from the packed block now
    expect(late.body.toString("utf8")).toBe(first.body.toString("utf8"));
    const calls = app.journal.list().filter((c) => c.request.body === body.toString("utf8"));
    expect(calls.map((c) => c.response?.body)).toEqual([first, again, late].map((a) => a.body.toString("utf8")));
  });

  it("--response-envelope: the journal keeps the enveloped answer that was sent", async () => {
    const { app, server } = await served({ responseEnvelope: true });
    const answer = await post(server.url, Buffer.from(envelope(allergyMessage("sesame")), "utf8"));
    expect(JSON.parse(answer.body.toString("utf8"))).toHaveProperty("content");
    expect(app.journal.list().at(-1)?.response?.body).toBe(answer.body.toString("utf8"));
  });
});
