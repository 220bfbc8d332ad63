import type { Context } from "hono";
import type { EdgeEnv } from "./edge-env.js";
import { RawHeaders, type RequestHeaders, rawHeader } from "./raw-headers.js";

/** The Node request's raw header list, when a real socket serves the request. */
function rawHeadersOf(c: Context<EdgeEnv>): readonly string[] | undefined {
  const raw = c.env?.incoming?.rawHeaders;
  return Array.isArray(raw) ? raw : undefined;
}

/** The request's headers, without building a web `Headers` on the Node adapter. */
export function requestHeaders(c: Context<EdgeEnv>): RequestHeaders {
  const raw = rawHeadersOf(c);
  return raw ? new RawHeaders(raw) : c.req.raw.headers;
}

/**
 * One request header as `c.req.header(name)` gives it (undefined when absent), read from the raw list on the
 * Node adapter without merging the others.
 */
export function requestHeader(c: Context<EdgeEnv>, name: string): string | undefined {
  const raw = rawHeadersOf(c);
  return raw ? rawHeader(raw, name) : c.req.header(name);
}
