import type { SandboxEvents } from "../events.js";
import type { Verification } from "./verify.js";

/**
 * Resolves as soon as `verify()` holds — re-checked on each newly recorded
 * call, not by polling — or with the last verification at the timeout or
 * when `signal` aborts (a client that gave up must not leave a waiter behind).
 */
export function waitUntil(
  events: SandboxEvents,
  verify: () => Verification,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<Verification> {
  return new Promise((resolve) => {
    const first = verify();
    if (first.ok || signal?.aborted) {
      resolve(first);
      return;
    }
    const onRecorded = () => {
      const now = verify();
      if (now.ok) finish(now);
    };
    const onAbort = () => finish(verify());
    const timer = setTimeout(() => finish(verify()), timeoutMs);
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
