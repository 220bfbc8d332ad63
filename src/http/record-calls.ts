import type { MiddlewareHandler } from "hono";
import { headerRecord } from "../journal/redact.js";
import type { EdgeEnv } from "./fhir-response.js";

export interface RecorderDeps {
  now(): Date;
  /** Monotonic milliseconds, for durations. */
  monotonic(): number;
  /** The journal id of a call starting now (the process-wide sequence). */
  reserveId(): string;
}

/**
 * Wraps every non-admin call: when it has been answered, announces it as a
 * `call:completed` event of its workspace with what the handlers left in the
 * context (headers as they came: the journal redacts before it stores).
 */
export function recordCalls(deps: RecorderDeps): MiddlewareHandler<EdgeEnv> {
  return async (c, next) => {
    const at = deps.now();
    const started = deps.monotonic();
    const id = deps.reserveId();
    c.set("call", { id, at });
    c.set("bodyText", "");
    c.set("responseText", "");
    c.set("requestJson", false);
    c.set("responseJson", false);
    c.set("operation", null);
    c.set("messageId", null);
    c.set("duplicate", false);
    c.set("rule", null);
    c.set("fault", null);
    c.set("upstream", null);
    c.set("trace", undefined);
    try {
      await next();
      // CONTRACT §5: every answer names its journal call, and the rule that answered.
      const rule = c.get("rule");
      try {
        c.res.headers.set("X-Sandbox-Call-Id", id);
        if (rule) c.res.headers.set("X-Sandbox-Rule", rule);
      } catch {
        // A scripted fault has no answer whose headers could change.
      }
    } finally {
      record();
    }

    function record() {
      const url = new URL(c.req.url);
      const fault = c.get("fault");
      // A reset or a timeout sends nothing: there is no response to record, only the fault.
      const unanswered = fault === "connection-reset" || fault === "timeout";
      c.get("workspace").events.emit("call:completed", {
        id,
        direction: "inbound",
        at,
        durationMs: Math.round((deps.monotonic() - started) * 1000) / 1000,
        operation: c.get("operation"),
        messageId: c.get("messageId"),
        rule: c.get("rule"),
        ...(c.get("duplicate") ? { duplicate: true } : {}),
        ...(c.get("upstream") ? { upstream: c.get("upstream") as string } : {}),
        ...(c.get("trace") ? { trace: c.get("trace") } : {}),
        ...(fault ? { fault, ...(unanswered ? { error: `scripted fault: ${fault}` } : {}) } : {}),
        ...(c.get("requestJson") && c.get("responseJson") && !unanswered ? { jsonBodies: true as const } : {}),
        request: {
          method: c.req.method,
          url: url.href,
          path: url.pathname,
          headers: headerRecord(c.req.raw.headers),
          body: c.get("bodyText"),
        },
        response: unanswered
          ? null
          : {
              status: c.res.status,
              headers: headerRecord(c.res.headers),
              body: c.get("responseText"),
            },
      });
    }
  };
}
