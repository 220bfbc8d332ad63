import { describe, expect, it } from "vitest";
import { senderKinds } from "../../src/conformance/kinds/sender.js";
import type { CallWatch, ObservedCall, StepContext } from "../../src/conformance/step-context.js";
import type { CallRecord } from "../../src/journal/call-record.js";

/**
 * expectRetry after a 429 with Retry-After: the time scale multiplies the plan's waits, never the Retry-After the
 * answer carries (the system under test reads it as it is). So at a small scale, a system that waits out Retry-After
 * 2 s (the shipped plan's retry-after-honoured test) and then retries must still be found: the wait is at least the
 * Retry-After plus the plan's window, scaled. Time is the fake watch's: a call comes when its delay fits the wait.
 */

const T0 = Date.parse("2026-11-27T10:00:00Z");

function call(id: string, atMs: number, retryAfterMs: number | null, status: number): ObservedCall {
  const record = {
    id,
    direction: "inbound",
    operation: "add-allergy",
    messageId: "6f1c2d3e-0000-4000-8000-000000000001",
    at: new Date(atMs),
    durationMs: 5,
    response: { status, headers: {}, body: "" },
  } as unknown as CallRecord;
  return { record, authFingerprint: null, contentFingerprint: "same-content", retryAfterMs };
}

/** A watch whose calls come `delayMs` after the step starts: `next` finds one when its wait is long enough. */
function watch(coming: Array<{ call: ObservedCall; delayMs: number }>, waits: number[]): CallWatch {
  return {
    all: () => [],
    position: 0,
    async next(test, timeoutMs) {
      waits.push(timeoutMs);
      return coming.find((c) => c.delayMs <= timeoutMs && test(c.call))?.call;
    },
  };
}

function context(timeScale: number, trigger: ObservedCall, calls: CallWatch): StepContext {
  return {
    session: { id: "s1", role: "sender", operations: [], pharmacyUrl: null, pharmacyLicence: null, timeScale },
    // The trigger as answerNext leaves it for the expectations after it.
    memory: { "sender.trigger": trigger },
    calls,
    ms: (duration: number | string | undefined, fallbackMs: number) =>
      Math.round((duration === "45s" ? 45_000 : fallbackMs) * timeScale),
    evidence: (c: ObservedCall, note: string) => ({ callId: c.record.id, note }),
  } as unknown as StepContext;
}

const expectRetry = senderKinds.expectRetry as unknown as (
  ctx: StepContext,
  spec: { sameId: boolean; sameContent: boolean; within: string },
) => Promise<{ status: string; message: string }>;

describe("expectRetry after a 429 with Retry-After, at a small time scale", () => {
  const spec = { sameId: true, sameContent: true, within: "45s" };

  it("finds the retry of a sender that waited out Retry-After 2 s, at time scale 0.02 (window 0.9 s)", async () => {
    const trigger = call("1", T0, 2_000, 429);
    const retry = call("2", T0 + 2_005 + 50, null, 200);
    const waits: number[] = [];
    const verdict = await expectRetry(context(0.02, trigger, watch([{ call: retry, delayMs: 2_050 }], waits)), spec);
    expect(verdict.status, verdict.message).toBe("pass");
    // Retry-After (2 s, as the answer said it) plus the plan's 45 s × 0.02.
    expect(waits).toEqual([2_000 + 900]);
  });

  it("a sender that never retries: the failure says both waits", async () => {
    const trigger = call("1", T0, 2_000, 429);
    const verdict = await expectRetry(context(0.02, trigger, watch([], [])), spec);
    expect(verdict.status).toBe("fail");
    expect(verdict.message).toBe(
      "expected a retry of message 6f1c2d3e… with the same MessageHeader id 6f1c2d3e… and the same content within 2.9 s of its 429 (its Retry-After 2 s, then 0.9 s); saw no message after the 429",
    );
  });

  it("an answer without Retry-After: the plan's window alone, scaled", async () => {
    const waits: number[] = [];
    await expectRetry(context(0.02, call("1", T0, null, 503), watch([], waits)), spec);
    expect(waits).toEqual([900]);
  });
});
