import { TIMEOUT_FAULT_CAP_MS } from "../../http/faults.js";
import { responseCode } from "../../journal/call-summary.js";
import type { PlanStep, StepKindName, StepSpecOf } from "../plan-schema.js";
import type { ObservedCall, StepContext, StepRun, StepVerdict } from "../step-context.js";

/**
 * The sender role's step kinds: the sandbox answers the system's next message as the plan scripts it (a one-time
 * runtime rule of the session's workspace), then watches what the system does about that answer.
 */

/** Where answerNext leaves the message it answered, for the expectations after it. */
const TRIGGER = "sender.trigger";
/** Where expectRetry leaves the retry it found, for expectRetryAfterHonoured. */
const RETRY = "sender.retry";

const DEFAULT_WITHIN_MS = 60_000;

/** An id as messages name it: long ids shortened, enough to tell them apart. */
export const shortId = (id: string | null): string =>
  id === null ? "(none)" : id.length > 12 ? `${id.slice(0, 8)}…` : id;
export const seconds = (ms: number): string => `${Math.round(ms / 100) / 10} s`;

const inbound = (call: ObservedCall) => call.record.direction === "inbound";
const endOf = (call: ObservedCall) => call.record.at.getTime() + call.record.durationMs;

/** The answer a call got, in a few words: "503 transient-error", "timeout (no answer)". */
export function answerOf(call: ObservedCall): string {
  const { record } = call;
  if (record.fault === "timeout") return "timeout (no answer)";
  if (record.fault) return `${record.fault} (no answer)`;
  if (!record.response) return `no answer (${record.error ?? "no response"})`;
  const code = responseCode(record);
  return `${record.response.status}${code ? ` ${code}` : ""}`;
}

const operationsOf = (spec: string | string[] | undefined): string[] | undefined =>
  spec === undefined ? undefined : Array.isArray(spec) ? spec : [spec];

const fail = (message: string, evidence: StepVerdict["evidence"] = []): StepVerdict => ({
  status: "fail",
  message,
  evidence,
});
const skip = (message: string): StepVerdict => ({ status: "skip", message, evidence: [] });

/** The calls kept from position `from` on (all() may have forgotten the oldest of a long session). */
function callsFrom(ctx: StepContext, from: number): readonly ObservedCall[] {
  const kept = ctx.calls.all();
  return kept.slice(Math.max(0, from - (ctx.calls.position - kept.length)));
}

/** The position of a call kept (for `next`'s `from`); the oldest kept when it was forgotten. */
function positionOf(ctx: StepContext, call: ObservedCall): number {
  const kept = ctx.calls.all();
  return ctx.calls.position - kept.length + Math.max(0, kept.indexOf(call));
}

/** What inbound calls from `from` on showed, for a failure's "saw …". */
function sawSince(ctx: StepContext, from: number, exclude?: ObservedCall): string {
  const calls = callsFrom(ctx, from).filter((c) => inbound(c) && c !== exclude);
  if (calls.length === 0) return "saw no message";
  const listed = calls
    .slice(0, 4)
    .map((c) => `${c.record.operation ?? "unknown operation"} ${shortId(c.record.messageId)} answered ${answerOf(c)}`)
    .join("; ");
  return `saw ${calls.length} message${calls.length === 1 ? "" : "s"}: ${listed}${calls.length > 4 ? "; …" : ""}`;
}

function trigger(ctx: StepContext): ObservedCall | undefined {
  return ctx.memory[TRIGGER] as ObservedCall | undefined;
}

const noTrigger = () => skip("no answered message to check: the answerNext step before it did not run");

/** How long an answered message's call may stay open: the timeout fault's own cap. */
const IN_FLIGHT_MS = TIMEOUT_FAULT_CAP_MS;

/** How many messages the session's rule has answered, recorded or not (the rules view counts them when decided). */
const answeredCount = (ctx: StepContext, name: string): number =>
  ctx.workspace.scenarios.view().rules.find((r) => r.name === name)?.answered ?? 0;

/** The rule's name: the journal names the rule that answered a call, so the trigger is told by it. */
let ruleCount = 0;

