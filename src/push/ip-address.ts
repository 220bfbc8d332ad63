import { isIP } from "node:net";

/** An IPv4 or IPv6 address as a number (32 or 128 bits). */
export interface IpAddress {
  version: 4 | 6;
  value: bigint;
}

/** A CIDR range: the addresses whose first `prefix` bits are those of `base`. */
export interface IpRange {
  base: IpAddress;
  prefix: number;
}

const BITS = { 4: 32, 6: 128 } as const;

function v4Value(text: string): bigint {
  return text.split(".").reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

function v6Value(text: string): bigint {
  // A trailing dotted quad (::ffff:127.0.0.1) is the last two groups written in decimal.
  let s = text;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(s)?.[1];
  if (dotted) {
    const v4 = v4Value(dotted);
    s = `${s.slice(0, -dotted.length)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head = "", tail] = s.split("::");
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill("0"), ...t];
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(`0x${g}`), 0n);
}

/**
 * Reads an IPv4 or IPv6 address (URL brackets and an IPv6 zone such as `%eth0` dropped); null when the text is
 * not one (a host name, say).
 *
 * @example
 *   parseIp("[::ffff:7f00:1]") // { version: 6, value: 0xffff7f000001n }
 */
export function parseIp(text: string): IpAddress | null {
  const bare = text.replace(/^\[(.*)\]$/, "$1").replace(/%.*$/, "");
  const version = isIP(bare);
  if (version === 4) return { version: 4, value: v4Value(bare) };
  if (version === 6) return { version: 6, value: v6Value(bare) };
  return null;
}

/** Reads `10.0.0.0/8`, `fc00::/7`, or a bare address (a range of one); null when it is none of these. */
export function parseRange(text: string): IpRange | null {
  const [address = "", prefixText, ...rest] = text.split("/");
  const base = parseIp(address);
  if (!base || rest.length > 0) return null;
  if (prefixText === undefined) return { base, prefix: BITS[base.version] };
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > BITS[base.version]) return null;
  return { base, prefix: Number(prefixText) };
}

/** Whether `range` holds `address` (an IPv4 range never holds an IPv6 address, mapped or not). */
export function inRange(address: IpAddress, range: IpRange): boolean {
  if (address.version !== range.base.version) return false;
  const shift = BigInt(BITS[address.version] - range.prefix);
  return address.value >> shift === range.base.value >> shift;
}

/** What an internal address is: the range it is in and what that range is for. */
export interface InternalRange {
  range: string;
  kind: string;
}

/** Addresses that reach the sandbox's own machine or its private networks, with the RFC that sets each apart. */
const INTERNAL: ReadonlyArray<{ range: string; kind: string }> = [
  { range: "0.0.0.0/8", kind: "unspecified ('this network', RFC 1122)" },
  { range: "10.0.0.0/8", kind: "private (RFC 1918)" },
  { range: "100.64.0.0/10", kind: "carrier-grade NAT (RFC 6598)" },
  { range: "127.0.0.0/8", kind: "loopback (RFC 1122)" },
  { range: "169.254.0.0/16", kind: "link-local (RFC 3927)" },
  { range: "172.16.0.0/12", kind: "private (RFC 1918)" },
  { range: "192.168.0.0/16", kind: "private (RFC 1918)" },
  { range: "::/128", kind: "unspecified (RFC 4291)" },
  { range: "::1/128", kind: "loopback (RFC 4291)" },
  { range: "fe80::/10", kind: "link-local (RFC 4291)" },
  { range: "fec0::/10", kind: "site-local (RFC 3879)" },
  { range: "fc00::/7", kind: "unique-local (RFC 4193)" },
];

/** IPv6 prefixes whose last 32 bits are an IPv4 address that is where the connection goes. */
const EMBEDDING: ReadonlyArray<{ range: string; kind: string }> = [
  { range: "::ffff:0:0/96", kind: "IPv4-mapped (RFC 4291)" },
  { range: "::/96", kind: "IPv4-compatible (RFC 4291)" },
  { range: "64:ff9b::/96", kind: "NAT64 (RFC 6052)" },
];

const compiled = (list: ReadonlyArray<{ range: string; kind: string }>) =>
  list.map((r) => ({ ...r, parsed: parseRange(r.range) as IpRange }));
const INTERNAL_RANGES = compiled(INTERNAL);
const EMBEDDING_RANGES = compiled(EMBEDDING);

/**
 * The internal range an address is in — loopback, link-local, private, unique-local, unspecified, carrier-grade
 * NAT, or an IPv6 form (mapped, compatible, NAT64) of one of the IPv4 ones — or null for any other address.
 *
 * @example
 *   internalRange(parseIp("::ffff:10.1.2.3")!) // { range: "10.0.0.0/8 (as IPv4-mapped (RFC 4291) ::ffff:0:0/96)", kind: "private (RFC 1918)" }
 */
export function internalRange(address: IpAddress): InternalRange | null {
  const direct = INTERNAL_RANGES.find((r) => inRange(address, r.parsed));
  if (direct) return { range: direct.range, kind: direct.kind };
  const embedding = EMBEDDING_RANGES.find((r) => inRange(address, r.parsed));
  if (!embedding) return null;
  const inner = internalRange({ version: 4, value: address.value & 0xffffffffn });
  return inner ? { range: `${inner.range} (as ${embedding.kind} ${embedding.range})`, kind: inner.kind } : null;
}
