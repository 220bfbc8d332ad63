import { createHash } from "node:crypto";
import type {
  AllergyIntolerance,
  Bundle,
  BundleEntry,
  Condition,
  MedicationDispense,
  Observation,
  Organization,
  Patient,
  Procedure,
  Reference,
  Resource,
  Subscription,
  Task,
} from "fhir/r4.js";
import { emiratesId } from "../domain/emirates-id.js";
import { TASK_TRANSITIONS } from "../domain/task-transitions.js";
import { type MessageDeps, requestMessage, SANDBOX_EVENT_SYSTEM } from "../fhir/response-message.js";
import { DRUG_SYSTEM, DRUGS } from "../generate/drugs.js";
import { generateProfile } from "../generate/patient-profile.js";
import { deliveryOptionPart, PHARMACY_LICENCE_SYSTEM, status } from "../orders/order-resources.js";
import { generatedProfileOf } from "../store/sandbox-store.js";

/** The ids of an order a pharmacy answers, as GET /__admin/orders/{id} shows them (src/orders/order-view.ts). */
export interface OrderFacts {
  id: string;
  kind: "medication" | "device";
  /** This pharmacy's fulfillment Task. */
  taskId: string;
  items: Array<{
    requestId: string;
    code: string | null;
    display: string | null;
    quantity: { value?: number; unit?: string } | null;
  }>;
}

/** The subset of GET /__admin/orders/{id} (src/orders/order-view.ts) a pharmacy's answer needs. */
export interface OrderView {
  id: string;
  kind: "medication" | "device";
  items: OrderFacts["items"];
  pharmacies: Array<{ licence: string; taskId: string }>;
}

/**
 * The ids one pharmacy's answers to an order name: its Task, the order's
 * requests. `licence` may be left out when the order went to one pharmacy.
 */
export function orderFacts(
  view: OrderView,
  licence: string | undefined,
): { ok: true; facts: OrderFacts; licence: string } | { ok: false; problem: string } {
  const licences = view.pharmacies.map((p) => p.licence);
  const chosen = licence
    ? view.pharmacies.find((p) => p.licence === licence)
    : view.pharmacies.length === 1
      ? view.pharmacies[0]
      : undefined;
  if (!chosen) {
    return {
      ok: false,
      problem: licence
        ? `order ${view.id} was not sent to pharmacy ${licence}; it was sent to ${licences.join(", ")}`
        : `order ${view.id} was sent to ${licences.join(", ")}: say which with --pharmacy`,
    };
  }
  return {
    ok: true,
    facts: { id: view.id, kind: view.kind, taskId: chosen.taskId, items: view.items },
    licence: chosen.licence,
  };
}

export interface ExampleInput {
  /** The operation id, and the event code to send (its own, or an alias). */
  operation: string;
  event: string;
  /** The sandbox's --seed and --emirates-id-system: records of generated profiles are named by their ids. */
  seed: string;
  emiratesIdSystem: string;
  /** The patient the message is about. */
  emiratesId: string;
  /** The sandbox's FHIR base (e.g. http://localhost:8080/uae-fhir/r4): fullUrls of the resources it holds. */
  fhirBase: string;
  /** The pharmacy of the drug-order messages: its licence (as subscribed), name, and rest-hook endpoint. */
  pharmacy: { licence: string; name?: string; endpoint: string };
  /** The order a pharmacy's confirm, receive-allocation or dispense answers; placeholders without one. */
  order?: OrderFacts;
}

export interface Example {
  bundle: Bundle;
  /** Things the reader must know, e.g. that an id is a placeholder. */
  notes: string[];
}

/** The pharmacy of the drug-order examples when none is named, and its rest-hook endpoint. */
export const EXAMPLE_PHARMACY = { licence: "PH-EXAMPLE-0001", name: "Example Pharmacy" };
export const EXAMPLE_ENDPOINT = "http://localhost:9090/notifications";

