import { createHash } from "node:crypto";
import { decodeEnvelope } from "../envelope/envelope.js";
import type { KeptText, PackedTexts } from "../text/packed-texts.js";

/** Bundle elements that may differ between a message and its exact resend (CONTRACT §5). */
const VOLATILE = new Set(["id", "timestamp", "meta"]);

/** The canonical JSON of `value`: object keys sorted, arrays in order, no whitespace (one string, built once). */
function canonical(value: unknown): string {
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) out += (i > 0 ? "," : "") + canonical(value[i]);
    return `${out}]`;
  }
  if (value !== null && typeof value === "object") {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record).sort();
    let out = "{";
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i] as string;
      out += `${i > 0 ? "," : ""}${JSON.stringify(key)}:${canonical(record[key])}`;
    }
    return `${out}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/**
 * The content fingerprint of a message Bundle: SHA-256 (base64, 44
 * characters) of its canonical JSON — keys sorted, so key order does not
 * matter — leaving out `Bundle.id`, `Bundle.timestamp` and `Bundle.meta`,
 * which a retransmission may change. Two messages with the same fingerprint
 * are the same message sent again.
 *
 * @example
 *   messageFingerprint({ resourceType: "Bundle", type: "message", id: "a" }) ===
 *     messageFingerprint({ type: "message", resourceType: "Bundle", id: "b" }) // true
 */
export function messageFingerprint(bundle: Record<string, unknown>): string {
  const content: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(bundle)) if (!VOLATILE.has(key)) content[key] = value;
  return createHash("sha256").update(canonical(content)).digest("base64");
}

/** Messages whose body is up to this many characters are remembered as their body, larger ones by their fingerprint. */
const KEPT_AS_TEXT = 8 * 1024;

/**
 * What the duplicate memory keeps of a message to tell an exact resend:
 * the request body as received while small (hashing every message costs a
 * twentieth of its processing; a resend is rare) — the very text the journal
 * keeps of the call, handed to it (KeptBodies) — else the message's
 * fingerprint, taken at once.
 */
export type MessageIdentity = { body: KeptText } | { fingerprint: string };

/** The identity of a message Bundle that came in `body` (the request body), kept by `texts`. Take it before a handler runs. */
export function messageIdentity(bundle: Record<string, unknown>, body: string, texts: PackedTexts): MessageIdentity {
  return body.length <= KEPT_AS_TEXT ? { body: texts.keep(body) } : { fingerprint: messageFingerprint(bundle) };
}

/**
 * Whether `bundle`, which came in `body`, is the message remembered as `earlier`, resent: the same body, or a body
 * whose message has the same fingerprint (the same content in another envelope, order or Bundle.id).
 */
export function sameMessage(earlier: MessageIdentity, bundle: Record<string, unknown>, body: string): boolean {
  if ("body" in earlier) {
    const kept = earlier.body.text;
    if (kept === body) return true;
    // Decoded as it was when it came (any form the sandbox accepts): a body kept is one that was decoded.
    const decoded = decodeEnvelope(kept, true);
    return decoded.ok && messageFingerprint(decoded.bundle) === messageFingerprint(bundle);
  }
  return earlier.fingerprint === messageFingerprint(bundle);
}
