import type { MiddlewareHandler } from "hono";
import type { SandboxEvents } from "../events.js";
import type { CallDraft } from "../journal/call-record.js";
import { headerRecord } from "../journal/redact.js";
import type { Workspace } from "../workspace/workspace.js";
import { requestUrl } from "./call-context.js";
import { newCallState } from "./call-state.js";
import type { EdgeEnv } from "./edge-env.js";
import { requestHeaders } from "./request-headers.js";

export interface RecorderDeps {
  now(): Date;
  /** Monotonic milliseconds, for durations. */
  monotonic(): number;
  /** The journal id of a call starting now (the process-wide sequence). */
  reserveId(): string;
  /** The sandbox-wide bus: calls that belong to no workspace are announced there (the refused log listens). */
  events: SandboxEvents;
}

/**
 * Wraps every non-admin call: when it has been answered, announces it as a
 * `call:completed` event of its workspace with what the handlers left in its
 * call state (headers as they came: the journal redacts before it stores).
 * A call that belongs to no workspace — an anonymous caller's under --auth
 * oauth2, or one refused before a workspace was chosen — is announced as
 * `call:anonymous` on the sandbox-wide bus instead (CONTRACT §15): one
 * recorder, and the observers decide what to keep.
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
      const draft: CallDraft = {
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
      };
      if (call.kept) draft.kept = call.kept;
      // Unset when the workspace choice refused the call.
      const workspace = c.get("workspace") as Workspace | undefined;
      if (workspace && !c.get("anonymous")) workspace.events.emit("call:completed", draft);
      else deps.events.emit("call:anonymous", { workspace: c.get("namedWorkspace") ?? null, call: draft });
    }
  };
}
