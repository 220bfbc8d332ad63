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
  // An IPv4 peer on a dual-stack socket reads ::ffff:127.0.0.1: the same address as 127.0.0.1.
  return address === undefined ? "in-process" : address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, "");
}
