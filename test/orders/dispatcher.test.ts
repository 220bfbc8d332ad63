import { afterEach, describe, expect, it, vi } from "vitest";
import { SandboxEvents } from "../../src/events.js";
import type { CallDraft } from "../../src/journal/call-record.js";
import { type Push, type PushDeps, PushDispatcher, type PushSettings } from "../../src/push/dispatcher.js";
import { refusedUrl, startReceiver } from "../support/receiver.js";

const closers: Array<() => unknown> = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const close of closers.splice(0)) await close();
});

async function receiver(...args: Parameters<typeof startReceiver>) {
  const r = await startReceiver(...args);
  closers.push(r.close);
  return r;
}

/** Answers the n-th request with statuses[n-1], the last one from then on. */
const statuses =
  (...list: number[]) =>
  (_: unknown, n: number) => ({ status: list[Math.min(n, list.length) - 1] as number });

const ENVELOPE = JSON.stringify({ content: JSON.stringify({ resourceType: "Bundle", type: "message" }) });

const push = (target: string, overrides: Partial<Push> = {}): Push => ({
  target,
  headers: {},
  body: ENVELOPE,
  event: "order-fulfillment-request",
  messageId: "msg-1",
  ...overrides,
});

/**
 * A dispatcher with small real timeouts and backoff, the real fetch (through a
 * counter), a fixed random and the outbound calls it announces.
 */
function dispatcher(settings: Partial<PushSettings> = {}, deps: Partial<PushDeps> = {}) {
  const events = new SandboxEvents();
  const calls: CallDraft[] = [];
  events.on("call:completed", (draft) => calls.push(draft));
  const fetched = { count: 0 };
  const countingFetch: typeof fetch = (input, init) => {
    fetched.count++;
    return (deps.fetch ?? fetch)(input, init);
  };
  const d = new PushDispatcher(
    { timeoutMs: 2_000, attempts: 3, concurrency: 8, backoffMs: 2, allow: [], ...settings },
    {
      events,
      now: () => new Date(),
      monotonic: () => performance.now(),
      random: () => 0.5,
      ...deps,
      fetch: countingFetch,
    },
  );
  return { d, calls, fetched, events };
}

/** Resolves with the announced call of `attempt` (already announced, or the next to be). */
function attemptAnnounced(events: SandboxEvents, calls: CallDraft[], attempt: number): Promise<CallDraft> {
  const done = calls.find((c) => c.attempt === attempt);
  if (done) return Promise.resolve(done);
  return new Promise((resolve) => {
    const on = (draft: CallDraft) => {
      if (draft.attempt !== attempt) return;
      events.off("call:completed", on);
      resolve(draft);
    };
    events.on("call:completed", on);
  });
}

