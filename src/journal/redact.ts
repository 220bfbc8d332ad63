import { isObject, parseJson } from "../envelope/json.js";
import type { CallDraft } from "./call-record.js";

const SECRET_HEADER =
  /^(authorization|proxy-authorization|cookie|set-cookie)$|token|secret|api[-_]?key|[-_]key$|password|session|credential/i;
/** A value that reads like a credential whatever its header is called. */
const SECRET_VALUE = /^(bearer|basic|digest|token|apikey)\s+\S/i;

export const REDACTED = "[redacted]";

const secret = (name: string, value: string) => SECRET_HEADER.test(name) || SECRET_VALUE.test(value.trim());

/** Header names lower-cased, values of credential-bearing headers replaced, before anything is stored. */
export function redactHeaders(headers: Iterable<[string, string]>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of headers) {
    const key = name.toLowerCase();
    out[key] = secret(key, value) ? REDACTED : value;
  }
  return out;
}

/**
 * Subscription.channel.header entries ("Name: value") carry the pharmacy's
 * credentials inside the message body: their secret values are replaced in
 * a subscribe message's envelope before the call is stored or written.
 */
function redactSubscriptionHeaders(body: string): string {
  const outer = parseJson(body);
  if (!outer.ok || !isObject(outer.value)) return body;
  // The request (and a --response-envelope answer) wraps the Bundle in {"content": "..."}; a response message is bare.
  const wrapped = typeof outer.value.content === "string";
  const bundle = wrapped ? parseJson(outer.value.content as string) : outer;
  if (!bundle.ok || !isObject(bundle.value) || !Array.isArray(bundle.value.entry)) return body;
  let changed = false;
  for (const entry of bundle.value.entry) {
    const resource = isObject(entry) ? entry.resource : undefined;
    if (!isObject(resource) || resource.resourceType !== "Subscription" || !isObject(resource.channel)) continue;
    const headers = resource.channel.header;
    if (!Array.isArray(headers)) continue;
    resource.channel.header = headers.map((line: unknown) => {
      if (typeof line !== "string") return line;
      const m = /^([^:]+):\s*(.*)$/.exec(line);
      if (!m || !secret((m[1] as string).trim(), m[2] as string)) return line;
      changed = true;
      return `${m[1]}: ${REDACTED}`;
    });
  }
  if (!changed) return body;
  return wrapped
    ? JSON.stringify({ ...outer.value, content: JSON.stringify(bundle.value) })
    : JSON.stringify(bundle.value);
}

/** What of a call may be kept: credentials in headers are redacted at the edge, those inside bodies here. */
export function redactCall(draft: CallDraft): CallDraft {
  if (draft.operation !== "subscribe-order-notifications") return draft;
  return {
    ...draft,
    request: { ...draft.request, body: redactSubscriptionHeaders(draft.request.body) },
    response: draft.response ? { ...draft.response, body: redactSubscriptionHeaders(draft.response.body) } : null,
  };
}