const CLINIC = "https://clinic.example.ae/ehr";
const PHARMACY = "https://pharmacy.example.ae/fhir";
/** Stand-ins when no order is given: valid ids that no sandbox holds. */
const PLACEHOLDER_TASK = "fulfillment-task-id";
const PLACEHOLDER_REQUEST = "medication-request-id";

/** A resource without the server's id and meta: what a client sends to add it. */
function asNew<R extends Resource>(resource: R): R {
  const { id: _id, meta: _meta, ...rest } = resource;
  return rest as R;
}

/** A stored record as a client sends it back: the server's id kept, meta (versions, tags) left to the server. */
function asSent<R extends Resource>(resource: R): R {
  const { meta: _meta, ...rest } = resource;
  return rest as R;
}

interface Parts {
  resources: Resource[];
  focus: Resource[];
  sender?: Resource;
  source: string;
}

type Build = (x: Context) => Parts;

interface Context extends ExampleInput {
  /** The patient as a client names it: its Emirates ID, as the Patient entry that records refer to. */
  patient: Patient;
  patientRef: Reference;
  /** The profile a sandbox with this seed generates for the patient: the records it holds. */
  profile: ReturnType<typeof generateProfile>;
  /** Another generated profile: realistic new records to add. */
  fresh: ReturnType<typeof generateProfile>;
  organization: Organization;
  notes: string[];
  now(): Date;
}

const LOINC_WEIGHT = "29463-7";
const LOINC_HEART_RATE = "8867-4";
const isCode = (o: Observation, code: string) => o.code.coding?.some((c) => c.code === code) ?? false;

const profileMessage = <R extends Resource>(x: Context, records: R[]): Parts => ({
  resources: [...records, x.patient],
  focus: records,
  source: CLINIC,
});

const forPatient = (x: Context): Parts => ({ resources: [x.patient], focus: [x.patient], source: CLINIC });

const fromPharmacy = (x: Context, focus: Resource[]): Parts => ({
  resources: [...focus, x.organization],
  focus,
  sender: x.organization,
  source: PHARMACY,
});

/** The pharmacy's fulfillment Task, as its answers name it: the same id, owned by the pharmacy. */
function fulfillmentTask(x: Context, change: Partial<Task>): Task {
  if (!x.order) x.notes.push(`Task/${PLACEHOLDER_TASK} is a placeholder: ${ORDER_HINT}`);
  return {
    resourceType: "Task",
    id: x.order?.taskId ?? PLACEHOLDER_TASK,
    status: "accepted",
    intent: "order",
    owner: { identifier: { system: PHARMACY_LICENCE_SYSTEM, value: x.pharmacy.licence } },
    ...change,
  };
}

export const ORDER_HINT =
  "give --order <id> (and --pharmacy, --url) to fill in the ids of an order of a running sandbox (GET /__admin/orders/{id}).";

