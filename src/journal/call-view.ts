import { decodeEnvelope } from "../envelope/envelope.js";
import { parseJson } from "../envelope/json.js";
import { escapeJsonText, jsonText } from "../text/json-text.js";
import { oneLineJson } from "../text/one-line-json.js";
import type { CallRecord } from "./call-record.js";

/** A body as shown by the admin API: parsed JSON when it is JSON, else the text. */
function shown(text: string): unknown {
  if (text === "") return null;
  const parsed = parseJson(text);
  return parsed.ok ? parsed.value : text;
}

/**
 * A side of a call with its body replaced, the other members in their order. Not a spread: a spread would read
 * the journal's `body`, which unpacks it (PackedTexts), only to throw it away.
 */
function withBody<T extends { body: string }>(side: T, body: unknown): Omit<T, "body"> & { body: unknown } {
  const out: Record<string, unknown> = {};
  for (const key in side) out[key] = key === "body" ? body : side[key];
  return out as Omit<T, "body"> & { body: unknown };
}

/** The admin API's view of a recorded call (CONTRACT §9). */
export function callView(call: CallRecord) {
  const { size: _size, trace: _trace, jsonBodies: _json, responseCode: _code, at, request, response, ...rest } = call;
  return {
    ...rest,
    at: at.toISOString(),
    request: withBody(request, shown(request.body)),
    response: response ? withBody(response, shown(response.body)) : null,
  };
}

const BODY_SLOT = '"body":null}';

/**
 * `jsonText(callView(call))`, its `id` first and then `head`'s
 * members, on one line: a line of NDJSON (the journal file, `format=ndjson`,
 * the export), whatever the bodies hold, with `<`, `>` and `&` escaped as
 * everywhere. Bodies known to be JSON (`jsonBodies`) are not parsed and
 * serialized again (that cost a hundred microseconds per call, on every
 * journal-file write and listing): their text goes into the line as it is
 * when it is one line already, which anything the sandbox serialized and most
 * clients' requests are; a request written with line breaks (pretty-printed,
 * a trailing newline) goes in compacted (oneLineJson), never with its breaks.
 * A request body's bytes are kept as sent: only this line's copy is escaped.
 *
 * @example
 *   writeSync(fd, `${callJson(call, { highestIdIssued: "12" })}\n`);
 */
export function callJson(call: CallRecord, head: Record<string, unknown> = {}): string {
  if (!call.jsonBodies) {
    const { id, ...view } = callView(call);
    // JSON.stringify leaves U+2028 and U+2029 raw in strings (a non-JSON body, a header): escaped here.
    return oneLineJson(jsonText({ id, ...head, ...view }));
  }
  const {
    id,
    size: _size,
    trace: _trace,
    jsonBodies: _json,
    responseCode: _code,
    at,
    request,
    response,
    ...rest
  } = call;
  const skeleton = JSON.stringify({
    id,
    ...head,
    ...rest,
    at: at.toISOString(),
    request: withBody(request, null),
    response: response ? withBody(response, null) : null,
  });
  // A body is the last member of its object; no JSON string can hold `"body":null}` unescaped, so the first slot is
  // the request's and the last the response's.
  const first = skeleton.indexOf(BODY_SLOT);
  const slot = (text: string) => `"body":${text === "" ? "null" : text}}`;
  const last = skeleton.lastIndexOf(BODY_SLOT);
  const line = !response
    ? skeleton.slice(0, first) + slot(request.body) + skeleton.slice(first + BODY_SLOT.length)
    : skeleton.slice(0, first) +
      slot(request.body) +
      skeleton.slice(first + BODY_SLOT.length, last) +
      slot(response.body) +
      skeleton.slice(last + BODY_SLOT.length);
  // The whole line at once: one scan each in the common case, where the spliced bodies and the skeleton are one line.
  return escapeJsonText(oneLineJson(line));
}

const bundles = new WeakMap<CallRecord, Record<string, unknown> | null>();

/** The message Bundle a call carried (request side), decoded once and cached. */
export function requestBundle(call: CallRecord): Record<string, unknown> | undefined {
  let bundle = bundles.get(call);
  if (bundle === undefined) {
    const decoded = decodeEnvelope(call.request.body, true);
    bundle = decoded.ok ? decoded.bundle : null;
    bundles.set(call, bundle);
  }
  return bundle ?? undefined;
}
