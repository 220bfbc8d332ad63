import { afterEach, describe, expect, it, vi } from "vitest";
import { SandboxEvents } from "../../src/events.js";
import type { Push, PushDispatcher } from "../../src/push/dispatcher.js";
import { ResponseDeliveries, type ResponseDelivery } from "../../src/push/response-delivery.js";

// The asynchronous leg's timing, with fake timers: sent after its delay, kept until its delivery ends, none after stop.

const silent = { error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined };

afterEach(() => {
  vi.useRealTimers();
});

function setup() {
  const pushes: Push[] = [];
  const dispatcher = {
    refusal: () => null,
    deliver: (push: Push) => {
      pushes.push(push);
      return Promise.resolve({ delivered: true, attempts: 1, status: 200, error: null });
    },
  } as unknown as PushDispatcher;
  const deliveries = new ResponseDeliveries(dispatcher, silent as never, () => new Date(Date.now()));
  return { pushes, deliveries };
}

const answer = (delayMs: number): ResponseDelivery => ({
  target: "http://127.0.0.1:9090/answers",
  body: '{"resourceType":"Bundle"}',
  contentType: "application/fhir+json; charset=utf-8",
  operation: "add-allergy",
  messageId: "m-1",
  respondsTo: "7",
  workspace: "default",
  events: new SandboxEvents(),
  delayMs,
});

describe("ResponseDeliveries", () => {
  it("sends after the delay, not before; keeps the answer (due then) until its delivery ends", async () => {
    vi.useFakeTimers({ now: new Date("2026-03-01T08:00:00.000Z") });
    const { pushes, deliveries } = setup();
    const kept: string[] = [];
    let done = 0;
    deliveries.send(answer(2000), (saved) => {
      kept.push(saved.dueAt);
      return { done: () => done++ };
    });
    expect(kept).toEqual(["2026-03-01T08:00:02.000Z"]);
    await vi.advanceTimersByTimeAsync(1999);
    expect(pushes).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(pushes.map((p) => [p.target, p.contentType, p.respondsTo, p.event, p.messageId])).toEqual([
      ["http://127.0.0.1:9090/answers", "application/fhir+json; charset=utf-8", "7", "add-allergy", "m-1"],
    ]);
    expect(done).toBe(1);
  });

  it("sends nothing still waiting once stopped, and takes nothing more", async () => {
    vi.useFakeTimers();
    const { pushes, deliveries } = setup();
    let done = 0;
    deliveries.send(answer(500), () => ({ done: () => done++ }));
    deliveries.stop();
    deliveries.send(answer(0), () => ({ done: () => done++ }));
    await vi.advanceTimersByTimeAsync(10_000);
    expect(pushes).toHaveLength(0);
    // Not done: a state file keeps it for the next start.
    expect(done).toBe(0);
  });
});