/** One builder per operation: which resources the message carries, and which are its focus. */
const BUILDERS: Readonly<Record<string, Build>> = {
  "view-patient-profile": forPatient,
  "get-pending-tasks": forPatient,
  "add-allergy": (x) =>
    profileMessage(x, [{ ...asNew(x.fresh.allergies[0] as AllergyIntolerance), patient: x.patientRef }]),
  "update-allergy": (x) => {
    const stored = x.profile.allergies[0] as AllergyIntolerance;
    const criticality = stored.criticality === "high" ? "low" : "high";
    return profileMessage(x, [{ ...asSent(stored), criticality, patient: x.patientRef }]);
  },
  "remove-allergy": (x) =>
    profileMessage(x, [{ ...asSent(x.profile.allergies.at(-1) as AllergyIntolerance), patient: x.patientRef }]),
  "add-history": (x) => profileMessage(x, [{ ...asNew(x.fresh.conditions[0] as Condition), subject: x.patientRef }]),
  "update-history": (x) => {
    const stored = x.profile.conditions[0] as Condition;
    return profileMessage(x, [
      { ...asSent(stored), subject: x.patientRef, note: [{ text: "Reviewed at the follow-up visit." }] },
    ]);
  },
  "remove-history": (x) => {
    const stored = (x.profile.procedures.at(-1) ?? x.profile.conditions.at(-1)) as Condition | Procedure;
    return profileMessage(x, [{ ...asSent(stored), subject: x.patientRef }]);
  },
  "add-measurement": (x) => {
    const weight = x.fresh.observations.find((o) => isCode(o, LOINC_WEIGHT)) as Observation;
    return profileMessage(x, [{ ...asNew(weight), subject: x.patientRef }]);
  },
  "update-measurement": (x) => {
    const stored = x.profile.observations.filter((o) => isCode(o, LOINC_WEIGHT)).at(-1) as Observation;
    const quantity = stored.valueQuantity ?? {};
    const corrected = { ...quantity, value: Math.round(((quantity.value ?? 0) + 0.5) * 10) / 10 };
    return profileMessage(x, [{ ...asSent(stored), subject: x.patientRef, valueQuantity: corrected }]);
  },
  "remove-measurement": (x) => {
    const stored = x.profile.observations.filter((o) => isCode(o, LOINC_HEART_RATE)).at(-1) as Observation;
    return profileMessage(x, [{ ...asSent(stored), subject: x.patientRef }]);
  },
  "add-task": (x) =>
    profileMessage(x, [{ ...asNew(x.fresh.tasks[0] as Task), status: "requested", for: x.patientRef }]),
  "update-task": (x) => {
    const stored = x.profile.tasks[0] as Task;
    // The next status the state machine allows that leaves the task open: cancelling is cancel-task's job, and a
    // task completed here could not then be cancelled by cancel-task's example (often the same task).
    const next =
      TASK_TRANSITIONS[stored.status].find((s) => s !== "cancelled" && TASK_TRANSITIONS[s].includes("cancelled")) ??
      stored.status;
    return profileMessage(x, [{ ...asSent(stored), status: next, priority: "urgent", for: x.patientRef }]);
  },
  "cancel-task": (x) => {
    const stored = x.profile.tasks.at(-1) as Task;
    return profileMessage(x, [
      { ...asSent(stored), status: "cancelled", statusReason: { text: "No longer needed." }, for: x.patientRef },
    ]);
  },
  "subscribe-order-notifications": (x) => {
    const subscription: Subscription = {
      resourceType: "Subscription",
      status: "requested",
      reason: `Drug order fulfillment requests for ${x.pharmacy.name ?? x.pharmacy.licence}`,
      criteria: "Task?code=fulfill",
      channel: { type: "rest-hook", endpoint: x.pharmacy.endpoint, payload: "application/fhir+json" },
    };
    return {
      resources: [subscription, x.organization],
      focus: [subscription, x.organization],
      sender: x.organization,
      source: PHARMACY,
    };
  },
  "confirm-drugs-availability": (x) =>
    fromPharmacy(x, [
      fulfillmentTask(x, {
        status: "accepted",
        businessStatus: status("available"),
        output: [
          deliveryOptionPart({ method: "home-delivery", etaMinutes: 90, price: 15 }, "delivery-option"),
          deliveryOptionPart({ method: "pickup", etaMinutes: 30, price: 0 }, "delivery-option"),
        ],
      }),
    ]),
  "receive-allocation": (x) => fromPharmacy(x, [fulfillmentTask(x, {})]),
  "send-dispense-summary": (x) => {
    if (x.order?.kind === "device") return fromPharmacy(x, [fulfillmentTask(x, { status: "completed" })]);
    const drug = DRUGS[0] as (typeof DRUGS)[number];
    const items = x.order?.items ?? [
      {
        requestId: PLACEHOLDER_REQUEST,
        code: drug.code,
        display: drug.display,
        quantity: { value: drug.quantities[0], unit: drug.unit },
      },
    ];
    if (!x.order) x.notes.push(`MedicationRequest/${PLACEHOLDER_REQUEST} is a placeholder: ${ORDER_HINT}`);
    const dispenses = items.map(
      (item): MedicationDispense => ({
        resourceType: "MedicationDispense",
        status: "completed",
        medicationCodeableConcept: {
          coding: [{ system: DRUG_SYSTEM, code: item.code ?? "", ...(item.display ? { display: item.display } : {}) }],
          ...(item.display ? { text: item.display } : {}),
        },
        ...(item.quantity?.value !== undefined
          ? { quantity: { value: item.quantity.value, unit: item.quantity.unit } }
          : {}),
        authorizingPrescription: [{ reference: `MedicationRequest/${item.requestId}` }],
        whenHandedOver: x.now().toISOString(),
      }),
    );
    return fromPharmacy(x, dispenses);
  },
};

