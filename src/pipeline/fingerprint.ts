import { createHash } from "node:crypto";

/** Bundle elements that may differ between a message and its exact resend (CONTRACT §5). */
const VOLATILE = new Set(["id", "timestamp", "meta"]);

/** Appends the canonical JSON of `value` to `out`: object keys sorted, arrays in order, no whitespace. */
function canonical(value: unknown, out: string[]): void {
  if (Array.isArray(value)) {
    out.push("[");
    value.forEach((item, i) => {
      if (i > 0) out.push(",");
      canonical(item, out);
    });
    out.push("]");
  } else if (value !== null && typeof value === "object") {
    out.push("{");
    const record = value as Record<string, unknown>;
    Object.keys(record)
      .sort()
      .forEach((key, i) => {
        if (i > 0) out.push(",");
        out.push(JSON.stringify(key), ":");
        canonical(record[key], out);
      });
    out.push("}");
  } else out.push(JSON.stringify(value) ?? "null");
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
  const out: string[] = [];
  canonical(content, out);
  return createHash("sha256").update(out.join("")).digest("base64");
}
