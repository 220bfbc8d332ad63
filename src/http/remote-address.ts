import type { IncomingMessage } from "node:http";
import type { Context } from "hono";

/**
 * The address a request came from: the peer of its socket (@hono/node-server
 * gives the Node request as `c.env.incoming`). Forwarding headers are not
 * read: any caller can write them. In-process (`app.request`) there is no
 * socket, and every request is "in-process".
 */
export function remoteAddress(c: Context): string {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  const address = incoming?.socket?.remoteAddress;
  if (address === undefined) return "in-process";
  // An IPv4 peer on a dual-stack socket reads ::ffff:127.0.0.1: the same address as 127.0.0.1.
  const v4 = address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, "");
  return v4.includes(":") ? ipv6Network(v4) : v4;
}

/**
 * Whether a request came from this machine: a loopback peer (127.0.0.0/8, ::1), or in-process (`app.request`,
 * no socket).
 */
export function fromThisMachine(c: Context): boolean {
  const address = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket?.remoteAddress;
  return address === undefined || address === "::1" || /^(::ffff:)?127\./.test(address);
}

/**
 * An IPv6 address as the /64 it belongs to: one host is usually given a whole /64, so counting failures by the full
 * address would give a guesser 2^64 fresh counters (RFC 4291 §2.5.1: the low 64 bits are the interface's).
 *
 * @example
 *   ipv6Network("2001:db8:1:2:a:b:c:d") === "2001:db8:1:2::/64"
 */
export function ipv6Network(address: string): string {
  const zone = address.indexOf("%");
  const plain = zone === -1 ? address : address.slice(0, zone);
  const [head = "", tail] = plain.split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === undefined || tail === "" ? [] : tail.split(":");
  // An embedded IPv4 tail (::1.2.3.4) takes two groups; only the first four groups matter here.
  const groups =
    tail === undefined ? left : [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right];
  const prefix = groups.slice(0, 4).map((g) => (Number.parseInt(g, 16) || 0).toString(16));
  while (prefix.length < 4) prefix.push("0");
  return `${prefix.join(":")}::/64`;
}
