import type { Resource } from "fhir/r4.js";

const VERIFICATION = "http://terminology.hl7.org/CodeSystem/";

/**
 * Marks a removed record the R4 way (CONTRACT §6): AllergyIntolerance and
 * Condition get verificationStatus entered-in-error and lose clinicalStatus
 * (invariants ait-2, con-5); other resources get status entered-in-error.
 */
export function markEnteredInError<R extends Resource>(resource: R): R {
  const marked = structuredClone(resource) as unknown as Record<string, unknown>;
  if (resource.resourceType === "AllergyIntolerance" || resource.resourceType === "Condition") {
    const system =
      resource.resourceType === "AllergyIntolerance"
        ? `${VERIFICATION}allergyintolerance-verification`
        : `${VERIFICATION}condition-ver-status`;
    marked.verificationStatus = { coding: [{ system, code: "entered-in-error", display: "Entered in Error" }] };
    delete marked.clinicalStatus;
  } else {
    marked.status = "entered-in-error";
  }
  return marked as unknown as R;
}

/** Whether a record was removed: entered-in-error in verificationStatus or status. */
export function isEnteredInError(resource: Resource): boolean {
  const r = resource as Resource & { status?: string; verificationStatus?: { coding?: Array<{ code?: string }> } };
  return (
    r.status === "entered-in-error" || r.verificationStatus?.coding?.some((c) => c.code === "entered-in-error") === true
  );
}
