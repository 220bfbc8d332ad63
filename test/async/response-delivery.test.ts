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

describe("ResponseDeliveries: each workspace's answers bounded", () => {
  /** A dispatcher whose deliveries end when the test says: `finish(i)` ends the i-th (from 0). */
  function held(limits: { perWorkspace: number; sendingPerWorkspace: number }) {
    const pushes: Push[] = [];
    const ends: Array<() => void> = [];
    const dispatcher = {
      refusal: () => null,
      deliver: (push: Push) => {
        pushes.push(push);
        return new Promise((resolve) =>
          ends.push(() => resolve({ delivered: true, attempts: 1, status: 200, error: null })),
        );
      },
    } as unknown as PushDispatcher;
    const deliveries = new ResponseDeliveries(dispatcher, silent as never, () => new Date(Date.now()), limits);
    return { pushes, deliveries, finish: (i: number) => ends[i]?.() };
  }
  const of = (workspace: string, respondsTo: string): ResponseDelivery => ({ ...answer(0), workspace, respondsTo });

  it("reserve: no place past the limit, each workspace its own; a place frees once its answer is delivered", async () => {
    vi.useFakeTimers();
    const { deliveries, finish } = held({ perWorkspace: 2, sendingPerWorkspace: 10 });
    const a1 = deliveries.reserve("a");
    const a2 = deliveries.reserve("a");
    expect(a1 && a2).toBeTruthy();
    expect(deliveries.reserve("a")).toBeNull();
    expect(deliveries.reserve("b")).not.toBeNull();
    // A place given back (its message refused, say) is free again; releasing twice frees it once.
    a2?.release();
    a2?.release();
    expect(deliveries.held("a")).toBe(1);
    deliveries.send(of("a", "1"), undefined, a1 ?? undefined);
    await vi.advanceTimersByTimeAsync(0);
    expect(deliveries.stats()).toEqual({ held: 2, waiting: 1 });
    finish(0);
    await vi.advanceTimersByTimeAsync(0);
    expect(deliveries.held("a")).toBe(0);
    // An answer a state file brought back takes a place whatever the workspace holds: it was accepted already.
    deliveries.reserve("c");
    deliveries.send(of("c", "2"));
    deliveries.send(of("c", "3"));
    expect(deliveries.held("c")).toBe(3);
  });

  it("hands at most its share of one workspace's answers to the dispatcher; the next goes as one ends, in order", async () => {
    vi.useFakeTimers();
    const { pushes, deliveries, finish } = held({ perWorkspace: 10, sendingPerWorkspace: 2 });
    for (const id of ["1", "2", "3", "4"]) deliveries.send(of("a", id));
    deliveries.send(of("b", "5"));
    await vi.advanceTimersByTimeAsync(0);
    expect(pushes.map((p) => p.respondsTo)).toEqual(["1", "2", "5"]);
    expect(deliveries.stats()).toEqual({ held: 5, waiting: 2 });
    finish(0);
    // A later answer of the same workspace waits behind those already waiting.
    deliveries.send(of("a", "6"));
    await vi.advanceTimersByTimeAsync(0);
    expect(pushes.map((p) => p.respondsTo)).toEqual(["1", "2", "5", "3"]);
    finish(1);
    await vi.advanceTimersByTimeAsync(0);
    expect(pushes.map((p) => p.respondsTo)).toEqual(["1", "2", "5", "3", "4"]);
  });
  it("withdraw: a reset workspace's answers waiting for their delay or their turn are not sent; another's are", async () => {
    vi.useFakeTimers();
    const { pushes, deliveries, finish } = held({ perWorkspace: 10, sendingPerWorkspace: 1 });
    deliveries.send(of("a", "1"));
    deliveries.send(of("a", "2"));
    deliveries.send({ ...of("a", "3"), delayMs: 1000 });
    deliveries.send(of("b", "4"));
    await vi.advanceTimersByTimeAsync(0);
    // "1" is with the dispatcher, "2" waits its turn, "3" its delay.
    expect(pushes.map((p) => p.respondsTo)).toEqual(["1", "4"]);
    deliveries.withdraw("a");
    finish(0);
    await vi.advanceTimersByTimeAsync(2000);
    expect(pushes.map((p) => p.respondsTo)).toEqual(["1", "4"]);
    expect(deliveries.held("a")).toBe(0);
    // Answers taken after the reset go as usual.
    deliveries.send(of("a", "5"));
    await vi.advanceTimersByTimeAsync(0);
    expect(pushes.map((p) => p.respondsTo)).toEqual(["1", "4", "5"]);
  });
});
