import type { RuleTrace } from "../scenarios/rule-trace.js";
import type { KeptText } from "../text/packed-texts.js";

/**
 * A call's bodies as the workspace's PackedTexts kept them already (the duplicate memory's message and answer),
 * handed to the journal so that it keeps no second copy: each exactly the text of its side's `body`.
 */
export interface KeptBodies {
  request?: KeptText;
  response?: KeptText;
  /** The response's `body` as UTF-8, as the edge wrote it to the socket: the journal measures the call by them. */
  responseBytes?: Buffer;
}

/** Where an asynchronous call's response message goes (`to`), and when: after `delayMs`, or never (`dropped`). */
export interface AsyncAnswerNote {
  to: string;
  delayMs?: number;
  dropped?: true;
}

/** One HTTP exchange as recorded: bodies are kept as the text that crossed the wire. */
export interface CallDraft {
  /** An id reserved when the call started (Journal.reserveId); else the journal numbers it when recording. */
  id?: string;
  direction: "inbound" | "outbound";
  /** When the call started. */
  at: Date;
  durationMs: number;
  operation: string | null;
  messageId: string | null;
  /** The scenario rule that answered, if any. */
  rule: string | null;
  duplicate?: boolean;
  /** A scripted transport fault staged instead of an answer. */
  fault?: string;
  /** With --proxy: the upstream URL that answered. */
  upstream?: string;
  request: {
    method: string;
    url: string;
    path: string;
    headers: Record<string, string>;
    body: string;
  };
  /**
   * Request headers whose values are secret whatever they hold: a push's
   * headers from the pharmacy's Subscription. The journal redacts them (and
   * drops this list); the emitter sends the real values.
   */
  secretHeaders?: readonly string[];
  response: { status: number; headers: Record<string, string>; body: string } | null;
  /** Bodies kept already (the journal shares them when redaction leaves them as they are; not recorded). */
  kept?: KeptBodies;
  /** Why an outbound delivery got no answer (timeout, refused, …). */
  error?: string;
  /** Push deliveries: the pharmacy's licence, where to, and which attempt. */
  pharmacy?: string;
  target?: string;
  attempt?: number;
  /**
   * An inbound message answered 202 (`$process-message?async=true`): where its response message goes, and what a
   * rule scripted for it (a delay, or never sent).
   */
  asyncAnswer?: AsyncAnswerNote;
  /** An asynchronous answer's delivery attempt: the id of the inbound call (answered 202) it answers. */
  respondsTo?: string;
  /** How the scenario rules decided (inbound messages that met them): explained on request, never shown as is. */
  trace?: RuleTrace;
  /**
   * The call had a trace, which the state file does not keep (it holds compiled rules): read back after a restart,
   * explain says so instead of explaining it as a call that met no rule. Never shown.
   */
  traceNotKept?: true;
  /**
   * The answer's MessageHeader.response.code when the sandbox built the answer (null: it is no response message),
   * for the request log, which reads the body for it otherwise. Never shown: the body says it.
   */
  responseCode?: string | null;
  /**
   * Both bodies are known to be JSON text (or empty): the request parsed, the answer was serialized by the
   * sandbox. Views then put them into their JSON as they are, without parsing them again (callJson).
   */
  jsonBodies?: true;
}

export interface CallRecord extends Omit<CallDraft, "id" | "secretHeaders" | "kept"> {
  id: string;
  /** The workspace the call acted in (CONTRACT §13). */
  workspace: string;
  /** Body bytes held for this call, for the journal's memory budget. */
  size: number;
}
