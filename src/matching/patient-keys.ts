import type { Patient, Reference } from "fhir/r4.js";
import type { Message } from "../envelope/message.js";
import { identityOfReference, keysOfPatient } from "../store/patient-identity.js";

const PATIENT_FIELDS = ["patient", "subject", "for"] as const;

/**
 * Every key of every patient a message is about: its Patient entries, and
 * what the focus resources' patient / subject / for references name.
 */
export function patientKeysOf(message: Message): string[] {
  const keys = new Set<string>();
  for (const entry of message.entries) {
    if (entry.resource.resourceType === "Patient") {
      for (const key of keysOfPatient(entry.resource as Patient)) keys.add(key);
    }
  }
  for (const entry of message.focus) {
    for (const field of PATIENT_FIELDS) {
      const reference = entry.resource[field] as Reference | undefined;
      // A Patient entry of this message: its keys are in already (read once: every message pays for this).
      const target = typeof reference?.reference === "string" ? message.resolve(reference.reference) : undefined;
      if (target?.resource.resourceType === "Patient") continue;
      const identity = identityOfReference(reference, message);
      for (const key of identity?.keys ?? []) keys.add(key);
    }
  }
  return [...keys];
}
