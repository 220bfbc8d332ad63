import type { Context } from "hono";
import { type CallState, newCallState } from "./call-state.js";
import type { EdgeEnv } from "./edge-env.js";
import { requestHeaders } from "./request-headers.js";

// The call state as a Hono handler reaches it; call-state.ts itself knows no framework.

/** The recorded call's state, or a detached one where nothing records (its values then go nowhere). */
export function callState(c: Context<EdgeEnv>): CallState {
  return c.get("call") ?? newCallState("", new Date(0), requestHeaders(c));
}

/** The request URL, parsed once per call. */
export function requestUrl(c: Context<EdgeEnv>, call: CallState): URL {
  call.url ??= new URL(c.req.url);
  return call.url;
}
