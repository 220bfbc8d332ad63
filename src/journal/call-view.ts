import { decodeEnvelope } from "../envelope/envelope.js";
import { parseJson } from "../envelope/json.js";
import type { CallRecord } from "./call-record.js";

/** A body as shown by the admin API: parsed JSON when it is JSON, else the text. */
function shown(text: string): unknown {
  if (text === "") return null;
  const parsed = parseJson(text);
  return parsed.ok ? parsed.value : text;
}

/** The admin API's view of a recorded call (CONTRACT §9). */
export function callView(call: CallRecord) {
  const { size: _size, trace: _trace, at, request, response, ...rest } = call;
  return {
    ...rest,
    at: at.toISOString(),
    request: { ...request, body: shown(request.body) },
    response: response ? { ...response, body: shown(response.body) } : null,
  };
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
