const SECRET_HEADER =
  /^(authorization|proxy-authorization|cookie|set-cookie)$|token|secret|api[-_]?key|password|session/i;

export const REDACTED = "[redacted]";

/** Header names lower-cased, values of credential-bearing headers replaced, before anything is stored. */
export function redactHeaders(headers: Iterable<[string, string]>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of headers) {
    const key = name.toLowerCase();
    out[key] = SECRET_HEADER.test(key) ? REDACTED : value;
  }
  return out;
}
