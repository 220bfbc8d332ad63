import type { CallRecord } from "./call-record.js";

/** A response message's MessageHeader.response.code (R4 response-code: ok | transient-error | fatal-error). */
export type ResponseCode = "ok" | "transient-error" | "fatal-error";

/**
 * `"response": {…"code": "ok"…}` near the start of a body, quotes escaped or not (a response envelope holds the
 * Bundle as a JSON string). The MessageHeader is a message's first entry, so its response sits in the first
 * few kilobytes: reading them beats parsing a profile of hundreds of kilobytes for one word.
 */
const RESPONSE_CODE = /\\?"response\\?"\s*:\s*\{[^{}]*?\\?"code\\?"\s*:\s*\\?"(ok|transient-error|fatal-error)\\?"/;
const HEAD = 8 * 1024;

const codes = new WeakMap<CallRecord, ResponseCode | null>();

/** The response code of the answer a call got, when the answer was a FHIR response message; else null. */
export function responseCode(call: CallRecord): ResponseCode | null {
  let code = codes.get(call);
  if (code === undefined) {
    const body = call.response?.body ?? "";
    code = (RESPONSE_CODE.exec(body.slice(0, HEAD))?.[1] as ResponseCode | undefined) ?? null;
    codes.set(call, code);
  }
  return code;
}

/**
 * A call without its bodies and headers: what a list of calls shows
 * (GET /__admin/calls?view=summary, the dashboard's live events).
 *
 * @example
 *   callSummary(call) // { id: "7", direction: "inbound", operation: "add-allergy", status: 200, code: "ok", … }
 */
export function callSummary(call: CallRecord) {
  return {
    id: call.id,
    at: call.at.toISOString(),
    direction: call.direction,
    method: call.request.method,
    path: call.request.path,
    operation: call.operation,
    messageId: call.messageId,
    status: call.response?.status ?? null,
    code: responseCode(call),
    rule: call.rule,
    durationMs: call.durationMs,
    ...(call.duplicate ? { duplicate: true } : {}),
    ...(call.fault ? { fault: call.fault } : {}),
    ...(call.error ? { error: call.error } : {}),
    ...(call.target ? { target: call.target, attempt: call.attempt } : {}),
    ...(call.asyncAnswer ? { asyncAnswer: call.asyncAnswer } : {}),
    ...(call.respondsTo !== undefined ? { respondsTo: call.respondsTo } : {}),
  };
}

export type CallSummary = ReturnType<typeof callSummary>;
