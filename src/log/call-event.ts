import type { CallRecord } from "../journal/call-record.js";
import { bodyLength } from "../journal/kept-call.js";
import { DEFAULT_WORKSPACE } from "../workspace/workspace-name.js";

/**
 * One recorded call as a log event: what a person scanning the console and a
 * log shipper both need, no bodies. JSON keys are stable (docs/logging.md).
 */
export interface CallEvent {
  event: "call";
  callId: string;
  /** The workspace the call acted in, when not the default one (a shared sandbox's log names the team). */
  workspace?: string;
  direction: "inbound" | "outbound";
  /** The operation (inbound) or push event (outbound); null when it could not be told. */
  operation: string | null;
  method: string;
  path: string;
  /** HTTP status; null when nothing answered (a fault, a push that got no answer). */
  status: number | null;
  /** MessageHeader.response.code of a response message; null for other bodies. */
  responseCode: string | null;
  /** The scenario rule that answered, or null. */
  rule: string | null;
  /** Who answered an inbound call: the rule's name, "built-in", or "upstream" (--proxy). */
  answeredBy?: string;
  durationMs: number;
  messageId: string | null;
  /** The first issue's diagnostics of a refusal (a bare OperationOutcome, or a response message that is not ok). */
  issue?: string;
  fault?: string;
  duplicate?: true;
  /** Why a push attempt got no answer (not for a scripted fault: `fault` says it). */
  error?: string;
  /** Pushes: the pharmacy's licence, where to, and which attempt. */
  pharmacy?: string;
  target?: string;
  attempt?: number;
}

/** `"response": {… "code": "x"`, also inside a {"content": "…"} envelope (escaped quotes). */
const RESPONSE_CODE = /\\?"response\\?"\s*:\s*\{(?:[^{}]|\{[^{}]*\})*?\\?"code\\?"\s*:\s*\\?"([a-z-]+)\\?"/;
/** The MessageHeader is the first entry: its response is within the first few kilobytes of any answer. */
const HEADER_WINDOW = 8 * 1024;
/** Refusals are read for their first issue only when small: a refusal is a few kilobytes. */
const ISSUE_BODY_LIMIT = 64 * 1024;
/** Diagnostics longer than this are cut in the log (the journal has them whole). */
const ISSUE_LENGTH = 240;

/**
 * The log event of a recorded call. Its response code is the one the pipeline
 * passed along; for an answer the sandbox did not build (an upstream's, a
 * receiver's, a rule's `body`) it reads the start of the body for it. It
 * parses a body only for a refusal's first issue.
 */
export function callEvent(call: CallRecord): CallEvent {
  const status = call.response?.status ?? null;
  // The body's length without its text: a packed journal body would be inflated only to be measured.
  const length = call.response ? bodyLength(call.response) : 0;
  const responseCode =
    length === 0
      ? null
      : call.responseCode !== undefined
        ? call.responseCode
        : (RESPONSE_CODE.exec((call.response?.body ?? "").slice(0, HEADER_WINDOW))?.[1] ?? null);
  const refused = status !== null && (status >= 400 || (responseCode !== null && responseCode !== "ok"));
  const issue = refused && length <= ISSUE_BODY_LIMIT ? firstIssue(call.response?.body ?? "") : undefined;
  // One literal with every member, in the order of the JSON line: members left undefined are not written.
  return {
    event: "call",
    callId: call.id,
    workspace: call.workspace !== DEFAULT_WORKSPACE ? call.workspace : undefined,
    direction: call.direction,
    operation: call.operation,
    method: call.request.method,
    path: call.request.path,
    status,
    responseCode,
    rule: call.rule,
    answeredBy:
      call.direction === "inbound" ? (call.rule ?? (call.upstream !== undefined ? "upstream" : "built-in")) : undefined,
    durationMs: call.durationMs,
    messageId: call.messageId,
    issue,
    fault: call.fault,
    duplicate: call.duplicate ? true : undefined,
    // A fault that sent nothing carries its own name again as the journal's error ("scripted fault: …"): said once.
    error: call.fault === undefined ? call.error : undefined,
    pharmacy: call.pharmacy,
    target: call.target,
    attempt: call.attempt,
  };
}

/** The diagnostics (else the code) of the first OperationOutcome issue in a body, enveloped or not. */
function firstIssue(text: string): string | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
    const content = (value as { content?: unknown } | null)?.content;
    if (typeof content === "string") value = JSON.parse(content);
  } catch {
    return undefined;
  }
  const outcome = outcomeOf(value);
  const first = outcome?.issue?.[0];
  const said = first?.diagnostics ?? first?.details?.text ?? first?.code;
  if (typeof said !== "string") return undefined;
  return said.length > ISSUE_LENGTH ? `${said.slice(0, ISSUE_LENGTH - 1)}…` : said;
}

interface Outcome {
  resourceType: "OperationOutcome";
  issue?: Array<{ code?: unknown; diagnostics?: unknown; details?: { text?: unknown } }>;
}

/** The OperationOutcome itself, or the first one among a Bundle's entries. */
function outcomeOf(value: unknown): Outcome | undefined {
  const resource = value as { resourceType?: unknown; entry?: Array<{ resource?: { resourceType?: unknown } }> } | null;
  if (resource?.resourceType === "OperationOutcome") return resource as Outcome;
  if (resource?.resourceType !== "Bundle" || !Array.isArray(resource.entry)) return undefined;
  return resource.entry.find((e) => e?.resource?.resourceType === "OperationOutcome")?.resource as Outcome | undefined;
}