/** The Emirates ID of the patient an example is about when none is given: the same for the same seed. */
export function exampleEmiratesId(seed: string): string {
  const digest = createHash("sha256").update(`${seed}\u0000example-patient`).digest();
  return emiratesId(1950 + (digest.readUInt32BE(0) % 55), 1_000_000 + (digest.readUInt32BE(4) % 9_000_000));
}

/** The operations an example can be built for. */
export const EXAMPLE_OPERATIONS = Object.keys(BUILDERS);

/**
 * A valid request message for an operation, from the generators the
 * sandbox uses: records to add come from a generated profile; records to
 * update or remove are those of the patient's own generated profile, which
 * a sandbox with the same seed holds for that patient (even before it has
 * seen it); a pharmacy's messages name the ids of an order when given one.
 *
 * @example
 *   exampleMessage({ operation: "add-allergy", event: "add-allergy", emiratesId: "784-1990-1234567-6", … }, deps)
 */
export function exampleMessage(input: ExampleInput, deps: MessageDeps): Example {
  const build = BUILDERS[input.operation];
  if (!build) throw new Error(`no example for operation ${input.operation}`);
  const identifier = { system: input.emiratesIdSystem, value: input.emiratesId };
  const patient: Patient = { resourceType: "Patient", identifier: [identifier] };
  const patientUrl = `urn:uuid:${deps.newId()}`;
  const organization: Organization = {
    resourceType: "Organization",
    identifier: [{ system: PHARMACY_LICENCE_SYSTEM, value: input.pharmacy.licence }],
    ...(input.pharmacy.name ? { name: input.pharmacy.name } : {}),
  };
  const key = `${input.emiratesIdSystem}|${input.emiratesId}`;
  const notes: string[] = [];
  const parts = build({
    ...input,
    patient,
    patientRef: { reference: patientUrl },
    // As the store generates it for a patient named by this identifier (see generatedProfileOf).
    profile: generatedProfileOf({ keys: [key], given: { identifier: [identifier] } }, input),
    fresh: generateProfile(input.seed, `urn:uae-fhir-sandbox:example|${input.emiratesId}`, {}, input.emiratesIdSystem),
    organization,
    notes,
    now: deps.now,
  });
  // Resources the sandbox holds are named by their RESTful URL; new ones by a urn:uuid (the patient's chosen above).
  const entries: BundleEntry[] = parts.resources.map((resource) => ({
    fullUrl:
      resource === patient
        ? patientUrl
        : resource.id
          ? `${input.fhirBase}/${resource.resourceType}/${resource.id}`
          : `urn:uuid:${deps.newId()}`,
    resource,
  }));
  const bundle = requestMessage(
    {
      eventCoding: { system: SANDBOX_EVENT_SYSTEM, code: input.event },
      source: parts.source,
      entries,
      focus: parts.focus,
      ...(parts.sender ? { sender: parts.sender } : {}),
    },
    deps,
  );
  return { bundle, notes };
}
