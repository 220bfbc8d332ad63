import { type IpRange, inRange, internalRange, parseIp, parseRange } from "./ip-address.js";

/**
 * One `--push-allow` entry: `*` (any host name), `*.example.ae` (its subdomains), an exact host name, or an IP
 * address or CIDR range (`127.0.0.1`, `10.0.0.0/8`, `::1`, `fd00::/8`).
 */
type AllowEntry =
  | { kind: "any" }
  | { kind: "suffix"; suffix: string }
  | { kind: "name"; name: string }
  | { kind: "range"; range: IpRange };

const HOST_NAME = /^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?$/;

function entry(raw: string): AllowEntry | null {
  const p = raw.trim().toLowerCase();
  if (p === "*") return { kind: "any" };
  const range = parseRange(p.replace(/^\[([^\]]*)\]/, "$1"));
  if (range) return { kind: "range", range };
  if (p.startsWith("*.") && HOST_NAME.test(p.slice(2))) return { kind: "suffix", suffix: p.slice(1) };
  if (HOST_NAME.test(p)) return { kind: "name", name: p };
  return null;
}

const entries = (patterns: readonly string[]): AllowEntry[] =>
  patterns.flatMap((p) => {
    const e = entry(p);
    return e ? [e] : [];
  });

/** The `--push-allow` entries that are none of the forms it takes, each with why (empty when all are good). */
export function pushAllowProblems(patterns: readonly string[]): string[] {
  return patterns
    .filter((p) => entry(p) === null)
    .map(
      (p) =>
        `--push-allow "${p}" is not a host name, *.domain, *, IP address or CIDR range (e.g. pharmacy.example.ae, *.example.ae, 192.168.1.20, 10.0.0.0/8, fd00::/8); give hosts without scheme, port or path`,
    );
}

/** The URL's host, lower case, IPv6 brackets dropped; null when it is not a URL. */
function hostOf(url: string): string | null {
  try {
    return new URL(url).hostname.toLowerCase().replace(/^\[|\]$/g, "");
  } catch {
    return null;
  }
}

/** Whether a name entry (exact or *.domain) names `host`. */
function namesHost(e: AllowEntry, host: string): boolean {
  if (e.kind === "name") return host === e.name;
  if (e.kind === "suffix") return host.endsWith(e.suffix) && host.length > e.suffix.length;
  return false;
}

/**
 * `--push-allow`: whether a push target's host is allowed — an empty list allows every host; otherwise its host
 * name matches `*`, an exact name or a `*.domain` entry, or its host is an IP address inside an address or range
 * entry. This is the name check, made on every push; see `addressRefusal` for the address connected to.
 *
 * @example
 *   hostAllowed("http://10.1.2.3:9000/hook", ["10.0.0.0/8"]) // true
 */
export function hostAllowed(url: string, patterns: readonly string[]): boolean {
  if (patterns.length === 0) return true;
  const host = hostOf(url);
  if (host === null) return false;
  const address = parseIp(host);
  return entries(patterns).some((e) => {
    if (e.kind === "any") return true;
    if (e.kind === "range") return address !== null && inRange(address, e.range);
    return address === null && namesHost(e, host);
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

/**
 * Why a push may not connect to `address` (what `host` resolved to), or null when it may: under `--auth oauth2`
 * an internal address (loopback, link-local, private, unique-local, unspecified, carrier-grade NAT, and their
 * IPv6 forms) is refused unless `--push-allow` names it — by an address or range holding it, or by an exact name
 * or `*.domain` entry that names `host` (the operator chose that name). `*` names no internal address.
 *
 * @example
 *   addressRefusal("127.0.0.1", "localhost", []) // "localhost is 127.0.0.1, a loopback (RFC 1122) address (127.0.0.0/8): …"
 *   addressRefusal("127.0.0.1", "localhost", ["localhost"]) // null
 */
export function addressRefusal(address: string, host: string, patterns: readonly string[]): string | null {
  const ip = parseIp(address);
  // Not an address at all: nothing to connect to, so nothing to refuse here (the connection fails on its own).
  if (!ip) return null;
  const internal = internalRange(ip);
  if (!internal) return null;
  const name = host.toLowerCase().replace(/^\[|\]$/g, "");
  const literal = parseIp(name) !== null;
  const named = entries(patterns).some((e) =>
    e.kind === "range" ? inRange(ip, e.range) : !literal && namesHost(e, name),
  );
  if (named) return null;
  const who = literal ? `${address} is` : `${host} resolves to ${address},`;
  return (
    `${who} a ${internal.kind} address (${internal.range}): with --auth oauth2 the sandbox does not push to ` +
    "loopback, link-local, private, unique-local or unspecified addresses unless --push-allow names them " +
    `(for a test receiver on the sandbox's own network start it with --push-allow ${literal ? address : `${host} or --push-allow ${address}`})`
  );
}

/**
 * `addressRefusal` for a URL whose host is an IP address (refused before any connection, even at subscribe
 * time); null for a host name, which is checked when it is resolved.
 */
export function literalAddressRefusal(url: string, patterns: readonly string[]): string | null {
  const host = hostOf(url);
  if (host === null || parseIp(host) === null) return null;
  return addressRefusal(host, host, patterns);
}
