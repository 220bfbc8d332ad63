import type { Context } from "hono";
import type { Access } from "../auth/bearer.js";
import { type Issue, operationOutcome } from "../fhir/outcome.js";
import type { RuleTrace } from "../scenarios/scenarios.js";
import type { Workspace } from "../workspace/workspace.js";

export const FHIR_JSON = "application/fhir+json; charset=utf-8";

/** Per-request values the edge shares with the call recorder. */
export interface EdgeVariables {
  /** The workspace the request acts in (CONTRACT §13). */
  workspace: Workspace;
  /** The `/w/{workspace}` prefix the URL came with, or "": URLs in the answer keep it. */
  workspacePrefix: string;
  /** With --auth oauth2, on a message path: who the token speaks for, or why it is refused. */
  access: Access | undefined;
  /** The journal call this request becomes: id reserved at its start, and the start. */
  call: { id: string; at: Date };
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
}

/** The Node adapter's bindings, when a real socket serves the request (absent in-process). */
export interface EdgeBindings {
  incoming?: { socket?: import("node:net").Socket };
}

export type EdgeEnv = { Variables: EdgeVariables; Bindings: EdgeBindings };

/**
 * Sends a FHIR body (CONTRACT §4: every FHIR body is application/fhir+json)
 * and keeps its text for the journal.
 */
export function fhirResponse(
  c: Context<EdgeEnv>,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
  /** The body already serialized, to save serializing it twice. */
  serialized?: string,
): Response {
  const text = serialized ?? JSON.stringify(body);
  c.set("responseText", text);
  c.set("responseJson", true);
  return new Response(text, { status, headers: { "content-type": FHIR_JSON, ...headers } });
}

/** A bare OperationOutcome: the answer to a message that was not processed. */
export function outcomeResponse(
  c: Context<EdgeEnv>,
  status: number,
  issues: Issue[],
  headers: Record<string, string> = {},
): Response {
  return fhirResponse(c, status, operationOutcome(issues), headers);
}
