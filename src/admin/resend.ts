import { isObject, parseJson } from "../envelope/json.js";
import type { CallRecord } from "../journal/call-record.js";
import { REDACTED } from "../journal/redact.js";

/** Headers that describe one connection or one body's encoding: the new request gets its own. */
const NOT_RESENT = new Set([
  "host",
  "content-length",
  "connection",
  "keep-alive",
  "transfer-encoding",
  "accept-encoding",
]);

/** The message Bundle of a body, and how to write it back in the same form (the envelope, or a bare Bundle). */
function bundleOf(text: string): { bundle: Record<string, unknown>; write(bundle: unknown): string } | undefined {
  const body = parseJson(text);
  if (!body.ok || !isObject(body.value)) return undefined;
  const outer = body.value;
  if (outer.resourceType === "Bundle") return { bundle: outer, write: (b) => JSON.stringify(b) };
  if (typeof outer.content !== "string") return undefined;
  const inner = parseJson(outer.content);
  if (!inner.ok || !isObject(inner.value)) return undefined;
  return { bundle: inner.value, write: (b) => JSON.stringify({ ...outer, content: JSON.stringify(b) }) };
}

/**
 * The body with a new MessageHeader id (and the header entry's fullUrl, when
 * it named the old id), so that the sandbox processes the message again
 * instead of answering it as a resend. A body without a MessageHeader is
 * sent as it was.
 */
export function withNewMessageId(text: string, newId: string): string {
  const found = bundleOf(text);
  const first = found && Array.isArray(found.bundle.entry) ? found.bundle.entry[0] : undefined;
  if (!found || !isObject(first) || !isObject(first.resource) || first.resource.resourceType !== "MessageHeader")
    return text;
  const oldId = first.resource.id;
  const fullUrl =
    typeof first.fullUrl === "string" && typeof oldId === "string" && first.fullUrl.endsWith(oldId)
      ? `${first.fullUrl.slice(0, -oldId.length)}${newId}`
      : first.fullUrl;
  const entries = [...(found.bundle.entry as unknown[])];
  entries[0] = { ...first, ...(fullUrl === undefined ? {} : { fullUrl }), resource: { ...first.resource, id: newId } };
  return found.write({ ...found.bundle, entry: entries });
}

/**
 * A recorded inbound call as a request to send again: the same method, URL,
 * headers and body, or a new MessageHeader id; headers the journal redacted
 * are left out (their values were never kept).
 */
export function resendRequest(call: CallRecord, newMessageId: string | undefined): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(call.request.headers)) {
    if (value !== REDACTED && !NOT_RESENT.has(name.toLowerCase())) headers.set(name, value);
  }
  const body = newMessageId === undefined ? call.request.body : withNewMessageId(call.request.body, newMessageId);
  const hasBody = call.request.method !== "GET" && call.request.method !== "HEAD";
  return new Request(call.request.url, { method: call.request.method, headers, ...(hasBody ? { body } : {}) });
}
