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

/** The OperationOutcome that carries a list of issues. */
export function operationOutcome(issues: readonly Issue[], id?: string): OperationOutcome {
  const outcome: OperationOutcome = {
    resourceType: "OperationOutcome",
    issue: issues.map((i) => {
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
