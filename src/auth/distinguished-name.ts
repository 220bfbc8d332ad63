/**
 * Distinguished names as RFC 8705's `tls_client_auth_subject_dn` gives them (an RFC 4514 string,
 * `CN=pharmacy-backend,O=Al Noor,C=AE`) and as Node prints a certificate's subject (one attribute per line, most
 * significant first, values escaped the same way). Two names are the same when they hold the same attributes:
 * types compared without case, values exactly, order not minded (RFC 4514 writes the last RDN first, Node the first).
 */

/** One attribute of a name: its type in upper case and its value unescaped. */
export type Attribute = readonly [type: string, value: string];

const SPECIAL = /^[\\,+"<>;=# ]$/;

/**
 * Splits an RFC 4514 string at its unescaped separators (`,` between RDNs, `+` inside one, `\n` as Node prints)
 * and unescapes each value (`\,`, `\"`, `\\`, and `\hh` hex pairs, which are UTF-8 bytes); null when it is not one
 * (an attribute without `=`, a dangling escape, no attribute at all).
 *
 * @example
 *   parseDistinguishedName("CN=clinic\\, north,O=Al Noor") // [["CN", "clinic, north"], ["O", "Al Noor"]]
 */
export function parseDistinguishedName(text: string): Attribute[] | null {
  const attributes: Attribute[] = [];
  let type: string | null = null;
  let bytes: number[] = [];
  let current = "";
  const flushText = () => {
    bytes.push(...Buffer.from(current, "utf8"));
    current = "";
  };
  const end = (): boolean => {
    flushText();
    if (type === null) return false;
    const value = Buffer.from(bytes).toString("utf8").trim();
    attributes.push([type.trim().toUpperCase(), value]);
    type = null;
    bytes = [];
    return true;
  };
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] as string;
    if (ch === "\\") {
      const next = text[i + 1];
      const pair = text.slice(i + 1, i + 3);
      if (/^[0-9A-Fa-f]{2}$/.test(pair)) {
        flushText();
        bytes.push(Number.parseInt(pair, 16));
        i += 2;
      } else if (next !== undefined && SPECIAL.test(next)) {
        current += next;
        i += 1;
      } else return null;
    } else if (type === null && ch === "=") {
      type = current;
      current = "";
      if (!/^\s*([A-Za-z][A-Za-z0-9-]*|\d+(\.\d+)+)\s*$/.test(type)) return null;
    } else if (type !== null && (ch === "," || ch === "+" || ch === "\n" || ch === ";")) {
      if (!end()) return null;
    } else if (type === null && (ch === "," || ch === "+" || ch === "\n")) {
      return null;
    } else current += ch;
  }
  if (!end()) return null;
  return attributes;
}

/** The same attributes, whatever their order (a name's values compared exactly, types without case). */
export function sameName(a: readonly Attribute[], b: readonly Attribute[]): boolean {
  if (a.length !== b.length) return false;
  const key = (x: Attribute) => `${x[0]}\u0000${x[1]}`;
  const left = a.map(key).sort();
  const right = b.map(key).sort();
  return left.every((k, i) => k === right[i]);
}

/** A name written as RFC 4514 writes it in messages (most significant last is RFC 4514's; here as given). */
export function nameText(attributes: readonly Attribute[]): string {
  return attributes.map(([type, value]) => `${type}=${value.replace(/[\\,+"<>;=]/g, (c) => `\\${c}`)}`).join(",");
}
