import type { SandboxEvents } from "../events.js";
import type { CallRecord } from "./call-record.js";
import type { CompiledExpectation, Verification } from "./verify.js";

/**
 * Resolves as soon as the expectation holds — each newly recorded call is
 * matched on its own and counted, so waiting for n calls costs n checks, not
 * n journal scans — or with the full verification at the timeout or when
 * `signal` aborts (a client that gave up must not leave a waiter behind).
 */
export function waitUntil(
  events: SandboxEvents,
  expectation: CompiledExpectation,
  calls: () => readonly CallRecord[],
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<Verification> {
  return new Promise((resolve) => {
    const first = expectation.verify(calls());
    if (first.ok || signal?.aborted) {
      resolve(first);
      return;
    }
    let matched = first.matched;
    const onRecorded = (call: CallRecord) => {
      if (!expectation.matches(call)) return;
      matched++;
      if (expectation.holds(matched)) finish(expectation.verify(calls()));
    };
    const onAbort = () => finish(expectation.verify(calls()));
    const timer = setTimeout(() => finish(expectation.verify(calls())), timeoutMs);
    function finish(v: Verification) {
      clearTimeout(timer);
      events.off("call:recorded", onRecorded);
      signal?.removeEventListener("abort", onAbort);
      resolve(v);
    }
    events.on("call:recorded", onRecorded);
    signal?.addEventListener("abort", onAbort);
  });
}