const answerNext = async (ctx: StepContext, spec: StepSpecOf<"answerNext">, step: PlanStep): Promise<StepVerdict> => {
  const name = `conformance ${ctx.session.id} ${step.id} #${++ruleCount}`;
  const operations = operationsOf(spec.operation);
  const rule = { name, ...(operations ? { when: { operation: operations } } : {}), times: 1, respond: spec.respond };
  const document = JSON.stringify({ name: `conformance session ${ctx.session.id}`, rules: [rule] });
  // First of every rule (the plan's answer, whatever rules the workspace holds), and never in a state file.
  const added = ctx.workspace.addScenario(document, { forSession: true });
  if (!added.ok) {
    const why = added.refused ? added.refused.diagnostics : added.problems.map((p) => p.message).join("; ");
    return fail(`expected to script the answer to the next message, but the sandbox refused the rule: ${why}`);
  }
  const source = added.scenario.source;
  let removed = false;
  const remove = () => {
    if (removed) return;
    removed = true;
    ctx.workspace.removeScenario(source);
  };
  ctx.onEnd?.(remove);
  const from = ctx.calls.position;
  const within = ctx.ms(spec.within, DEFAULT_WITHIN_MS);
  const answered = (c: ObservedCall) => inbound(c) && c.record.rule === name;
  let call = await ctx.calls.next(answered, within, from);
  // The rule answered, but its call is not over (a timeout held until the client gives up, a slow dribble): the
  // message came in time, and its record comes when its client lets go.
  if (!call && !ctx.signal.aborted && answeredCount(ctx, name) > 0) {
    call = await ctx.calls.next(answered, IN_FLIGHT_MS, from);
  }
  remove();
  const what = operations ? `a message of ${operations.join(" or ")}` : "a message";
  if (!call)
    return fail(`expected ${what} within ${seconds(within)} to answer as the plan scripts; ${sawSince(ctx, from)}`);
  ctx.memory[TRIGGER] = call;
  delete ctx.memory[RETRY];
  return {
    status: "pass",
    message: `answered ${call.record.operation} ${shortId(call.record.messageId)} with ${answerOf(call)}`,
    evidence: [ctx.evidence(call, `answered with ${answerOf(call)} as scripted`)],
  };
};

const acceptedOk = (c: ObservedCall) =>
  inbound(c) && c.record.response !== null && c.record.response.status < 300 && responseCode(c.record) === "ok";

const expectOperations = async (ctx: StepContext, spec: StepSpecOf<"expectOperations">): Promise<StepVerdict> => {
  const declared = spec.operations === "declared" ? [...ctx.session.operations] : spec.operations;
  const within = ctx.ms(spec.within, DEFAULT_WITHIN_MS);
  const until = ctx.sandbox.now().getTime() + within;
  const found = new Map<string, ObservedCall>();
  const missing = () => declared.filter((op) => !found.has(op));
  if (declared.length === 0) {
    const call = await ctx.calls.next(acceptedOk, within, 0);
    if (!call) return fail(`expected a valid message, accepted ok, within ${seconds(within)}; ${sawSince(ctx, 0)}`);
    return {
      status: "pass",
      message: `${call.record.operation} ${shortId(call.record.messageId)} was accepted ok (no operations declared: any one)`,
      evidence: [ctx.evidence(call, "a valid message, accepted ok")],
    };
  }
  while (missing().length > 0) {
    const wanted = new Set(missing());
    const call = await ctx.calls.next(
      (c) => acceptedOk(c) && wanted.has(c.record.operation ?? ""),
      Math.max(0, until - ctx.sandbox.now().getTime()),
      0,
    );
    if (!call) break;
    found.set(call.record.operation as string, call);
  }
  const evidence = [...found.values()].map((c) => ctx.evidence(c, `${c.record.operation}: valid, accepted ok`));
  const left = missing();
  if (left.length === 0) {
    return {
      status: "pass",
      message: `each declared operation was sent valid and accepted ok: ${declared.join(", ")}`,
      evidence,
    };
  }
  const refused = ctx.calls
    .all()
    .filter((c) => inbound(c) && left.includes(c.record.operation ?? "") && !acceptedOk(c));
  const seen = refused.length
    ? `${refused.length} message${refused.length === 1 ? "" : "s"} of ${[...new Set(refused.map((c) => c.record.operation))].join(", ")} came but none was accepted ok (first answered ${answerOf(refused[0] as ObservedCall)})`
    : `no message of ${left.join(", ")} came`;
  return fail(`expected a valid message of each declared operation, accepted ok, within ${seconds(within)}; ${seen}`, [
    ...evidence,
    ...refused.slice(0, 3).map((c) => ctx.evidence(c, `${c.record.operation}: answered ${answerOf(c)}`)),
  ]);
};

