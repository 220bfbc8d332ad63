import { REDACTED, type Redaction } from "../journal/redact.js";
import type { CompiledRule } from "./rules.js";
import type { ResponseSpec, RuleSpec } from "./schema.js";

/**
 * What one response of a rule answers, as GET /__admin/scenarios shows it: the HTTP status and the response
 * message's code the sandbox will send (its defaults worked out the way `scriptedReply` applies them), the issue
 * code of an OperationOutcome, a fault, a delay. Templates are not rendered: the values are the rule's own.
 */
export interface AnswerSummary {
  kind: "outcome" | "resources" | "body" | "fault" | "built-in";
  /** The HTTP status; null where the built-in behaviour decides, or a fault sends none. */
  status: number | null;
  /** MessageHeader.response.code of the answer; null when the answer is no response message. */
  code: "ok" | "fatal-error" | "transient-error" | null;
  /** The OperationOutcome's issue code, for an `outcome`. */
  issue: string | null;
  fault: string | null;
  /** As written: "8s", or "1s–3s" for a random delay in between. */
  delay: string | null;
  /** Names of the extra response headers. */
  headers: string[];
  /** How many resources an ok answer carries. */
  resources: number | null;
  description: string | null;
  /** `async`, as written: the asynchronous answer's delay, or that it is never sent; absent when not scripted. */
  async?: { delay: string | null; drop: boolean };
}

export interface RuleSummary {
  /** The rule's conditions as written (`operation` as written too; the resolved ids are the rule's `operations`). */
  when: NonNullable<RuleSpec["when"]>;
  answers: AnswerSummary[];
  /** For a sequence: what happens once it is used up. */
  afterSequence: CompiledRule["afterSequence"] | null;
}

const NO_STATUS_FAULTS = new Set(["connection-reset", "timeout"]);

const written = (d: number | string) => (typeof d === "number" ? `${d}ms` : d);

const delayWritten = (delay: ResponseSpec["delay"]): string | null =>
  delay === undefined
    ? null
    : typeof delay === "object"
      ? `${written(delay.min)}–${written(delay.max)}`
      : written(delay);

export function answerSummary(spec: ResponseSpec, businessErrors: "message" | "http"): AnswerSummary {
  const base = {
    issue: null,
    fault: null,
    resources: null,
    delay: delayWritten(spec.delay),
    headers: Object.keys(spec.headers ?? {}),
    description: spec.description ?? null,
    ...(spec.async ? { async: { delay: delayWritten(spec.async.delay), drop: spec.async.drop === true } } : {}),
  };
  if (spec.builtIn) return { ...base, kind: "built-in", status: null, code: null };
  if (spec.fault) {
    const status = NO_STATUS_FAULTS.has(spec.fault) ? null : (spec.status ?? 200);
    return { ...base, kind: "fault", status, code: null, fault: spec.fault };
  }
  if (spec.outcome) {
    const { status } = spec;
    const kind =
      spec.outcome.response ??
      (status !== undefined && (status >= 500 || status === 429) ? "transient-error" : "fatal-error");
    const transient = kind === "transient-error";
    const issue = spec.outcome.code ?? (transient ? "transient" : "business-rule");
    if (kind === "none") return { ...base, kind: "outcome", status: status ?? 400, code: null, issue };
    const fallback = transient || businessErrors === "message" ? 200 : 422;
    return { ...base, kind: "outcome", status: status ?? fallback, code: kind, issue };
  }
  if (spec.resources) {
    return { ...base, kind: "resources", status: spec.status ?? 200, code: "ok", resources: spec.resources.length };
  }
  return { ...base, kind: "body", status: spec.status ?? 200, code: null };
}

/**
 * The conditions with a credential's value `[redacted]`: a shared folder's rule on `Authorization: Bearer …` is read
 * by every workspace, and the journal already hides that header's value.
 */
function withoutSecrets(when: CompiledRule["when"], redaction: Redaction): CompiledRule["when"] {
  if (!when.headers) return when;
  const headers: NonNullable<CompiledRule["when"]["headers"]> = {};
  for (const [name, condition] of Object.entries(when.headers)) {
    // `absent: true` names no value; an exact value or a pattern is hidden when the name or the text says credential.
    if (typeof condition === "string") headers[name] = redaction.secret(name, condition) ? REDACTED : condition;
    else if ("matches" in condition)
      headers[name] = redaction.secret(name, condition.matches) ? { matches: REDACTED } : condition;
    else headers[name] = condition;
  }
  return { ...when, headers };
}

/** What a rule matches and what it answers, for GET /__admin/scenarios. */
export function ruleSummary(
  rule: CompiledRule,
  businessErrors: "message" | "http",
  redaction?: Redaction,
): RuleSummary {
  return {
    when: redaction ? withoutSecrets(rule.when, redaction) : rule.when,
    answers: rule.responses.map((r) => answerSummary(r.spec, businessErrors)),
    afterSequence: rule.sequence ? rule.afterSequence : null,
  };
}
