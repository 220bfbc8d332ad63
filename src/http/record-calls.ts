import type { MiddlewareHandler } from "hono";
import type { SandboxEvents } from "../events.js";
import type { CallDraft } from "../journal/call-record.js";
import { headerRecord } from "../journal/redact.js";
import type { StateWriteError } from "../state/state-file.js";
import { RETRY_AFTER_S, unsavedIssue } from "../workspace/unsaved-answer.js";
import type { Workspace } from "../workspace/workspace.js";
import { requestUrl } from "./call-context.js";
import { type CallState, newCallState } from "./call-state.js";
import type { EdgeEnv } from "./edge-env.js";
import { outcomeResponse } from "./fhir-response.js";
import { requestHeaderRecord } from "./raw-headers.js";
import { requestHeaders } from "./request-headers.js";
import { ruleHeaderValue } from "./rule-header.js";

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
          stampCall(c.res.headers, call);
        } catch {
          // A scripted fault has no answer whose headers could change.
        }
      }
    } finally {
      record();
    }

    function record() {
      const url = requestUrl(c, call);
      const durationMs = Math.round((deps.monotonic() - started) * 1000) / 1000;
      const draft = () =>
        callDraft(call, durationMs, { method: c.req.method, url: url.href, path: url.pathname }, () => ({
          status: c.res.status,
          headers: call.answered ? call.answered.headers : headerRecord(c.res.headers),
        }));
      const owner: CallOwner = {
        // Unset when the workspace choice refused the call.
        workspace: c.get("workspace") as Workspace | undefined,
        anonymous: c.get("anonymous"),
        namedWorkspace: c.get("namedWorkspace") ?? null,
        events: deps.events,
      };
      let unsaved: StateWriteError | undefined;
      try {
        unsaved = announceCall(draft(), owner);
      } catch (error) {
        // An answer whose headers `Headers` refused leaves no record (a 500): what the message changed is written.
        owner.workspace?.unjournaled(call.id);
        throw error;
      }
      if (!unsaved) return;
      // Its message could not be saved: the 503 goes out instead (none of the built answer's headers), recorded.
      if (unsavedCall(call)) {
        c.res = undefined;
        c.res = outcomeResponse(c, 503, [unsavedIssue(unsaved)], { "Retry-After": String(RETRY_AFTER_S) });
      }
      announceCall(draft(), owner);
    }
  };
}

/** CONTRACT §5 on an answer fhirResponse did not build: the journal call it is, and the rule that answered. */
export function stampCall(headers: Headers, call: CallState): void {
  headers.set("X-Sandbox-Call-Id", call.id);
  if (call.rule) headers.set("X-Sandbox-Rule", ruleHeaderValue(call.rule));
}

/** A scripted fault that sends nothing: there is no response to record, only the fault. */
const unanswered = (fault: string | null) => fault === "connection-reset" || fault === "timeout";

/**
 * The journal draft of an inbound call, from what the edge left in its call state: the Hono recorder's and the
 * Node message path's. `response` is asked only when something was sent.
 */
export function callDraft(
  call: CallState,
  durationMs: number,
  request: { method: string; url: string; path: string },
  response: () => { status: number; headers: Record<string, string> },
): CallDraft {
  const { fault } = call;
  const silent = unanswered(fault);
  let answered: { status: number; headers: Record<string, string>; body: string } | null = null;
  if (!silent) {
    const { status, headers } = response();
    answered = { status, headers, body: call.responseText };
  }
  // Members set one by one, in the record's order: a spread of `cond ? {…} : {}` allocates an object either way.
  const draft: CallDraft = {
    id: call.id,
    direction: "inbound",
    at: call.at,
    durationMs,
    operation: call.operation,
    messageId: call.messageId,
    rule: call.rule,
  } as CallDraft;
  if (call.duplicate) draft.duplicate = true;
  if (call.upstream) draft.upstream = call.upstream;
  if (call.asyncAnswer) draft.asyncAnswer = call.asyncAnswer;
  if (call.trace) draft.trace = call.trace;
  if (call.responseCode !== undefined) draft.responseCode = call.responseCode;
  if (fault) {
    draft.fault = fault;
    if (silent) draft.error = `scripted fault: ${fault}`;
  }
  if (call.requestJson && call.responseJson && !silent) draft.jsonBodies = true;
  draft.request = {
    method: request.method,
    url: request.url,
    path: request.path,
    headers: requestHeaderRecord(call.headers),
    body: call.bodyText,
  };
  draft.response = answered;
  // The texts the duplicate memory kept, for the journal to share, and the answer's bytes (not recorded).
  if (call.responseBytes) draft.kept = { ...call.kept, responseBytes: call.responseBytes };
  else if (call.kept) draft.kept = call.kept;
  return draft;
}

/** Who a call belongs to, as the workspace choice left it. */
export interface CallOwner {
  /** Unset when the workspace choice refused the call. */
  workspace: Workspace | undefined;
  anonymous: boolean;
  namedWorkspace: string | null;
  /** The sandbox-wide bus. */
  events: SandboxEvents;
}

/**
 * Announces a call: in its workspace (`call:completed`), or as anonymous on the sandbox-wide bus (CONTRACT §15).
 * Returns why its message's changes could not be written to the state file, if so: the call was not recorded, and
 * the edge answers 503 instead (unsavedCall) and announces that.
 */
export function announceCall(draft: CallDraft, owner: CallOwner): StateWriteError | undefined {
  if (owner.workspace && !owner.anonymous) return owner.workspace.record(draft);
  owner.events.emit("call:anonymous", { workspace: owner.namedWorkspace, call: draft });
  // A workspace that stood in for the answer (a message's 401) settles what it began for the call.
  return draft.id === undefined ? undefined : owner.workspace?.unjournaled(draft.id);
}

/**
 * A call whose message could not be saved, before it is recorded again: nothing of the built answer is its own now.
 * True when the 503 is to be sent instead; false for a fault that sends nothing (the connection is gone already).
 */
export function unsavedCall(call: CallState): boolean {
  call.duplicate = false;
  call.rule = null;
  call.trace = undefined;
  call.responseCode = null;
  // The texts the duplicate memory kept went with the workspace's step back to the file; the 503 has other bytes.
  call.kept = undefined;
  call.responseBytes = undefined;
  // Not accepted after all: its asynchronous answer is not sent (ResponseDelivery.withdrawn).
  call.asyncAnswer = undefined;
  if (unanswered(call.fault)) return false;
  call.fault = null;
  return true;
}