describe("PushDispatcher: which answers count as delivered, which are retried (CONTRACT §8)", () => {
  it.each([
    { answers: [200], attempts: 3, delivered: true, tries: 1, status: 200 },
    { answers: [202], attempts: 3, delivered: true, tries: 1, status: 202 },
    { answers: [204], attempts: 3, delivered: true, tries: 1, status: 204 },
    { answers: [500, 200], attempts: 3, delivered: true, tries: 2, status: 200 },
    { answers: [503], attempts: 3, delivered: false, tries: 3, status: 503 },
    { answers: [503], attempts: 5, delivered: false, tries: 5, status: 503 },
    { answers: [503], attempts: 1, delivered: false, tries: 1, status: 503 },
    { answers: [502, 504, 200], attempts: 3, delivered: true, tries: 3, status: 200 },
    { answers: [404, 200], attempts: 3, delivered: false, tries: 1, status: 404 },
    { answers: [400, 200], attempts: 3, delivered: false, tries: 1, status: 400 },
    { answers: [410, 200], attempts: 3, delivered: false, tries: 1, status: 410 },
    { answers: [401, 200], attempts: 3, delivered: false, tries: 1, status: 401 },
    { answers: [408, 200], attempts: 3, delivered: true, tries: 2, status: 200 },
    { answers: [429, 200], attempts: 3, delivered: true, tries: 2, status: 200 },
  ])("answers $answers with $attempts attempts → delivered $delivered after $tries", async (c) => {
    const r = await receiver(statuses(...c.answers));
    const { d, calls } = dispatcher({ attempts: c.attempts });

    const result = await d.deliver(push(r.url));

    expect(result).toEqual({
      delivered: c.delivered,
      attempts: c.tries,
      status: c.status,
      error: c.delivered ? null : `answered ${c.status}`,
    });
    expect(r.received).toHaveLength(c.tries);
    expect(calls.map((call) => [call.attempt, call.response?.status])).toEqual(
      Array.from({ length: c.tries }, (_, i) => [i + 1, c.answers[Math.min(i, c.answers.length - 1)]]),
    );
  });

  it("does not follow a redirect: a 302 to another receiver is an answer, not retried, and the other is never hit", async () => {
    const b = await receiver();
    const a = await receiver(() => ({ status: 302, headers: { location: b.url } }));
    const { d, calls } = dispatcher();

    const result = await d.deliver(push(a.url));

    expect(result).toEqual({ delivered: false, attempts: 1, status: 302, error: "answered 302" });
    expect(a.received).toHaveLength(1);
    expect(b.received).toHaveLength(0);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.response?.headers.location).toBe(b.url);
  });

  it("retries a refused connection, then fails with a readable ECONNREFUSED error", async () => {
    const target = await refusedUrl();
    const { d, calls } = dispatcher({ attempts: 3 });

    const result = await d.deliver(push(target));

    expect(result).toMatchObject({ delivered: false, attempts: 3, status: null });
    expect(result.error).toMatch(/^ECONNREFUSED/);
    expect(calls.map((c) => c.attempt)).toEqual([1, 2, 3]);
    for (const call of calls) {
      expect(call.response).toBeNull();
      expect(call.error).toMatch(/ECONNREFUSED.*127\.0\.0\.1/);
      expect(call.target).toBe(target);
    }
  });

  it("says why fetch failed when its cause has no code (a port fetch never connects to)", async () => {
    // Port 1 is on the Fetch standard's bad-port list: refused before any connection is tried.
    const { d, calls } = dispatcher({ attempts: 1 });

    const result = await d.deliver(push("http://127.0.0.1:1/fhir"));

    expect(result.error).toBe("fetch failed: bad port");
    expect(calls[0]?.error).toBe("fetch failed: bad port");
  });

  it("retries a connection reset by the receiver, then delivers", async () => {
    const r = await receiver((_, n) => (n === 1 ? "reset" : { status: 200 }));
    const { d, calls } = dispatcher();

    const result = await d.deliver(push(r.url));

    expect(result).toEqual({ delivered: true, attempts: 2, status: 200, error: null });
    expect(calls[0]?.error).toEqual(expect.any(String));
    expect(calls[0]?.response).toBeNull();
  });

  it("times out each attempt at timeoutMs when the receiver never answers", async () => {
    const r = await receiver(() => "hang");
    const { d, calls } = dispatcher({ timeoutMs: 100, attempts: 2 });

    const result = await d.deliver(push(r.url));

    expect(result).toEqual({ delivered: false, attempts: 2, status: null, error: "no answer within 100 ms" });
    expect(r.received).toHaveLength(2);
    expect(calls.map((c) => [c.attempt, c.error, c.response])).toEqual([
      [1, "no answer within 100 ms", null],
      [2, "no answer within 100 ms", null],
    ]);
    for (const call of calls) {
      // Timers may fire up to a millisecond early against performance.now(); the bound is what matters.
      expect(call.durationMs).toBeGreaterThanOrEqual(95);
      expect(call.durationMs).toBeLessThan(1_500);
    }
  });

  it("waits between attempts with exponential backoff and jitter: ceiling/2 + random × ceiling/2, ceiling doubling", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const r = await receiver(statuses(503));
    const randoms = [0, 0.5, 1];
    const { d, calls, fetched, events } = dispatcher(
      { attempts: 4, backoffMs: 1_000, timeoutMs: 60_000 },
      { random: () => randoms.shift() ?? Number.NaN },
    );

    const delivery = d.deliver(push(r.url));
    // backoff 1000: 500 + 0×500; 2000: 1000 + 0.5×1000; 4000: 2000 + 1×2000.
    const waits = [500, 1_500, 4_000];
    for (const [i, wait] of waits.entries()) {
      await attemptAnnounced(events, calls, i + 1);
      await vi.advanceTimersByTimeAsync(wait - 1);
      expect(fetched.count, `attempt ${i + 2} started before ${wait} ms`).toBe(i + 1);
      await vi.advanceTimersByTimeAsync(1);
      expect(fetched.count, `attempt ${i + 2} not started at ${wait} ms`).toBe(i + 2);
    }
    const result = await delivery;

    expect(result).toMatchObject({ delivered: false, attempts: 4, status: 503 });
    expect(randoms).toEqual([]);
    expect(r.received).toHaveLength(4);
  });

  it("keeps at most `concurrency` deliveries in flight: 6 pushes, concurrency 2, receiver holding requests", async () => {
    const r = await receiver(() => "hang");
    const { d, fetched } = dispatcher({ concurrency: 2, attempts: 1 });

    const results = Array.from({ length: 6 }, (_, i) => d.deliver(push(r.url, { messageId: `msg-${i}` })));
    expect(fetched.count).toBe(2);
    await r.next();
    await r.next();
    expect(r.stats.open).toBe(2);
    for (let started = 3; started <= 6; started++) {
      expect(r.release(1)).toBe(1);
      await r.next();
      expect(fetched.count).toBe(started);
      expect(r.stats.open).toBeLessThanOrEqual(2);
    }
    r.release();
    const settled = await Promise.all(results);

    expect(settled.every((s) => s.delivered && s.attempts === 1)).toBe(true);
    expect(r.received).toHaveLength(6);
    expect(r.stats.maxOpen).toBe(2);
  });
});

