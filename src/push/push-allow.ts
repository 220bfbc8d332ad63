/**
 * `--push-allow` host patterns: exact hosts, `*.example.ae` for subdomains,
 * or `*` for any. An empty list allows every host.
 */
export function hostAllowed(url: string, patterns: readonly string[]): boolean {
  if (patterns.length === 0) return true;
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase().replace(/^\[|\]$/g, "");
  } catch {
    return false;
  }
  return patterns.some((raw) => {
    const p = raw
      .trim()
      .toLowerCase()
      .replace(/^\[|\]$/g, "");
    if (p === "*") return true;
    if (p.startsWith("*.")) return host.endsWith(p.slice(1)) && host.length > p.length - 1;
    return host === p;
  });
}

/** http and https only: every other scheme is refused, whatever --push-allow says. */
export function pushableScheme(url: string): boolean {
  try {
    const { protocol } = new URL(url);
    return protocol === "http:" || protocol === "https:";
  } catch {
    return false;
  }
}
