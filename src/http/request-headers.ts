import type { Context } from "hono";
import { headerRecord } from "../journal/redact.js";
import type { EdgeEnv } from "./call-state.js";

const OUTER_WHITESPACE = /^[\t\n\r ]+|[\t\n\r ]+$/g;

/**
 * The request's headers for the call record, as `headerRecord(request.headers)` gives them (names
 * lower-cased, sorted, a repeated header joined with ", " — "; " for Cookie — the last Set-Cookie kept).
 * On the Node adapter they are read from the socket's raw header list: iterating the request's `Headers`
 * would make the adapter build a full web `Headers` for every call.
 */
export function requestHeaderRecord(c: Context<EdgeEnv>): Record<string, string> {
  const raw = c.env?.incoming?.rawHeaders;
  if (!Array.isArray(raw)) return headerRecord(c.req.raw.headers);
  const merged: Record<string, string> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    // HTTP/2 pseudo-headers (:method, :path, …) are not headers.
    if (name.startsWith(":")) continue;
    const key = name.toLowerCase();
    const value = (raw[i + 1] as string).replace(OUTER_WHITESPACE, "");
    const before = merged[key];
    merged[key] =
      before === undefined || key === "set-cookie" ? value : `${before}${key === "cookie" ? "; " : ", "}${value}`;
  }
  const sorted: Record<string, string> = {};
  for (const key of Object.keys(merged).sort()) sorted[key] = merged[key] as string;
  return sorted;
}
