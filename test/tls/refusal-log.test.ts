import { describe, expect, it } from "vitest";
import type { LogFields } from "../../src/log/logger.js";
import { certificateRefusal, NO_CERTIFICATE, PLAIN_HTTP } from "../../src/tls/client-refusal.js";
import { type RefusalTimers, refusalLog } from "../../src/tls/refusal-log.js";

// The throttled TLS refusal lines with a fake clock: per reason, the first at once with its details, then one count
// line per 10 s interval while refusals go on; an interval without any starts afresh.

/** A fake clock: timers run when `advance` passes their time. */
function fakeTimers() {
  let now = 0;
  const pending = new Map<number, { at: number; run: () => void }>();
  let next = 1;
  const timers: RefusalTimers = {
    setTimeout: (run, ms) => {
      pending.set(next, { at: now + ms, run });
      return next++;
    },
    clearTimeout: (handle) => pending.delete(handle as number),
  };
  const advance = (ms: number) => {
    const until = now + ms;
    for (;;) {
      const due = [...pending].filter(([, t]) => t.at <= until).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      pending.delete(due[0]);
      now = due[1].at;
      due[1].run();
    }
    now = until;
  };
  return { timers, advance, pending: () => pending.size };
}

function logged() {
  const lines: Array<{ message: string; fields: LogFields | undefined }> = [];
  const logger = {
    info: () => undefined,
    error: () => undefined,
    warn: (message: string, fields?: LogFields) => lines.push({ message, fields }),
  };
  return { logger, lines };
}

describe("refusalLog", () => {
  it("logs the first refusal of a reason at once, then a count per 10 s while they go on", () => {
    const clock = fakeTimers();
    const { logger, lines } = logged();
    const log = refusalLog(logger, 10_000, clock.timers);
    for (let i = 0; i < 5; i++) log.refused(NO_CERTIFICATE, "::ffff:127.0.0.1");
    expect(lines).toEqual([
      {
        message: "TLS: refused a client without a certificate (--tls-client-auth required) from 127.0.0.1",
        fields: {
          event: "tls-refused",
          reason: "no-certificate",
          code: "ERR_SSL_PEER_DID_NOT_RETURN_A_CERTIFICATE",
          address: "127.0.0.1",
        },
      },
    ]);
    clock.advance(9_999);
    expect(lines).toHaveLength(1);
    clock.advance(1);
    expect(lines[1]).toEqual({
      message: "TLS: refused 4 more in the last 10 s: a client without a certificate (--tls-client-auth required)",
      fields: {
        event: "tls-refused",
        reason: "no-certificate",
        code: "ERR_SSL_PEER_DID_NOT_RETURN_A_CERTIFICATE",
        count: 4,
      },
    });
    // Still going: counted again, said at the end of the next interval.
    log.refused(NO_CERTIFICATE, "127.0.0.1");
    log.refused(NO_CERTIFICATE, "127.0.0.1");
    clock.advance(10_000);
    expect(lines.map((l) => l.fields?.count)).toEqual([undefined, 4, 2]);
    // A quiet interval ends it: no line, no timer; the next refusal is a first line again, with its details.
    clock.advance(10_000);
    expect(lines).toHaveLength(3);
    expect(clock.pending()).toBe(0);
    log.refused(NO_CERTIFICATE, "10.0.0.7");
    expect(lines[3]?.message).toMatch(/^TLS: refused a client without a certificate .* from 10\.0\.0\.7$/);
  });

  it("throttles each reason on its own, and says what is left when flushed", () => {
    const clock = fakeTimers();
    const { logger, lines } = logged();
    const log = refusalLog(logger, 10_000, clock.timers);
    log.refused(NO_CERTIFICATE, "127.0.0.1");
    log.refused(PLAIN_HTTP, "127.0.0.1");
    log.refused(certificateRefusal("CERT_HAS_EXPIRED"), undefined);
    log.refused(PLAIN_HTTP, "127.0.0.1");
    log.refused(certificateRefusal("CERT_HAS_EXPIRED"), undefined);
    log.refused(certificateRefusal("CERT_HAS_EXPIRED"), undefined);
    expect(lines.map((l) => l.message)).toEqual([
      "TLS: refused a client without a certificate (--tls-client-auth required) from 127.0.0.1",
      "TLS: refused a plain-HTTP request on the HTTPS port (use https://) from 127.0.0.1",
      "TLS: refused an expired client certificate (CERT_HAS_EXPIRED)",
    ]);
    log.flush();
    expect(lines.slice(3).map((l) => l.message)).toEqual([
      "TLS: refused 1 more in the last 10 s: a plain-HTTP request on the HTTPS port (use https://)",
      "TLS: refused 2 more in the last 10 s: an expired client certificate (CERT_HAS_EXPIRED)",
    ]);
    expect(clock.pending()).toBe(0);
  });
});
