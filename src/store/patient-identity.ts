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
    if (patient[field] !== undefined) (given as Record<string, unknown>)[field] = patient[field];
  }
  return { keys, given };
}

/**
 * Identities already worked out from a message, by the resource or Reference they were read from. The scenario
 * rules' patientKeys and the handler read the same ones from the same message (an add-allergy's patient three
 * times over): each is worked out once. Callers share the identities, so none changes one.
 */
const known = new WeakMap<Message, Map<object, PatientIdentity | undefined>>();

function remembered<K extends object>(
  message: Message,
  of: K,
  make: (of: K, message: Message) => PatientIdentity | undefined,
): PatientIdentity | undefined {
  let identities = known.get(message);
  if (identities === undefined) {
    identities = new Map();
    known.set(message, identities);
  } else if (identities.has(of)) return identities.get(of);
  const identity = make(of, message);
  identities.set(of, identity);
  return identity;
}

/** identityOfPatient of a Patient resource of the message, worked out once per message. */
export function identityOfEntry(patient: Partial<Patient>, message: Message): PatientIdentity {
  return remembered(message, patient, identityOfPatient) as PatientIdentity;
}

const PATIENT_ID = /(?:^|\/)Patient\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[^/]+)?$/;

/**
 * The patient a resource's `patient`/`subject`/`for` reference means: an
 * entry of the request Bundle, `Patient/{id}`, or a logical identifier.
 */
export function identityOfReference(reference: Reference | undefined, message: Message): PatientIdentity | undefined {
  // Worked out once per message and Reference (see `known`).
  return reference ? remembered(message, reference, readReference) : undefined;
}

function readReference(reference: Reference, message: Message): PatientIdentity | undefined {
  if (typeof reference.reference === "string") {
    const entry = message.resolve(reference.reference);
    if (entry?.resource.resourceType === "Patient") return identityOfEntry(entry.resource as Patient, message);
    const id = PATIENT_ID.exec(reference.reference)?.[1];
    if (id) return { keys: [id], given: {} };
  }
  const identifier = reference.identifier;
  if (identifier?.value) {
    return { keys: [identifierKey(identifier.system, identifier.value)], given: { identifier: [identifier] } };
  }
  return undefined;
}