const expectRetry = async (ctx: StepContext, spec: StepSpecOf<"expectRetry">): Promise<StepVerdict> => {
  const first = trigger(ctx);
  if (!first) return noTrigger();
  const id = first.record.messageId;
  if (spec.newToken && first.authFingerprint === null) {
    return skip(
      `the answered message ${shortId(id)} carried no Authorization header: there is no token to renew (start the sandbox with --auth oauth2 to check it)`,
    );
  }
  const after = (c: ObservedCall) => inbound(c) && c !== first && c.record.at.getTime() >= first.record.at.getTime();
  const holds = (c: ObservedCall) =>
    after(c) &&
    (!spec.sameId || c.record.messageId === id) &&
    (!spec.sameContent || c.contentFingerprint === first.contentFingerprint) &&
    (!spec.newToken || (c.authFingerprint !== null && c.authFingerprint !== first.authFingerprint));
  const within = ctx.ms(spec.within, DEFAULT_WITHIN_MS);
  const retry = await ctx.calls.next(holds, within, 0);
  const wanted = [
    spec.sameId ? `with the same MessageHeader id ${shortId(id)}` : "",
    spec.sameContent ? "and the same content" : "",
    spec.newToken ? "and a new bearer token" : "",
  ]
    .filter(Boolean)
    .join(" ");
  const expected = `expected a retry of message ${shortId(id)} ${wanted} within ${seconds(within)} of its ${answerOf(first)}`;
  if (retry) {
    ctx.memory[RETRY] = retry;
    const delay = retry.record.at.getTime() - endOf(first);
    return {
      status: "pass",
      message: `retried ${seconds(Math.max(0, delay))} after the ${answerOf(first)}, answered ${answerOf(retry)}`,
      evidence: [
        ctx.evidence(first, `answered ${answerOf(first)}`),
        ctx.evidence(retry, `retry of ${shortId(id)} ${seconds(Math.max(0, delay))} after the answer`),
      ],
    };
  }
  const later = ctx.calls.all().filter(after);
  const sameContentNewId = later.filter(
    (c) =>
      c.contentFingerprint !== null && c.contentFingerprint === first.contentFingerprint && c.record.messageId !== id,
  );
  const sameIdOtherContent = later.filter(
    (c) => c.record.messageId === id && c.contentFingerprint !== first.contentFingerprint,
  );
  const sameIdSameToken = later.filter(
    (c) => c.record.messageId === id && spec.newToken && c.authFingerprint === first.authFingerprint,
  );
  let saw: string;
  let shown: ObservedCall[];
  if (sameContentNewId.length > 0) {
    shown = sameContentNewId;
    saw = `retried with a new id (${sameContentNewId
      .slice(0, 3)
      .map((c) => shortId(c.record.messageId))
      .join(", ")}): the exchange would process it twice`;
  } else if (sameIdSameToken.length > 0) {
    shown = sameIdSameToken;
    saw = "retried with the same bearer token the sandbox had refused";
  } else if (sameIdOtherContent.length > 0 && spec.sameContent) {
    shown = sameIdOtherContent;
    saw = `resent id ${shortId(id)} with other content`;
  } else {
    shown = later.slice(0, 3);
    saw =
      later.length === 0
        ? `saw no message after the ${answerOf(first)}`
        : `saw ${later.length} message${later.length === 1 ? "" : "s"} after the ${answerOf(first)}, none with id ${shortId(id)} (${later
            .slice(0, 3)
            .map((c) => shortId(c.record.messageId))
            .join(", ")}${later.length > 3 ? ", …" : ""})`;
  }
  return fail(`${expected}; ${saw}`, [
    ctx.evidence(first, `answered ${answerOf(first)}`),
    ...shown.slice(0, 3).map((c) => ctx.evidence(c, `sent after the answer: ${shortId(c.record.messageId)}`)),
  ]);
};

/** Clocks of the request and of the answer's end are taken apart: a few ms of slack. */
const CLOCK_SLACK_MS = 20;

