import type { Resource } from "fhir/r4.js";
import type { Journal } from "../journal/journal.js";
import { requestsFor } from "../orders/order-resources.js";
import type { OrderWorkflow } from "../orders/order-workflow.js";
import type { PharmacyRegistry } from "../orders/pharmacy-registry.js";
import type { RecordType, SandboxStore } from "../store/sandbox-store.js";

/** What a workspace holds that a REST read looks in. */
export interface LookupSources {
  store: SandboxStore;
  orders: OrderWorkflow;
  pharmacies: PharmacyRegistry;
  journal: Journal;
}

/**
 * The types answers and pushes name with a RESTful fullUrl, which the CapabilityStatement lists as read and vread (a
 * read serves any other type an answer carried under such a fullUrl too: the request's resources it echoed).
 */
export const READABLE_TYPES = [
  "AllergyIntolerance",
  "Composition",
  "Condition",
  "DeviceRequest",
  "MedicationDispense",
  "MedicationRequest",
  "Observation",
  "OperationOutcome",
  "Organization",
  "Patient",
  "Procedure",
  "Subscription",
  "Task",
] as const;

const RECORD_TYPES: readonly string[] = ["AllergyIntolerance", "Condition", "Procedure", "Observation", "Task"];

/**
 * The resource `type/id` as the workspace holds it now: a patient or record of the store, an order's resources (its
 * patients, requests, pharmacies' Tasks), a pharmacy's Subscription; else the newest one its journal's answers and
 * pushes carried (OperationOutcomes, echoed resources, an order's resources once the order is gone), found through the
 * journal's index of fullUrls (`Journal.resources`), so that a read parses only the bodies that carried the URL.
 */
export function currentResource(sources: LookupSources, type: string, id: string): Resource | undefined {
  return liveResource(sources, type, id) ?? journaledResource(sources.journal, type, id);
}

/** The version `vid` of `type/id`: the live one if it is that version, else as an answer or push carried it. */
export function resourceVersion(sources: LookupSources, type: string, id: string, vid: string): Resource | undefined {
  const live = liveResource(sources, type, id);
  if (live?.meta?.versionId === vid) return live;
  return journaledResource(sources.journal, type, id, vid);
}

function liveResource({ store, orders, pharmacies }: LookupSources, type: string, id: string): Resource | undefined {
  if (type === "Patient") {
    const patient = store.patient(id);
    if (patient) return patient;
  }
  if (RECORD_TYPES.includes(type)) {
    const record = store.get(type as RecordType, id);
    if (record) return record.resource;
  }
  if (type === "Subscription") {
    const found = pharmacies.list().find((p) => p.subscription?.id === id);
    if (found?.subscription) return found.subscription;
  }
  const requested = type === "MedicationRequest" || type === "DeviceRequest";
  for (const order of orders.list()) {
    const candidates: Resource[] = [order.patient, order.anonymousPatient, ...order.dispensed];
    for (const pharmacy of order.pharmacies) candidates.push(pharmacy.task);
    // The requests as the exchange sends them now: about the patient (version 2) once allocated. Built only when a
    // request is asked for: every order is visited.
    if (requested) candidates.push(...requestsFor(order, order.allocatedAt ? order.patient : order.anonymousPatient));
    const found = candidates.find((r) => r.resourceType === type && r.id === id);
    if (found) return found;
  }
  return undefined;
}

interface Entry {
  fullUrl?: unknown;
  resource?: { resourceType?: unknown; id?: unknown; meta?: { versionId?: unknown } };
}

/**
 * The newest `type/id` (of version `vid`, if given) among the entries whose fullUrl names it (…/{type}/{id}) in the
 * journal's answers (inbound calls) and pushes (outbound ones). Only the bodies the index says carried the URL are
 * parsed, newest first: a read, one body; a vread, until the version is found.
 */
function journaledResource(journal: Journal, type: string, id: string, vid?: string): Resource | undefined {
  const tail = `/${type}/${id}`;
  // Only the calls that carried it (the journal's index): an id no answer or push named costs no walk at all.
  for (const call of journal.resources.calls(type, id)) {
    const body = call.direction === "inbound" ? call.response?.body : call.request.body;
    if (body === undefined) continue;
    for (const entry of entriesOf(body)) {
      const resource = entry.resource;
      if (typeof entry.fullUrl !== "string" || !entry.fullUrl.endsWith(tail)) continue;
      if (resource?.resourceType !== type || resource.id !== id) continue;
      if (vid !== undefined && resource.meta?.versionId !== vid) continue;
      return resource as Resource;
    }
  }
  return undefined;
}

/** A message Bundle's entries, newest last; the `{"content": "…"}` envelope (pushes, --response-envelope) unwrapped. */
function entriesOf(body: string): Entry[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
    const content = (parsed as { content?: unknown }).content;
    if (typeof content === "string") parsed = JSON.parse(content);
  } catch {
    return [];
  }
  const entries = (parsed as { entry?: unknown } | null)?.entry;
  return Array.isArray(entries) ? (entries as Entry[]).filter((e) => e !== null && typeof e === "object") : [];
}
