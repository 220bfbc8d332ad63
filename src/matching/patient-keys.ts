import type { Patient, Reference } from "fhir/r4.js";
import type { Message } from "../envelope/message.js";
import { identityOfEntry, identityOfReference } from "../store/patient-identity.js";

const PATIENT_FIELDS = ["patient", "subject", "for"] as const;

/**
 * Every key of every patient a message is about: its Patient entries, and
 * what the focus resources' patient / subject / for references name.
 */
export function patientKeysOf(message: Message): string[] {
  const keys = new Set<string>();
  for (const entry of message.entries) {
    if (entry.resource.resourceType === "Patient") {
      for (const key of identityOfEntry(entry.resource as Patient, message).keys) keys.add(key);
    }
  }
  for (const entry of message.focus) {
    for (const field of PATIENT_FIELDS) {
      const identity = identityOfReference(entry.resource[field] as Reference | undefined, message);
      for (const key of identity?.keys ?? []) keys.add(key);
    }
  }
  return [...keys];
}
