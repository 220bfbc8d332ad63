import type {
  AllergyIntolerance,
  Condition,
  MedicationDispense,
  Observation,
  Organization,
  Patient,
  Procedure,
  Resource,
  Subscription,
  Task,
} from "fhir/r4.js";
import type { Hono } from "hono";
import { ALTERNATE, example, type MessageOptions, messageBundle, STANDARD } from "../support/messages.js";
import { stored } from "./response-checks.js";

/** A pharmacy as the drug-order messages name it: an Organization whose identifier is its licence. */
export const pharmacy = (): Organization => ({
  resourceType: "Organization",
  id: "pharmacy-al-noor",
  identifier: [{ system: "urn:ae:doh:pharmacy-licence", value: "PF-2046" }],
  name: "Al Noor Pharmacy",
  telecom: [{ system: "phone", value: "+971 2 555 0100" }],
});

/** The HL7 Subscription example as a pharmacy sends it; the endpoint stays on this machine. */
export const pharmacySubscription = (): Subscription => ({
  ...example<Subscription>("subscription-example.json"),
  channel: {
    type: "rest-hook",
    endpoint: "http://127.0.0.1:9/pharmacy/notifications",
    payload: "application/fhir+json",
    header: ["Authorization: Bearer pharmacy-token"],
  },
});

/** Task.code of a health-program task: its kind (order, measure or assessment) and the required action. */
export const taskCode = (kind: "order" | "measure" | "assessment", action: string): Task["code"] => ({
  coding: [{ system: "urn:uae-fhir-sandbox:task-kind", code: kind }],
  text: action,
});

/** A health-program Task as add-task needs it (HL7 task-example1, starting as `ready`, its kind coded). */
export const programTask = (): Task => {
  const task = example<Task>("task-example1.json");
  return { ...task, status: "ready", code: taskCode("order", task.code?.text ?? "Lipid Panel") };
};

const coded = (code: string) => ({
  coding: [{ system: "https://sandbox.example.ae/fhir/CodeSystem/fulfillment-status", code }],
});

/** The pharmacy's answer to a fulfillment request: the same Task, accepted, drugs available. */
export const confirmationTask = (): Task => ({
  resourceType: "Task",
  id: "fulfillment-7f3a",
  status: "accepted",
  intent: "order",
  businessStatus: coded("available"),
  focus: { reference: "MedicationRequest/medrx0302" },
  owner: { reference: "Organization/pharmacy-al-noor" },
  output: [
    {
      type: { text: "delivery-option" },
      valueCodeableConcept: { text: "home delivery within 4 hours" },
    },
  ],
});

/** A message Bundle whose MessageHeader.sender is the entry at `index` (the pharmacy). */
export function fromPharmacy(
  event: string,
  resources: Resource[],
  focus: number[],
  index: number,
  options: MessageOptions = {},
) {
  const bundle = messageBundle(event, resources, { source: "https://pharmacy.example.ae/fhir", ...options, focus });
  const header = bundle.entry?.[0]?.resource as { sender?: { reference: string } };
  header.sender = { reference: bundle.entry?.[index + 1]?.fullUrl as string };
  return bundle;
}

export interface OperationCase {
  /** Operation id = default event code (CONTRACT §3). */
  id: string;
  path: string;
  /** Resource types the response focus may hold, and the one it must hold (if any). */
  returns: { types: string[]; required?: string };
  /** Needs an order that the sandbox pushed first; a stateful store may refuse it standalone. */
  orderFlow?: boolean;
  /** Builds a valid request; may first add the record it changes, through the API. */
  request(app: Hono, options?: MessageOptions): Promise<ReturnType<typeof messageBundle>>;
}

const add = async <T extends Resource>(app: Hono, event: string, resource: T): Promise<T> =>
  stored<T>(app, messageBundle(event, [resource]));