describe("PushDispatcher: every attempt is one outbound call (CONTRACT §9)", () => {
  it("announces target, attempt, status, request headers (the pharmacy's marked secret for the journal) and the body", async () => {
    const r = await receiver((_, n) => (n === 1 ? { status: 500, body: '{"n":1}' } : { status: 200, body: '{"n":2}' }));
    const { d, calls } = dispatcher();
    const headers = { Authorization: "Bearer t0p", "X-Api-Key": "k3y", "X-Pharmacy": "PH-A" };

    await d.deliver(push(r.url, { headers, messageId: "msg-42" }));

    // The receiver gets the real values; the journal redacts the ones marked secret (test/journal/redaction.test.ts).
    expect(r.received[0]?.headers).toMatchObject({
      authorization: "Bearer t0p",
      "x-api-key": "k3y",
      "x-pharmacy": "PH-A",
    });
    expect(calls).toHaveLength(2);
    calls.forEach((call, i) => {
      expect(call).toMatchObject({
        direction: "outbound",
        operation: "order-fulfillment-request",
        messageId: "msg-42",
        target: r.url,
        attempt: i + 1,
        request: { method: "POST", url: r.url, path: "/fhir-hook", body: ENVELOPE },
        response: { status: i === 0 ? 500 : 200, body: `{"n":${i + 1}}` },
      });
      expect(call.at).toBeInstanceOf(Date);
      expect(call.durationMs).toBeGreaterThanOrEqual(0);
      expect(call.request.headers).toEqual({
        // The body is the {"content": …} envelope: JSON holding FHIR, not a FHIR resource.
        "content-type": "application/json; charset=utf-8",
        authorization: "Bearer t0p",
        "x-api-key": "k3y",
        "x-pharmacy": "PH-A",
      });
      expect(call.secretHeaders).toEqual(["Authorization", "X-Api-Key", "X-Pharmacy"]);
    });
  });

  it.each([
    ["ends after 5 MB", false],
    ["sends 5 MB and never ends", true],
  ])("reads a huge answer body only up to the cap (receiver %s) and still delivers", async (_, keepOpen) => {
    const r = await receiver(() => ({ status: 200, fill: 5 * 1024 * 1024, keepOpen }));
    const { d, calls } = dispatcher({ timeoutMs: 5_000, attempts: 1 });

    const result = await d.deliver(push(r.url));

    // Reading to the end of a body that never ends would only stop at the timeout.
    expect(result).toEqual({ delivered: true, attempts: 1, status: 200, error: null });
    // The first 4 KiB kept, then a marker of the cut (docs/pharmacy-guide.md, Delivery behaviour).
    const body = calls[0]?.response?.body ?? "";
    const [kept, marker] = body.split("…");
    expect(kept).toBe("x".repeat(4 * 1024));
    expect(marker).toMatch(
      /^\[cut: the answer was (5242880|more than 4096) bytes; the journal keeps the first 4096\]$/,
    );
  });
});
