import { createHash } from "node:crypto";
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

/** Messages up to this many characters of JSON are remembered as their text, larger ones by their fingerprint. */
const KEPT_AS_TEXT = 8 * 1024;

/**
 * What the duplicate memory keeps of a message to tell an exact resend:
 * its JSON text while small (hashing every message costs a twentieth of its
 * processing; a resend is rare), else its fingerprint, taken at once.
 */
export type MessageIdentity = { text: KeptText } | { fingerprint: string };

/**
 * The identity of a message Bundle; `text` is its JSON as received, when there is one, kept by `texts`. Take it
 * before a handler runs.
 */
export function messageIdentity(
  bundle: Record<string, unknown>,
  text: string | undefined,
  texts: PackedTexts,
): MessageIdentity {
  return text !== undefined && text.length <= KEPT_AS_TEXT
    ? { text: texts.keep(text) }
    : { fingerprint: messageFingerprint(bundle) };
}

/** Whether `bundle` is the message remembered as `earlier`, resent (same text, or the same fingerprint). */
export function sameMessage(
  earlier: MessageIdentity,
  bundle: Record<string, unknown>,
  text: string | undefined,
): boolean {
  if ("text" in earlier) {
    const kept = earlier.text.text;
    if (kept === text) return true;
    return messageFingerprint(JSON.parse(kept) as Record<string, unknown>) === messageFingerprint(bundle);
  }
  return earlier.fingerprint === messageFingerprint(bundle);
}