/** One valid request per operation of CONTRACT §3. */
export const OPERATION_CASES: OperationCase[] = [
  {
    id: "view-patient-profile",
    path: STANDARD,
    returns: { types: ["Patient", "Composition"], required: "Patient" },
    request: async (_app, o) => messageBundle("view-patient-profile", [example<Patient>("patient-example.json")], o),
  },
  {
    id: "add-allergy",
    path: STANDARD,
    returns: { types: ["AllergyIntolerance"], required: "AllergyIntolerance" },
    request: async (_app, o) =>
      messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")], o),
  },
  {
    id: "update-allergy",
    path: STANDARD,
    returns: { types: ["AllergyIntolerance"], required: "AllergyIntolerance" },
    request: async (app, o) => {
      const saved = await add(app, "add-allergy", example<AllergyIntolerance>("allergyintolerance-medication.json"));
      const changed: AllergyIntolerance = { ...saved, criticality: "low" };
      return messageBundle("update-allergy", [changed], o);
    },
  },
  {
    id: "remove-allergy",
    path: ALTERNATE,
    returns: { types: ["AllergyIntolerance"], required: "AllergyIntolerance" },
    request: async (app, o) => {
      const saved = await add(app, "add-allergy", example<AllergyIntolerance>("allergyintolerance-fishallergy.json"));
      return messageBundle("remove-allergy", [saved], o);
    },
  },
  {
    id: "add-history",
    path: STANDARD,
    returns: { types: ["Condition", "Procedure"], required: "Condition" },
    request: async (_app, o) => messageBundle("add-history", [example<Condition>("condition-example2.json")], o),
  },
  {
    id: "update-history",
    path: STANDARD,
    returns: { types: ["Condition", "Procedure"], required: "Procedure" },
    request: async (app, o) => {
      const saved = await add(app, "add-history", example<Procedure>("procedure-example-biopsy.json"));
      const changed: Procedure = { ...saved, note: [{ text: "Histology: benign naevus." }] };
      return messageBundle("update-history", [changed], o);
    },
  },
  {
    id: "remove-history",
    path: STANDARD,
    returns: { types: ["Condition", "Procedure"], required: "Condition" },
    request: async (app, o) => {
      const saved = await add(app, "add-history", example<Condition>("condition-example-stroke.json"));
      return messageBundle("remove-history", [saved], o);
    },
  },
  {
    id: "add-measurement",
    path: STANDARD,
    returns: { types: ["Observation"], required: "Observation" },
    request: async (_app, o) => messageBundle("add-measurement", [example<Observation>("observation-example.json")], o),
  },
  {
    id: "update-measurement",
    path: STANDARD,
    returns: { types: ["Observation"], required: "Observation" },
    request: async (app, o) => {
      const saved = await add(app, "add-measurement", example<Observation>("observation-example-body-height.json"));
      const corrected: Observation = {
        ...saved,
        valueQuantity: { value: 167, unit: "cm", system: "http://unitsofmeasure.org", code: "cm" },
      };
      return messageBundle("update-measurement", [corrected], o);
    },
  },
  {
    id: "remove-measurement",
    path: STANDARD,
    returns: { types: ["Observation"], required: "Observation" },
    request: async (app, o) => {
      const saved = await add(app, "add-measurement", example<Observation>("observation-example-heart-rate.json"));
      return messageBundle("remove-measurement", [saved], o);
    },
  },
  {
    id: "subscribe-order-notifications",
    path: STANDARD,
    returns: { types: ["Subscription", "Organization"], required: "Subscription" },
    request: async (_app, o) =>
      fromPharmacy("subscribe-order-notifications", [pharmacySubscription(), pharmacy()], [0], 1, o),
  },
  {
    id: "confirm-drugs-availability",
    path: STANDARD,
    returns: { types: ["Task"], required: "Task" },
    orderFlow: true,
    request: async (_app, o) => fromPharmacy("confirm-drugs-availability", [confirmationTask(), pharmacy()], [0], 1, o),
  },
  {
    id: "receive-allocation",
    path: STANDARD,
    returns: { types: ["Task"], required: "Task" },
    orderFlow: true,
    request: async (_app, o) => fromPharmacy("receive-allocation", [confirmationTask(), pharmacy()], [0], 1, o),
  },
  {
    id: "send-dispense-summary",
    path: STANDARD,
    returns: { types: ["MedicationDispense", "Task"], required: "MedicationDispense" },
    orderFlow: true,
    request: async (_app, o) => {
      const dispense: MedicationDispense = {
        ...example<MedicationDispense>("medicationdispense0302.json"),
        status: "completed",
        authorizingPrescription: [{ reference: "MedicationRequest/medrx0302" }],
      };
      return fromPharmacy("send-dispense-summary", [dispense, pharmacy()], [0], 1, o);
    },
  },
  {
    id: "get-pending-tasks",
    path: STANDARD,
    returns: { types: ["Task"] },
    request: async (_app, o) => messageBundle("get-pending-tasks", [example<Patient>("patient-example.json")], o),
  },
  {
    id: "add-task",
    path: STANDARD,
    returns: { types: ["Task"], required: "Task" },
    request: async (_app, o) => messageBundle("add-task", [programTask()], o),
  },
  {
    id: "update-task",
    path: STANDARD,
    returns: { types: ["Task"], required: "Task" },
    request: async (app, o) => {
      const saved = await add(app, "add-task", programTask());
      const changed: Task = { ...saved, status: "in-progress", priority: "urgent" };
      return messageBundle("update-task", [changed], o);
    },
  },
  {
    id: "cancel-task",
    path: STANDARD,
    returns: { types: ["Task"], required: "Task" },
    request: async (app, o) => {
      const saved = await add(app, "add-task", programTask());
      const cancelled: Task = { ...saved, status: "cancelled", statusReason: { text: "Duplicate order" } };
      return messageBundle("cancel-task", [cancelled], o);
    },
  },
];
