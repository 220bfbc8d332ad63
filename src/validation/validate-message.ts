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
  const base = { emiratesIdSystem: policy.emiratesIdSystem, emiratesIdCheck: policy.emiratesIdCheck };
  if (policy.validation === "off") {
    return { errors: validateResource(bundle, { ...base, mode: "shape", emiratesIdCheck: "off" }), warnings: [] };
  }
  const all = validateResource(bundle, { ...base, mode: "full" });
  const errors = all.filter((i) => i.severity === "error" || i.severity === "fatal");
  const warnings = all.filter((i) => i.severity === "warning" || i.severity === "information");
  if (policy.validation === "strict") return { errors, warnings };
  const shape = validateResource(bundle, { ...base, mode: "shape", emiratesIdCheck: "off" });
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
 * The message checks' issues first, then the validator's that say
 * something new. A validator issue about a node a message check already
 * explains repeats it in other words, and bdl-12 ("a message must have a
 * MessageHeader as the first resource") is the message checks' own rule.
 */
export function mergeIssues(checks: readonly Issue[], validation: readonly Issue[]): Issue[] {
  if (validation.length === 0) return [...checks];
  const said = new Set(checks.map((i) => i.expression?.[0]));
  return [...checks, ...validation.filter((i) => !said.has(i.expression?.[0]) && !i.diagnostics.startsWith("bdl-12:"))];
}
