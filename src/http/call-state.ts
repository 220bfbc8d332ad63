import type { AsyncAnswerNote, KeptBodies } from "../journal/call-record.js";
import type { RuleTrace } from "../scenarios/rule-trace.js";
import type { RequestHeaders } from "./raw-headers.js";

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
  /** bodyText and responseText as the duplicate memory kept them: the journal shares them. */
  kept: KeptBodies | undefined;
  /** responseText as UTF-8, when the edge encoded it to write it: the journal measures the call by these bytes. */
  responseBytes: Buffer | undefined;
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
  /** The answer's MessageHeader.response.code as the pipeline built it (null: none); undefined when not known. */
  responseCode: string | null | undefined;
  /**
   * An answer whose headers the sandbox wrote in full (X-Sandbox-* included) as a plain object: the
   * recorder takes them from here instead of building a web Headers from the Response.
   */
  answered: { response: Response; headers: Record<string, string> } | undefined;
  /** The request URL, parsed once. */
  url: URL | undefined;
  /** The request's headers, read once (requestHeaders). */
  headers: RequestHeaders;
  /** Answered 202 (`async=true`): where the response message goes, for the journal. */
  asyncAnswer: AsyncAnswerNote | undefined;
}

/** A call's state at its start. */
export function newCallState(id: string, at: Date, headers: RequestHeaders): CallState {
  return {
    id,
    at,
    bodyText: "",
    responseText: "",
    requestJson: false,
    responseJson: false,
    kept: undefined,
    responseBytes: undefined,
    operation: null,
    messageId: null,
    duplicate: false,
    rule: null,
    fault: null,
    upstream: null,
    trace: undefined,
    responseCode: undefined,
    answered: undefined,
    url: undefined,
    headers,
    asyncAnswer: undefined,
  };
}
