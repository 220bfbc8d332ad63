import type { Patient, Reference, Resource } from "fhir/r4.js";
import type { EntryRef, Message } from "../envelope/message.js";
import { isEnteredInError, markEnteredInError } from "../fhir/entered-in-error.js";
import { type Issue, issue } from "../fhir/outcome.js";
import { identityOfReference, type PatientIdentity } from "../store/patient-identity.js";
import type { RecordType } from "../store/sandbox-store.js";
import { type Handler, type HandlerTable, invalid, refuse, withPatients } from "./handler.js";

/** The three kinds of patient-profile record and where each names its patient. */
const KINDS = [
  { name: "allergy", patientField: "patient" },
  { name: "history", patientField: "subject" },
  { name: "measurement", patientField: "subject" },
] as const;

type PatientField = (typeof KINDS)[number]["patientField"];
type ProfileRecord = Resource & Record<PatientField, Reference | undefined>;

export function patientReference(patient: Patient): Reference {
  const name = patient.name?.find((n) => n.use === "official") ?? patient.name?.[0];
  const display = name?.text ?? [name?.given?.join(" "), name?.family].filter(Boolean).join(" ");
  return display ? { reference: `Patient/${patient.id}`, display } : { reference: `Patient/${patient.id}` };
}

/** The patient each focus record names, or the issues saying why it names none. */
function identities(
  focus: EntryRef[],
  field: PatientField,
  message: Message,
): { ok: true; identities: PatientIdentity[] } | { ok: false; issues: Issue[] } {
  const found: PatientIdentity[] = [];
  const issues: Issue[] = [];
  for (const entry of focus) {
    const identity = identityOfReference((entry.resource as ProfileRecord)[field], message);
    if (identity) found.push(identity);
    else
      issues.push(
        issue(
          "invalid",
          `${entry.resource.resourceType}.${field} must name the patient: a Patient entry of this Bundle, Patient/{id}, or an identifier (system and value).`,
          `${entry.path}.${field}`,
        ),
      );
  }
  return issues.length > 0 ? { ok: false, issues } : { ok: true, identities: found };
}

const add =
  (field: PatientField): Handler =>
  ({ focus, message }, { store }) => {
    // Required elements and units are catalogue checks, reported with every other problem before this runs.
    const who = identities(focus, field, message);
    if (!who.ok) return invalid(...who.issues);
    const owners: string[] = [];
    const stored = focus.map((entry, i) => {
      const patient = store.ensurePatient(who.identities[i] as PatientIdentity);
      owners.push(patient.id as string);
      const { id: _clientId, ...resource } = entry.resource as ProfileRecord;
      return store.create({ ...resource, [field]: patientReference(patient) } as Resource, patient.id as string);
    });
    return withPatients(stored, owners, store);
  };

/**
 * The stored record each focus resource names, checked to be present, not
 * removed, and (when the message names a patient) that patient's.
 */
function existing(focus: EntryRef[], field: PatientField, message: Message, context: Parameters<Handler>[1]) {
  const issues: Issue[] = [];
  const held = focus.map((entry) => {
    const { resourceType, id } = entry.resource;
    const named = (entry.resource as ProfileRecord)[field];
    const identity = named ? identityOfReference(named, message) : undefined;
    const found =
      context.store.get(resourceType as RecordType, id as string) ??
      // A record of the generated profile of a patient not met yet: the exchange holds it already.
      (identity ? context.store.generatedRecord(identity, resourceType as RecordType, id as string) : undefined);
    if (!found) {
      issues.push(
        issue(
          "not-found",
          `${resourceType}/${id} is not in the sandbox: use the id returned when the record was added.`,
          `${entry.path}.id`,
        ),
      );
      return undefined;
    }
    if (isEnteredInError(found.resource)) {
      issues.push(
        issue(
          "business-rule",
          `${resourceType}/${id} was removed (entered-in-error) and cannot be changed; add a new record instead.`,
          `${entry.path}.id`,
        ),
      );
      return undefined;
    }
    if (named) {
      const owner = identity ? context.store.findPatient(identity) : undefined;
      if (owner?.id !== found.patientId) {
        issues.push(
          issue(
            "business-rule",
            `${resourceType}/${id} belongs to another patient (Patient/${found.patientId}); a record cannot be moved between patients.`,
            `${entry.path}.${field}`,
          ),
        );
        return undefined;
      }
    }
    return found;
  });
  return { issues, held };
}

const ownersOf = (held: ReadonlyArray<{ patientId: string } | undefined>) =>
  held.flatMap((h) => (h ? [h.patientId] : []));

const update =
  (field: PatientField): Handler =>
  ({ focus, message }, context) => {
    const { issues, held } = existing(focus, field, message, context);
    if (issues.length > 0) return refuse(...issues);
    const updated = focus.map((entry, i) => {
      const before = held[i]?.resource as ProfileRecord;
      return context.store.update({ ...entry.resource, [field]: before[field] } as Resource);
    });
    return withPatients(updated, ownersOf(held), context.store);
  };

const remove =
  (field: PatientField): Handler =>
  ({ focus, message }, context) => {
    const { issues, held } = existing(focus, field, message, context);
    if (issues.length > 0) return refuse(...issues);
    const removed = held.map((h) => context.store.update(markEnteredInError(h?.resource as Resource)));
    return withPatients(removed, ownersOf(held), context.store);
  };

/** add/update/remove for allergies, history and measurements. */
export const profileRecordHandlers: HandlerTable = Object.fromEntries(
  KINDS.flatMap(({ name, patientField }) => [
    [`add-${name}`, add(patientField)],
    [`update-${name}`, update(patientField)],
    [`remove-${name}`, remove(patientField)],
  ]),
);
