import type { Issue } from "../fhir/outcome.js";
import { validateResource } from "./validator.js";

/** How strictly inbound messages are held to R4 (--validation, --emirates-id-check). */
export interface ValidationPolicy {
  /** strict: R4 errors refuse the message; warn: they come back as warnings; off: no R4 validation. */
  validation: "strict" | "warn" | "off";
  emiratesIdCheck: "error" | "warning" | "off";
  emiratesIdSystem: string;
}

export interface MessageValidation {
  /** Problems that refuse the message (400). */
  errors: Issue[];
  /** Problems an ok answer reports in its OperationOutcome (response.details). */
  warnings: Issue[];
}

/**
 * Validates a message Bundle under the policy. Whatever the policy, a
 * resource whose JSON does not have the R4 shape (an object where a string
 * belongs, one value where R4 has an array) is an error: the built-in
 * behaviour cannot read it, so it is refused even under `warn` and `off`.
 *
 * @example validateMessage(bundle, { validation: "strict", emiratesIdCheck: "error", emiratesIdSystem: "urn:ae:emirates-id" })
 */
export function validateMessage(bundle: Record<string, unknown>, policy: ValidationPolicy): MessageValidation {
  const { emiratesIdSystem, emiratesIdCheck } = policy;
  const shapeOnly = { mode: "shape", emiratesIdSystem, emiratesIdCheck: "off" } as const;
  if (policy.validation === "off") return { errors: validateResource(bundle, shapeOnly), warnings: [] };
  const all = validateResource(bundle, { mode: "full", emiratesIdSystem, emiratesIdCheck });
  if (all.length === 0) return { errors: all, warnings: [] };
  const errors = all.filter((i) => i.severity === "error" || i.severity === "fatal");
  const warnings = all.filter((i) => i.severity === "warning" || i.severity === "information");
  if (policy.validation === "strict") return { errors, warnings };
  const shape = validateResource(bundle, shapeOnly);
  const blocking = new Set(shape.map(key));
  return {
    errors: shape,
    warnings: [
      ...errors.filter((i) => !blocking.has(key(i))).map((i) => ({ ...i, severity: "warning" as const })),
      ...warnings,
    ],
  };
}

const key = (i: Issue) => `${i.code}\u0000${i.expression?.[0] ?? ""}`;

/**
 * The message's own issues first, then the validator's that say something
 * new. `envelope` issues (CONTRACT §2: the Bundle, its MessageHeader and
 * focus) explain their nodes in their own words, so a validator issue about
 * the same node repeats them; bdl-12 ("a message must have a MessageHeader
 * as the first resource") is theirs too. An `operation` issue (the
 * operation's own checks of its focus) hides only a validator issue of the
 * same type at the same node: "not an R4 Task status" and "a new Task must
 * start as draft" are two different things to fix.
 */
export function mergeIssues(
  checks: { envelope: readonly Issue[]; operation?: readonly Issue[] },
  validation: readonly Issue[],
): Issue[] {
  const operation = checks.operation ?? [];
  const own = [...checks.envelope, ...operation];
  if (validation.length === 0) return own;
  // One pass, a Set lookup per issue; no key is built when there is nothing to compare it with (a message of
  // many mistakes has hundreds of thousands of validator issues).
  const explained = new Set(checks.envelope.map((i) => i.expression?.[0]));
  const same = operation.length > 0 ? new Set(operation.map(key)) : undefined;
  const merged = [...own];
  for (const i of validation) {
    if (explained.size > 0 && explained.has(i.expression?.[0])) continue;
    if (same?.has(key(i)) || i.diagnostics.startsWith("bdl-12:")) continue;
    merged.push(i);
  }
  return merged;
}
