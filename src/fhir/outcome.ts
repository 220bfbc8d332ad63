import type { OperationOutcome } from "fhir/r4.js";

/** All FHIR R4 issue-type codes (http://hl7.org/fhir/issue-type). */
export const ISSUE_CODES = [
  "invalid",
  "structure",
  "required",
  "value",
  "invariant",
  "security",
  "login",
  "unknown",
  "expired",
  "forbidden",
  "suppressed",
  "processing",
  "not-supported",
  "duplicate",
  "multiple-matches",
  "not-found",
  "deleted",
  "too-long",
  "code-invalid",
  "extension",
  "too-costly",
  "business-rule",
  "conflict",
  "transient",
  "lock-error",
  "no-store",
  "exception",
  "timeout",
  "incomplete",
  "throttled",
  "informational",
] as const;

export type IssueCode = (typeof ISSUE_CODES)[number];

export type IssueSeverity = "fatal" | "error" | "warning" | "information";

/**
 * One problem found in a request: what is wrong, how to fix it, and where
 * (a FHIRPath into the request Bundle, when one applies).
 */
export interface Issue {
  severity: IssueSeverity;
  code: IssueCode;
  diagnostics: string;
  expression?: string[];
}

/**
 * Builds an error issue.
 *
 * @example
 *   issue("required", "MessageHeader.id is missing: give the message a unique id", "Bundle.entry[0].resource.id")
 */
export function issue(
  code: IssueCode,
  diagnostics: string,
  expression?: string | string[],
  severity: IssueSeverity = "error",
): Issue {
  const out: Issue = { severity, code, diagnostics };
  if (expression !== undefined) out.expression = Array.isArray(expression) ? expression : [expression];
  return out;
}

/**
 * Most issues one OperationOutcome lists (CONTRACT §5, §15). Every outcome the sandbox writes — validation, the
 * envelope, business rules, scenario-scripted outcomes, admin refusals — is built by `operationOutcome`, so this is
 * the one cap: a megabyte of small mistakes must not come back as tens of megabytes, nor cost a FHIRPath
 * evaluation each when the journal shows the call.
 */
export const MAX_ISSUES = 100;

const RANK: Record<IssueSeverity, number> = { information: 0, warning: 1, error: 2, fatal: 3 };

/** The more severe of two severities. */
export const worse = (a: IssueSeverity, b: IssueSeverity): IssueSeverity => (RANK[b] > RANK[a] ? b : a);

/** The issues that count others (made by moreIssues), and how many each counts. */
const counted = new WeakMap<Issue, number>();

/**
 * The last issue of a capped list: how many more there were, as severe as the worst of them (so an outcome never
 * looks milder than it is). `too-costly` is the R4 issue type for "not done because it would cost too much".
 */
export function moreIssues(count: number, severity: IssueSeverity, atLeast = false): Issue {
  const more = issue(
    "too-costly",
    `…and ${atLeast ? "at least " : ""}${count} more issue${count === 1 ? "" : "s"} not shown: an answer lists the first ${MAX_ISSUES}${atLeast ? ", and validation stopped before the end of the message" : ""}. Fix these and send again to see the rest.`,
    undefined,
    severity,
  );
  counted.set(more, count);
  return more;
}

/** Issues that say a list stopped growing (validationStopped): a count past them is a lower bound. */
const stops = new WeakSet<Issue>();

/** The last issue of a validation that stopped at `limit` problems (validator.ts): the message may hold more. */
export function validationStopped(limit: number): Issue {
  const stop = issue(
    "too-costly",
    `Validation stopped after ${limit} problems: the message may hold more. Fix these and send again.`,
    undefined,
    "error",
  );
  stops.add(stop);
  return stop;
}

/**
 * The issues an answer lists: all of them when there are at most MAX_ISSUES (and a last one counting the rest, as
 * a list capped before has), else the first MAX_ISSUES in the order found and one more counting the rest (a
 * counting issue among them for as many as it counts). One pass over the list.
 */
export function capIssues(issues: readonly Issue[]): readonly Issue[] {
  const last = issues.at(-1);
  if (issues.length <= MAX_ISSUES || (issues.length === MAX_ISSUES + 1 && last && counted.has(last))) return issues;
  let severity: IssueSeverity = "information";
  let count = 0;
  let atLeast = false;
  for (let i = MAX_ISSUES; i < issues.length; i++) {
    const left = issues[i] as Issue;
    severity = worse(severity, left.severity);
    if (stops.has(left)) atLeast = true;
    else count += counted.get(left) ?? 1;
  }
  return [...issues.slice(0, MAX_ISSUES), moreIssues(count, severity, atLeast)];
}

/** The OperationOutcome that carries a list of issues, capped at MAX_ISSUES and a last one counting the rest. */
export function operationOutcome(issues: readonly Issue[], id?: string): OperationOutcome {
  const outcome: OperationOutcome = {
    resourceType: "OperationOutcome",
    issue: capIssues(issues).map((i) => {
      const entry: OperationOutcome["issue"][number] = {
        severity: i.severity,
        code: i.code,
        diagnostics: i.diagnostics,
      };
      if (i.expression?.length) entry.expression = [...i.expression];
      return entry;
    }),
  };
  return id === undefined ? outcome : { resourceType: "OperationOutcome", id, issue: outcome.issue };
}
