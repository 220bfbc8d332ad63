import type { Patient, Reference } from "fhir/r4.js";
import type { Message } from "../envelope/message.js";

/**
 * Who a patient is, as a request tells it: the keys it can be found by
 * (`system|value` per identifier, and its id) and any demographics sent.
 */
export interface PatientIdentity {
  keys: string[];
  given: Partial<Patient>;
}

/** `system|value` — the key form of an identifier (CONTRACT §6). */
export const identifierKey = (system: string | undefined, value: string) => `${system ?? ""}|${value}`;

/** The keys a patient can be found by: `system|value` per identifier with a value, then its id. */
export function keysOfPatient(patient: Partial<Patient>): string[] {
  const keys = (patient.identifier ?? []).flatMap((i) => (i.value ? [identifierKey(i.system, i.value)] : []));
  if (typeof patient.id === "string") keys.push(patient.id);
  return keys;
}

export function identityOfPatient(patient: Partial<Patient>): PatientIdentity {
  const keys = keysOfPatient(patient);
  const given: Partial<Patient> = {};
  for (const field of ["identifier", "name", "gender", "birthDate", "telecom", "address"] as const) {
    if (patient[field] !== undefined) Object.assign(given, { [field]: patient[field] });
  }
  return { keys, given };
}

const PATIENT_ID = /(?:^|\/)Patient\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[^/]+)?$/;

/**
 * The patient a resource's `patient`/`subject`/`for` reference means: an
 * entry of the request Bundle, `Patient/{id}`, or a logical identifier.
 */
export function identityOfReference(reference: Reference | undefined, message: Message): PatientIdentity | undefined {
  if (!reference) return undefined;
  if (typeof reference.reference === "string") {
    const entry = message.resolve(reference.reference);
    if (entry?.resource.resourceType === "Patient") return identityOfPatient(entry.resource as Patient);
    const id = PATIENT_ID.exec(reference.reference)?.[1];
    if (id) return { keys: [id], given: {} };
  }
  const identifier = reference.identifier;
  if (identifier?.value) {
    return { keys: [identifierKey(identifier.system, identifier.value)], given: { identifier: [identifier] } };
  }
  return undefined;
}
