import type { OperationOutcome } from "fhir/r4.js";

/** FHIR issue-type codes the sandbox uses (http://hl7.org/fhir/issue-type). */
export type IssueCode =
  | "invalid"
  | "structure"
  | "required"
  | "value"
  | "invariant"
  | "security"
  | "login"
  | "not-found"
  | "not-supported"
  | "too-costly"
  | "business-rule"
  | "conflict"
  | "duplicate"
  | "processing"
  | "exception"
  | "timeout"
  | "transient";

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
