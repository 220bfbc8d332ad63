/**
 * A header name as HTTP allows it (RFC 9110 token): what --redact-header accepts, and what a scripted answer's or a
 * pharmacy's header may be called. Fetch's `Headers` and Node refuse any other.
 */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Why a name cannot name a header, or undefined. */
export function headerNameProblem(name: string): string | undefined {
  return HEADER_NAME.test(name)
    ? undefined
    : `${JSON.stringify(name)} is not an HTTP header name: use letters, digits and !#$%&'*+.^_\`|~- only (no spaces or colons).`;
}

/**
 * Why a header value can never be sent, or undefined: its first character that no header carries (a control other
 * than tab, DEL, one beyond Latin-1), which Node refuses to write and `Headers` (beyond Latin-1) to hold.
 */
export function headerValueProblem(name: string, value: string): string | undefined {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09) || c === 0x7f || c > 0xff) {
      const code = (value.codePointAt(i) as number).toString(16).toUpperCase().padStart(4, "0");
      return `The value of ${name} has U+${code} at character ${i + 1}, which an HTTP header cannot carry (a line break, a control, or a character beyond Latin-1). Percent-encode it, for example as UTF-8''%D8%AD… (RFC 8187).`;
    }
  }
  return undefined;
}
