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
 * the journal's `body`, which unpacks it (PackedTexts), only to throw it away; and a recorded side's `body` is a
 * getter on its prototype, which a spread leaves out (it comes last, as in every draft).
 */
function withBody<T extends { body: string }>(side: T, body: unknown): Omit<T, "body"> & { body: unknown } {
  const out: Record<string, unknown> = {};
  let placed = false;
  for (const key in side) {
    if (key !== "body") out[key] = side[key];
    else {
      out.body = body;
      placed = true;
    }
  }
  if (!placed) out.body = body;
  return out as Omit<T, "body"> & { body: unknown };
}

/** The admin API's view of a recorded call (CONTRACT §9). */
export function callView(call: CallRecord) {
  const {
    size: _size,
    trace: _trace,
    traceNotKept: _notKept,
    jsonBodies: _json,
    responseCode: _code,
    at,
    request,
    response,
    ...rest
  } = call;
  return {
    ...rest,
    at: at.toISOString(),
    request: withBody(request, shown(request.body)),
    response: response ? withBody(response, shown(response.body)) : null,
  };
}

const BODY_SLOT = '"body":null}';

/** Members of a record its line leaves out or puts in its own place. */
const PLACED = new Set([
  "id",
  "size",
  "trace",
  "traceNotKept",
  "jsonBodies",
  "responseCode",
  "at",
  "request",
  "response",
]);

/**
 * `{ id, ...head, ...rest, at, request, response }` of a call, bodies null, built member by member: an object rest
 * and two spreads cost about as much as serializing the result.
 */
function skeletonOf(call: CallRecord, head: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { id: call.id };
  for (const key in head) out[key] = head[key];
  for (const key in call) if (!PLACED.has(key)) out[key] = call[key as keyof CallRecord];
  out.at = call.at.toISOString();
  out.request = withBody(call.request, null);
  out.response = call.response ? withBody(call.response, null) : null;
  return out;
}

/**
 * Whether JSON.stringify's text needs neither escapeJsonText nor oneLineJson: no `<`, `>`, `&`, and no U+0085, U+2028
 * or U+2029 (the line breaks it leaves raw in strings; it writes no other, and no lone surrogate). One search a
 * character: V8 searches for one character as fast as memchr, and a one-byte string holds no U+2028 or U+2029.
 */
function isPlainJson(json: string): boolean {
  return (
    !json.includes("<") &&
    !json.includes(">") &&
    !json.includes("&") &&
    !json.includes("\u0085") &&
    !json.includes("\u2028") &&
    !json.includes("\u2029")
  );
}

/** Where callJsonParts puts a call's JSON: its text around the bodies, and the bodies themselves. */
export interface CallJsonSink {
  /** Text of the line, ready to write. */
  text(json: string): void;
  /** A body known to be JSON, put in as it is: on one line, with `<`, `>` and `&` escaped, and "" as null. */
  body(side: { body: string }): void;
}

/** A body's JSON as callJson puts it in. */
export function bodyJson(text: string): string {
  return text === "" ? "null" : escapeJsonText(oneLineJson(text));
}

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
  let line = "";
  callJsonParts(call, head, {
    text: (json) => {
      line += json;
    },
    body: (side) => {
      line += bodyJson(side.body);
    },
  });
  return line;
}

/**
 * callJson's line in parts, for a writer that puts bodies in some other way (as bytes: CallsListing): every part
 * one line with `<`, `>` and `&` escaped, as callJson's whole line (oneLineJson and escapeJsonText change each
 * character, or each run of line breaks and the blanks after them, alone; the text around the bodies, from
 * JSON.stringify, holds no raw line break).
 */
export function callJsonParts(call: CallRecord, head: Record<string, unknown>, sink: CallJsonSink): void {
  if (!call.jsonBodies) {
    const { id, ...view } = callView(call);
    // JSON.stringify leaves U+2028 and U+2029 raw in strings (a non-JSON body, a header): escaped here.
    sink.text(oneLineJson(jsonText({ id, ...head, ...view })));
    return;
  }
  const { request, response } = call;
  const skeleton = JSON.stringify(skeletonOf(call, head));
  // Most skeletons hold nothing a line must change: their parts then go as they are, unsearched.
  const plain = isPlainJson(skeleton);
  // A body is the last member of its object; no JSON string can hold `"body":null}` unescaped, so the first slot is
  // the request's and the last the response's.
  const part = (from: number, to?: number) => {
    const piece = skeleton.slice(from, to);
    sink.text(plain ? piece : escapeJsonText(oneLineJson(piece)));
  };
  const first = skeleton.indexOf(BODY_SLOT) + '"body":'.length;
  part(0, first);
  sink.body(request);
  if (!response) {
    part(first + "null".length);
    return;
  }
  const last = skeleton.lastIndexOf(BODY_SLOT) + '"body":'.length;
  part(first + "null".length, last);
  sink.body(response);
  part(last + "null".length);
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
