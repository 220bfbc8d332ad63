import type { MiddlewareHandler } from "hono";
import { headerRecord } from "../journal/redact.js";
import { newCallState, requestUrl } from "./call-state.js";
import type { EdgeEnv } from "./fhir-response.js";
import { requestHeaders } from "./request-headers.js";

export interface RecorderDeps {
  now(): Date;
  /** Monotonic milliseconds, for durations. */
  monotonic(): number;
  /** The journal id of a call starting now (the process-wide sequence). */
  reserveId(): string;
}

/**
 * Wraps every non-admin call: when it has been answered, announces it as a
 * `call:completed` event of its workspace with what the handlers left in its
 * call state (headers as they came: the journal redacts before it stores).
 */
export function recordCalls(deps: RecorderDeps): MiddlewareHandler<EdgeEnv> {
  return async (c, next) => {
    const at = deps.now();
    const started = deps.monotonic();
    const call = newCallState(deps.reserveId(), at, requestHeaders(c));
    c.set("call", call);
    try {
      await next();
      // CONTRACT §5: every answer names its journal call, and the rule that answered. fhirResponse wrote them
      // already into the answers it built; others get them here.
      if (call.answered?.response !== c.res) {
        call.answered = undefined;
        try {
          c.res.headers.set("X-Sandbox-Call-Id", call.id);
          if (call.rule) c.res.headers.set("X-Sandbox-Rule", call.rule);
        } catch {
          // A scripted fault has no answer whose headers could change.
        }
      }
    } finally {
      record();
    }

    function record() {
      const url = requestUrl(c, call);
      const { fault } = call;
      // A reset or a timeout sends nothing: there is no response to record, only the fault.
      const unanswered = fault === "connection-reset" || fault === "timeout";
      c.get("workspace").events.emit("call:completed", {
        id: call.id,
        direction: "inbound",
        at: call.at,
        durationMs: Math.round((deps.monotonic() - started) * 1000) / 1000,
        operation: call.operation,
        messageId: call.messageId,
        rule: call.rule,
        ...(call.duplicate ? { duplicate: true } : {}),
        ...(call.upstream ? { upstream: call.upstream } : {}),
        ...(call.trace ? { trace: call.trace } : {}),
        ...(fault ? { fault, ...(unanswered ? { error: `scripted fault: ${fault}` } : {}) } : {}),
        ...(call.requestJson && call.responseJson && !unanswered ? { jsonBodies: true as const } : {}),
        request: {
          method: c.req.method,
          url: url.href,
          path: url.pathname,
          headers: headerRecord(call.headers),
          body: call.bodyText,
        },
        response: unanswered
          ? null
          : {
              status: c.res.status,
              headers: call.answered ? call.answered.headers : headerRecord(c.res.headers),
              body: call.responseText,
            },
      });
    }
  };
}