const expectRetryAfterHonoured = async (ctx: StepContext): Promise<StepVerdict> => {
  const first = trigger(ctx);
  if (!first) return noTrigger();
  const retry = ctx.memory[RETRY] as ObservedCall | undefined;
  if (!retry) return skip("no retry to check");
  if (first.retryAfterMs === null) return skip(`the answer to ${shortId(first.record.messageId)} had no Retry-After`);
  const waited = retry.record.at.getTime() - endOf(first);
  const evidence = [
    ctx.evidence(first, `answered ${answerOf(first)} with Retry-After ${seconds(first.retryAfterMs)}`),
    ctx.evidence(retry, `retry ${seconds(Math.max(0, waited))} after the answer`),
  ];
  if (waited + CLOCK_SLACK_MS >= first.retryAfterMs) {
    return {
      status: "pass",
      message: `the retry came ${seconds(waited)} after the answer (Retry-After ${seconds(first.retryAfterMs)})`,
      evidence,
    };
  }
  return fail(
    `expected the retry no sooner than ${seconds(first.retryAfterMs)} (Retry-After) after the ${answerOf(first)}; it came ${seconds(Math.max(0, waited))} after`,
    evidence,
  );
};

const expectNoRetry = async (ctx: StepContext, spec: StepSpecOf<"expectNoRetry">): Promise<StepVerdict> => {
  const first = trigger(ctx);
  if (!first) return noTrigger();
  const id = first.record.messageId;
  const windowMs = ctx.ms(spec.for, 0);
  const end = endOf(first) + windowMs;
  const resend = await ctx.calls.next(
    (c) => inbound(c) && c !== first && c.record.messageId === id && c.record.at.getTime() >= first.record.at.getTime(),
    Math.max(0, end - ctx.sandbox.now().getTime()),
    0,
  );
  if (resend && resend.record.at.getTime() <= end) {
    const after = resend.record.at.getTime() - endOf(first);
    return fail(
      `expected no resend of message ${shortId(id)} for ${seconds(windowMs)} after its ${answerOf(first)}; it was sent again ${seconds(Math.max(0, after))} after the answer (call ${resend.record.id})`,
      [ctx.evidence(first, `answered ${answerOf(first)}`), ctx.evidence(resend, `resend of ${shortId(id)}`)],
    );
  }
  return {
    status: "pass",
    message: `message ${shortId(id)} was not sent again within ${seconds(windowMs)} of its ${answerOf(first)}`,
    evidence: [ctx.evidence(first, `answered ${answerOf(first)}`)],
  };
};

const expectNewId = async (ctx: StepContext, spec: StepSpecOf<"expectNewId">): Promise<StepVerdict> => {
  const first = trigger(ctx);
  if (!first) return noTrigger();
  const operation = first.record.operation;
  const start = positionOf(ctx, first) + 1;
  const within = ctx.ms(spec.within, DEFAULT_WITHIN_MS);
  const next = await ctx.calls.next(
    (c) => inbound(c) && c !== first && c.record.operation === operation,
    within,
    start,
  );
  const id = first.record.messageId;
  if (!next) {
    return fail(
      `expected a next message of ${operation} with a new MessageHeader id within ${seconds(within)} of the ${answerOf(first)}; ${sawSince(ctx, start, first)}`,
      [ctx.evidence(first, `answered ${answerOf(first)}`)],
    );
  }
  const evidence = [ctx.evidence(first, `answered ${answerOf(first)}`), ctx.evidence(next, `next ${operation}`)];
  if (next.record.messageId === id) {
    return fail(
      `expected the next message of ${operation} after the ${answerOf(first)} to carry a new MessageHeader id; it reused ${shortId(id)} (answered ${answerOf(next)})`,
      evidence,
    );
  }
  return {
    status: "pass",
    message: `the next ${operation} carried a new id ${shortId(next.record.messageId)}`,
    evidence,
  };
};

export const senderKinds: Partial<Record<StepKindName, StepRun>> = {
  answerNext: answerNext as StepRun,
  expectOperations: expectOperations as StepRun,
  expectRetry: expectRetry as StepRun,
  expectRetryAfterHonoured: expectRetryAfterHonoured as StepRun,
  expectNoRetry: expectNoRetry as StepRun,
  expectNewId: expectNewId as StepRun,
};
