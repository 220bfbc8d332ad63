import type { SandboxLogger } from "../log/logger.js";
import type { ClientRefusal } from "./client-refusal.js";

/** Repeated refusals of one reason are summed in a line at most this often. */
export const REFUSAL_LOG_INTERVAL_MS = 10_000;

/** The timer functions the log waits with (tests give a fake clock). */
export interface RefusalTimers {
  setTimeout(run: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const REAL_TIMERS: RefusalTimers = {
  // Unref'd: a count still to say does not keep the process alive.
  setTimeout: (run, ms) => setTimeout(run, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface RefusalLog {
  /** A refused connection, from `peer` when known. */
  refused(refusal: ClientRefusal, peer: string | undefined): void;
  /** Says the counts not said yet and stops the timers (the server closes). */
  flush(): void;
}

/**
 * The log lines of TLS refusals, throttled: anyone who reaches the port can be refused as often as they like, and a
 * line each would push everything else out of the log (the dashboard keeps the last 200 lines). Per reason, the
 * first refusal is logged at once with its details; the next ones are counted and said in one line at the end of the
 * interval, and so on while they go on; an interval without one starts afresh.
 *
 * @example
 *   const log = refusalLog(logger);
 *   log.refused(NO_CERTIFICATE, "127.0.0.1"); // TLS: refused a client without a certificate (…) from 127.0.0.1
 *   log.refused(NO_CERTIFICATE, "127.0.0.1"); // counted; 10 s later: TLS: refused 1 more in the last 10 s: a client without …
 */
export function refusalLog(
  logger: SandboxLogger,
  intervalMs = REFUSAL_LOG_INTERVAL_MS,
  timers: RefusalTimers = REAL_TIMERS,
): RefusalLog {
  /** Per reason with a refusal in the current interval: the last one, how many not said yet, the interval's timer. */
  const open = new Map<ClientRefusal["reason"], { last: ClientRefusal; count: number; timer: unknown }>();

  const sayCount = (reason: ClientRefusal["reason"]) => {
    const window = open.get(reason);
    if (window === undefined || window.count === 0) return false;
    const seconds = Math.round(intervalMs / 1000);
    logger.warn(`TLS: refused ${window.count} more in the last ${seconds} s: ${window.last.message}`, {
      event: "tls-refused",
      reason,
      code: window.last.code,
      count: window.count,
    });
    window.count = 0;
    return true;
  };
  const endOfInterval = (reason: ClientRefusal["reason"]) => {
    const window = open.get(reason);
    if (window === undefined) return;
    // Refusals came in this interval: said now, and another interval to count the next ones; none: afresh.
    if (sayCount(reason)) window.timer = timers.setTimeout(() => endOfInterval(reason), intervalMs);
    else open.delete(reason);
  };

  return {
    refused(refusal, peer) {
      const window = open.get(refusal.reason);
      if (window !== undefined) {
        window.count++;
        window.last = refusal;
        return;
      }
      // An IPv4 peer on a dual-stack socket reads ::ffff:127.0.0.1: logged as 127.0.0.1, as the request log does.
      const address = peer?.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, "");
      logger.warn(`TLS: refused ${refusal.message}${address ? ` from ${address}` : ""}`, {
        event: "tls-refused",
        reason: refusal.reason,
        code: refusal.code,
        ...(address ? { address } : {}),
      });
      const timer = timers.setTimeout(() => endOfInterval(refusal.reason), intervalMs);
      open.set(refusal.reason, { last: refusal, count: 0, timer });
    },
    flush() {
      for (const [reason, window] of open) {
        timers.clearTimeout(window.timer);
        sayCount(reason);
      }
      open.clear();
    },
  };
}
