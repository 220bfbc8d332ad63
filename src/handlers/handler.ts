import type { Resource } from "fhir/r4.js";
import type { EntryRef, Message } from "../envelope/message.js";
import type { Issue } from "../fhir/outcome.js";
import type { Operation } from "../routing/operation.js";
import type { SandboxStore } from "../store/sandbox-store.js";

/** What a handler gets: the routed operation, the parsed message and its checked focus. */
export interface HandlerInput {
  operation: Operation;
  message: Message;
  focus: EntryRef[];
}

/** What the built-in behaviour needs from outside: time and ids (so tests can fix both) and the store. */
export interface HandlerContext {
  now(): Date;
  newId(): string;
  store: SandboxStore;
}

/**
 * A handler returns resources (the response message's entries, with `focus`
 * naming which of them MessageHeader.focus points at, default all), refuses
 * on a business rule (a fatal-error response message), or finds the focus
 * invalid for the operation (400, not processed). It never builds Bundles or
 * OperationOutcomes, and changes no state unless it answers ok.
 */
export type HandlerResult =
  | { kind: "ok"; resources: Resource[]; focus?: Resource[] }
  | { kind: "refused"; issues: Issue[] }
  | { kind: "invalid"; issues: Issue[] };

export type Handler = (input: HandlerInput, context: HandlerContext) => HandlerResult | Promise<HandlerResult>;

/** Handlers by operation id. */
export type HandlerTable = Readonly<Record<string, Handler>>;

export const ok = (resources: Resource[], focus?: Resource[]): HandlerResult =>
  focus ? { kind: "ok", resources, focus } : { kind: "ok", resources };

/**
 * An ok answer about patients' records: the records (the focus) followed by
 * the Patients they belong to, so that their `Patient/{id}` references
 * resolve inside the response Bundle.
 *
 * @example
 *   return withPatients([storedAllergy], [patientId], store);
 */
export function withPatients(records: Resource[], patientIds: readonly string[], store: SandboxStore): HandlerResult {
  // Loops, not a Set and spreads: one message names one patient, nearly always.
  const resources = records.slice();
  for (let i = 0; i < patientIds.length; i++) {
    const id = patientIds[i] as string;
    if (patientIds.indexOf(id) !== i) continue;
    const patient = store.patient(id);
    if (patient) resources.push(patient);
  }
  return { kind: "ok", resources, focus: records };
}

export const refuse = (...issues: Issue[]): HandlerResult => ({ kind: "refused", issues });

export const invalid = (...issues: Issue[]): HandlerResult => ({ kind: "invalid", issues });
