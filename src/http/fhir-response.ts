import type { Context } from "hono";
import { type Issue, operationOutcome } from "../fhir/outcome.js";
import { HEADER_NAME } from "../text/http-field.js";
import { jsonText } from "../text/json-text.js";
import { ANSWER_HEADERS } from "./answer-headers.js";
import type { CallState } from "./call-state.js";
import { type Dribble, dribbleStream } from "./dribble.js";
import type { EdgeEnv } from "./edge-env.js";
import { httpTrim, insertInOrder } from "./raw-headers.js";
import { ruleHeaderValue } from "./rule-header.js";

export const FHIR_JSON = "application/fhir+json; charset=utf-8";
/** The `{"content": "<Bundle JSON>"}` envelope is JSON that holds FHIR, not a FHIR resource: plain JSON. */
export const ENVELOPE_JSON = "application/json; charset=utf-8";

/**
 * Sends a FHIR body (CONTRACT §4: every FHIR body is application/fhir+json)
 * and keeps its text for the journal. The answer carries the edge's headers (ANSWER_HEADERS) already, after the
 * rule's: the edge (answerHeaders) then leaves it alone, and no web `Headers` is built on the hot path. The
 * journal keeps the headers without them, as it does for every answer.
 */
export function fhirResponse(
  c: Context<EdgeEnv>,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
  /** The body already serialized, as jsonText writes it (`<`, `>`, `&` escaped), to save serializing it twice. */
  serialized?: string,
  /** A rule's `dribble`: the body streamed in pieces over a time; the journal keeps it whole all the same. */
  dribble?: Dribble,
): Response {
  const text = serialized ?? jsonText(body);
  const call = c.get("call");
  const plain = { "content-type": FHIR_JSON, ...headers };
  const sent = dribble ? () => dribbleStream(text, dribble) : () => text;
  if (!call) return new Response(sent(), { status, headers: { ...plain, ...ANSWER_HEADERS } });
  const answered = fhirAnswer(call, text, plain);
  if (!answered) return new Response(sent(), { status, headers: { ...plain, ...ANSWER_HEADERS } });
  const response = new Response(sent(), { status, headers: answered.sent });
  call.answered = { response, headers: answered.recorded };
  return response;
}

/** A FHIR answer's headers: as the journal keeps them (X-Sandbox-* in, the edge's out) and as they are sent. */
export interface AnswerHeaders {
  recorded: Record<string, string>;
  sent: Record<string, string>;
}

/**
 * A recorded call's FHIR answer, framework-free (fhirResponse's and the Node message path's): keeps its text for
 * the journal and gives its headers; undefined when a rule's header is one `Headers` would refuse.
 * `plain`: Content-Type and the rule's headers.
 */
export function fhirAnswer(call: CallState, text: string, plain: Record<string, string>): AnswerHeaders | undefined {
  call.responseText = text;
  call.responseJson = true;
  const recorded = withCallHeaders(plain, call.id, call.rule);
  return recorded && { recorded, sent: withAnswerHeaders(recorded) };
}

/**
 * A JSON answer that is not FHIR (the admin API's views, OAuth2 documents): `c.json`'s, its text as jsonText
 * writes it.
 */
export function jsonResponse(value: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(jsonText(value), { status, headers: { "content-type": "application/json", ...headers } });
}

/**
 * Header values `Headers` refuses (a line break, NUL, a character beyond Latin-1, as a template may render): the
 * recorder then sets its headers as before, meets the same error, and the call is answered 500 with no record.
 */
const BAD_VALUE = /[\0\r\n]|[^\0-\xff]/u;

/**
 * An answer's headers as a web `Headers` would hold them once the recorder had set X-Sandbox-Call-Id and
 * X-Sandbox-Rule (CONTRACT §5): names lower-cased and in name order, values trimmed, a name given in two cases
 * joined with ", ". As a plain object the Node adapter writes them without building a `Headers`. Undefined when a
 * name or value is one `Headers` would refuse.
 */
function withCallHeaders(
  headers: Record<string, string>,
  callId: string,
  rule: string | null,
): Record<string, string> | undefined {
  const merged: Record<string, string> = {};
  // Names in code-unit order as they come (Array#sort's order).
  const keys: string[] = [];
  /** `join`: a name given twice keeps both values, as `Headers.append`; else the value replaces, as `set`. */
  const put = (key: string, value: string, join: boolean) => {
    // Own members only: `constructor` is a header name like any other (Object's would be read as a first value).
    const before = Object.hasOwn(merged, key) ? merged[key] : undefined;
    if (before !== undefined) {
      merged[key] = join ? `${before}, ${value}` : value;
      return;
    }
    merged[key] = value;
    insertInOrder(keys, key);
  };
  for (const name in headers) {
    const value = httpTrim(headers[name] as string);
    if (!HEADER_NAME.test(name) || BAD_VALUE.test(value)) return undefined;
    put(name.toLowerCase(), value, true);
  }
  put("x-sandbox-call-id", callId, false);
  if (rule) put("x-sandbox-rule", ruleHeaderValue(rule), false);
  const sorted: Record<string, string> = {};
  for (const key of keys) sorted[key] = merged[key] as string;
  return sorted;
}

const EDGE = Object.entries(ANSWER_HEADERS).sort(([a], [b]) => (a < b ? -1 : 1));

/** Headers in name order (withCallHeaders's) with ANSWER_HEADERS put in their places, replacing a rule's. */
function withAnswerHeaders(sorted: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  let i = 0;
  for (const name in sorted) {
    for (let edge = EDGE[i]; edge !== undefined && edge[0] <= name; edge = EDGE[++i]) out[edge[0]] = edge[1];
    if (!(name in ANSWER_HEADERS)) out[name] = sorted[name] as string;
  }
  for (const [name, value] of EDGE.slice(i)) out[name] = value;
  return out;
}

/** A bare OperationOutcome: the answer to a message that was not processed. */
export function outcomeResponse(
  c: Context<EdgeEnv>,
  status: number,
  issues: Issue[],
  headers: Record<string, string> = {},
): Response {
  return fhirResponse(c, status, operationOutcome(issues), headers);
}

/** A bare OperationOutcome where no call is recorded (the admin API, the edge's refusals). */
export function outcomeOnly(status: number, issues: Issue[], headers: Record<string, string> = {}): Response {
  return new Response(jsonText(operationOutcome(issues)), {
    status,
    headers: { "content-type": FHIR_JSON, ...headers },
  });
}
