import type { IncomingMessage } from "node:http";
import type { Context } from "hono";
import { internalRange, parseIp } from "../push/ip-address.js";

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
 * Whether a request came from this machine: a loopback peer (127.0.0.0/8, ::1, and their IPv4-mapped forms), or
 * in-process (`app.request`, no socket).
 */
export function fromThisMachine(c: Context): boolean {
  const address = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket?.remoteAddress;
  if (address === undefined) return true;
  const parsed = parseIp(address);
  return parsed !== null && (internalRange(parsed)?.kind.startsWith("loopback") ?? false);
}

/**
 * An IPv6 address as the /64 it belongs to: one host is usually given a whole /64, so counting failures by the full
 * address would give a guesser 2^64 fresh counters (RFC 4291 §2.5.1: the low 64 bits are the interface's).
 *
 * @example
 *   ipv6Network("2001:db8:1:2:a:b:c:d") === "2001:db8:1:2::/64"
 */
export function ipv6Network(address: string): string {
  const parsed = parseIp(address);
  if (parsed?.version !== 6) return address;
  const groups = [0, 1, 2, 3].map((i) => ((parsed.value >> BigInt(112 - 16 * i)) & 0xffffn).toString(16));
  return `${groups.join(":")}::/64`;
}
