import type { Context } from "hono";
import type { RuleTrace } from "../scenarios/scenarios.js";

/**
 * What the edge learns about one inbound call while answering it, for the
 * call recorder: one plain object per call, filled in as the call goes
 * (one context variable instead of a dozen).
 */
export interface CallState {
  /** The journal id reserved when the call started. */
  id: string;
  at: Date;
  bodyText: string;
  responseText: string;
  /** The request body parsed as JSON (the pipeline read it), for the journal. */
  requestJson: boolean;
  /** responseText is JSON the sandbox serialized, for the journal. */
  responseJson: boolean;
  operation: string | null;
  messageId: string | null;
  duplicate: boolean;
  /** The scenario rule that answered. */
  rule: string | null;
  /** A scripted transport fault, staged instead of an answer. */
  fault: string | null;
  /** With --proxy: where the call was forwarded. */
  upstream: string | null;
  /** How the scenario rules decided, when consulted: kept with the call, to explain it on request. */
  trace: RuleTrace | undefined;
  /**
   * An answer whose headers the sandbox wrote in full (X-Sandbox-* included) as a plain object: the
   * recorder takes them from here instead of building a web Headers from the Response.
   */
  answered: { response: Response; headers: Record<string, string> } | undefined;
  /** The request URL, parsed once. */
  url: URL | undefined;
}

/** A call's state at its start. */
export function newCallState(id: string, at: Date): CallState {
  return {
    id,
    at,
    bodyText: "",
    responseText: "",
    requestJson: false,
    responseJson: false,
    operation: null,
    messageId: null,
    duplicate: false,
    rule: null,
    fault: null,
    upstream: null,
    trace: undefined,
    answered: undefined,
    url: undefined,
  };
}

/** The context variables of the edge. */
export interface EdgeVariables {
  /** The call being recorded; absent on paths the recorder does not wrap (the admin API). */
  call: CallState | undefined;
}

/** The Node adapter's bindings, when a real socket serves the request (absent in-process). */
export interface EdgeBindings {
  incoming?: import("node:http").IncomingMessage;
}

export type EdgeEnv = { Variables: EdgeVariables; Bindings: EdgeBindings };

/** The recorded call's state, or a detached one where nothing records (its values then go nowhere). */
export function callState(c: Context<EdgeEnv>): CallState {
  return c.get("call") ?? newCallState("", new Date(0));
}

/** The request URL, parsed once per call. */
export function requestUrl(c: Context<EdgeEnv>, call: CallState): URL {
  call.url ??= new URL(c.req.url);
  return call.url;
}
