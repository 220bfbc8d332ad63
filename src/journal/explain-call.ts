import { explainDecision, type RuleDecision } from "../scenarios/explain.js";
import { factsOfCall } from "./call-facts.js";
import type { CallRecord } from "./call-record.js";

/** GET /__admin/calls/{id}: why this call got the answer it got. */
export interface CallExplanation extends Partial<RuleDecision> {
  /** In one sentence: who answered, and why no rule did when none did. */
  summary: string;
}

/**
 * Explains a recorded call: the rule that answered, or why none did — for
 * every rule the message met, the first condition that failed and what the
 * message had instead. Computed when asked, not on the request path, from
 * the trace the call kept (see RuleTrace).
 *
 * @example
 *   explainCall(journal.get("7"), "/sandbox").summary // 'No rule answered; the built-in behaviour did.'
 */
export function explainCall(call: CallRecord, basePath: string): CallExplanation {
  if (call.direction === "outbound" && call.respondsTo !== undefined) {
    return {
      summary: `The asynchronous answer to call ${call.respondsTo} (async=true, answered 202): the response message the sandbox POSTed; scenario rules answer inbound messages only.`,
    };
  }
  if (call.direction === "outbound") {
    return { summary: "A message the sandbox sent to a pharmacy: scenario rules answer inbound messages only." };
  }
  const status = call.response?.status;
  const trace = call.trace;
  if (!trace && call.traceNotKept) {
    return {
      summary: `${call.rule ? `Rule "${call.rule}" answered` : "No rule answered"}. The call was recorded before the sandbox last restarted: the state file keeps the call, not how each rule decided, so the rules it met are not listed.`,
      answeredBy: call.rule,
    };
  }
  if (!trace) {
    return {
      summary: `No scenario rule was consulted: rules meet only messages that can be read and routed, and this one was answered ${status ?? "with no response"} before that (see response.body).`,
    };
  }
  // Rules see the path without --base-path, as the pipeline gives it.
  const { path } = call.request;
  const facts = {
    ...factsOfCall(call),
    invalid: trace.invalid,
    path: basePath !== "" && path.startsWith(basePath) ? path.slice(basePath.length) : path,
  };
  const decision = explainDecision(trace, facts);
  const answered = decision.rules.find((r) => r.outcome === "answered");
  let summary: string;
  if (answered) {
    summary = `Rule "${answered.rule}" (${answered.source}, line ${answered.line}) answered${call.fault ? `, staging the fault ${call.fault}` : ""}.`;
  } else if (call.upstream) {
    summary = `No rule answered; the message was forwarded to ${call.upstream} (--proxy), which answered ${status ?? "nothing"}.`;
  } else if (call.duplicate) {
    summary =
      "No rule answered; this is an exact resend, so the answer to the first message with this MessageHeader id was returned.";
  } else if (trace.invalid) {
    summary = `No rule answered; the sandbox refused the message (${status}): only rules with invalid: true see a message it refuses.`;
  } else {
    summary = "No rule answered; the built-in behaviour did.";
  }
  return { summary, ...decision };
}
