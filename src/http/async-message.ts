import { overLimit } from "../config/state-limits.js";
import { decodeEnvelope } from "../envelope/envelope.js";
import { isObject } from "../envelope/json.js";
import { readMessage } from "../envelope/message.js";
import { type Issue, issue } from "../fhir/outcome.js";
import type { AsyncAnswerNote } from "../journal/call-record.js";
import type { Answer } from "../pipeline/process-message.js";
import type { AsyncLeg } from "../scenarios/rules.js";

// R4 $process-message's asynchronous mode: `async=true` (and `response-url`) in the URL — the operation takes no
// Parameters body — answered 202 at once, the response message POSTed later. The edge's steps, without a framework.

/** How a message asks to be answered: as always, asynchronously (to response-url, if given), or wrongly. */
export type AsyncPlan =
  | { kind: "sync" }
  | { kind: "refused"; issues: Issue[] }
  /** `target` undefined: the message names none (no readable MessageHeader): the pipeline refuses it anyway. */
  | { kind: "async"; target: string | undefined }
  /**
   * A response message sent asynchronously (R4: `content` "may be a response message to accept"): accepted with 202
   * when the sandbox takes it, and never answered.
   */
  | { kind: "response" };

const SYNC: AsyncPlan = { kind: "sync" };

/** What the plan checks a target with: the asynchronous answers' refusal (ResponseDeliveries.refusal). */
export interface TargetCheck {
  refusal(target: string): string | null;
}

const refused = (diagnostics: string, expression?: string): AsyncPlan => ({
  kind: "refused",
  issues: [issue("invalid", diagnostics, expression)],
});

/**
 * The plan for a message from its URL's query and its body, before anything of it is processed (a refusal changes
 * nothing): `async` must be a FHIR boolean, `response-url` comes only with `async=true` and must be a URL the sandbox
 * may push to; without it the answer goes to MessageHeader.source.endpoint, which must be one. A response message is
 * accepted and never answered (so its source.endpoint need not be one; a `response-url` leading back to the sandbox
 * would loop otherwise).
 *
 * @example
 *   asyncPlan(new URLSearchParams("async=true&response-url=http://127.0.0.1:9090/answers"), body, false, deliveries)
 *   // { kind: "async", target: "http://127.0.0.1:9090/answers" }
 */
export function asyncPlan(
  query: URLSearchParams,
  body: string,
  lenientEnvelope: boolean,
  check: TargetCheck,
): AsyncPlan {
  const flags = query.getAll("async");
  const urls = query.getAll("response-url");
  if (flags.length === 0 && urls.length === 0) return SYNC;
  if (flags.length > 1)
    return refused(`async is given ${flags.length} times; give it once: async=true or async=false.`);
  if (urls.length > 1) return refused(`response-url is given ${urls.length} times; give it once.`);
  const flag = flags[0];
  if (flag !== undefined && flag !== "true" && flag !== "false") {
    return refused(`async must be true or false (a FHIR boolean, lower case), not ${JSON.stringify(flag)}.`);
  }
  const url = urls[0];
  if (flag !== "true") {
    if (url === undefined) return SYNC;
    return refused(
      "response-url is used only with async=true (asynchronous messaging); add async=true, or leave response-url out for a synchronous answer.",
    );
  }
  if (url !== undefined) {
    const why = check.refusal(url);
    if (why) return refused(`response-url ${why}: the response message cannot be sent there.`);
  }
  const header = messageHeader(body, lenientEnvelope);
  if (header && header.response !== undefined) return { kind: "response" };
  if (url !== undefined) return { kind: "async", target: url };
  const endpoint = (header?.source as { endpoint?: unknown } | undefined)?.endpoint;
  if (typeof endpoint !== "string") return { kind: "async", target: undefined };
  const why = check.refusal(endpoint);
  if (why) {
    return refused(
      `async=true without response-url sends the response message to MessageHeader.source.endpoint, and ${why}: give response-url=<where your system takes response messages>.`,
      "Bundle.entry[0].resource.source.endpoint",
    );
  }
  return { kind: "async", target: endpoint };
}

/** The message's MessageHeader as a plain object, when the body holds one; else undefined (the pipeline says why). */
function messageHeader(body: string, lenientEnvelope: boolean): Record<string, unknown> | undefined {
  const envelope = decodeEnvelope(body, lenientEnvelope);
  if (!envelope.ok) return undefined;
  const header = readMessage(envelope.bundle).message?.header as unknown;
  return isObject(header) ? header : undefined;
}

/**
 * Whether an answer is the response message that goes later: a Bundle the sandbox would have answered with (200, or
 * 422 under --business-errors http). A refusal (an OperationOutcome: the message was not accepted), a scripted
 * fault or 5xx, and an upstream's answer (--proxy) are answered at once, as without async.
 */
export function answeredLater(answer: Answer): boolean {
  if (answer.fault || answer.forward || answer.status < 200 || answer.status >= 500) return false;
  return isObject(answer.body) && answer.body.resourceType === "Bundle";
}

/** What the journal keeps of an accepted call: where its answer goes, and what a rule scripted for it. */
export function asyncNote(target: string, leg: AsyncLeg | undefined): AsyncAnswerNote {
  return {
    to: target,
    ...(leg && leg.delayMs > 0 ? { delayMs: leg.delayMs } : {}),
    ...(leg?.drop ? { dropped: true as const } : {}),
  };
}

/** The 202's issue for a response message: accepted, and nothing goes back (a response is never answered). */
export function acceptedResponseIssue(messageId: string | null): Issue {
  return issue(
    "informational",
    `Accepted: message${messageId ? ` ${messageId}` : ""} is a response message (MessageHeader.response is set); a response is accepted and never answered, so nothing will be sent for it.`,
    undefined,
    "information",
  );
}

/** The 202's issue: the message is accepted, and its response message goes to `target` (whatever a rule scripted). */
export function acceptedIssue(target: string, messageId: string | null): Issue {
  return issue(
    "informational",
    `Accepted for asynchronous processing: the response message${messageId ? ` to message ${messageId}` : ""} will be POSTed to ${target}. The sandbox's journal records each delivery attempt as an outbound call (GET /__admin/calls?direction=outbound).`,
    undefined,
    "information",
  );
}

/**
 * The 429's issue when the workspace holds its most of asynchronous answers not yet delivered (--max-async-answers):
 * the message was not processed, and may be sent again once some are delivered or given up.
 */
export function tooManyAnswersIssue(held: number, max: number, retryAfterS: number): Issue {
  const refusal = overLimit(
    "asyncAnswers",
    {
      held,
      adding: 1,
      max,
      unit: "asynchronous answers not yet delivered (waiting for their delay, queued or being sent)",
    },
    `This message was not processed: send it again once some of them are delivered or given up (Retry-After: ${retryAfterS} s), or without async=true for a synchronous answer.`,
  );
  return issue("throttled", refusal.diagnostics);
}
