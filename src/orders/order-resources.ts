import type { DeviceRequest, MedicationRequest, Patient, Reference, Resource, Task, TaskInput } from "fhir/r4.js";
import { ETA_EXTENSION, PRICE_EXTENSION } from "../fhir/extension-definitions.js";
import type { DeliveryOption, Order, OrderRequest, PharmacyRequest } from "./order.js";

/** Identifier system of pharmacy licences in what the sandbox sends. */
export const PHARMACY_LICENCE_SYSTEM = "urn:ae:pharmacy-licence";
export const ORDER_SYSTEM = "urn:uae-fhir-sandbox:order";
/** Task.businessStatus codes of fulfillment Tasks (confirmations use available | partial | unavailable). */
export const FULFILLMENT_STATUS_SYSTEM = "urn:uae-fhir-sandbox:fulfillment-status";
/** Task.input / Task.output type codes of fulfillment Tasks. */
export const FULFILLMENT_PART_SYSTEM = "urn:uae-fhir-sandbox:fulfillment-part";
export const DELIVERY_METHOD_SYSTEM = "urn:uae-fhir-sandbox:delivery-method";

const part = (code: string) => ({ coding: [{ system: FULFILLMENT_PART_SYSTEM, code }] });
export const status = (code: string) => ({ coding: [{ system: FULFILLMENT_STATUS_SYSTEM, code }] });
export const refTo = (r: Resource): Reference => ({ reference: `${r.resourceType}/${r.id}` });

/** The pharmacy's fulfillment Task as first sent: requested, with the deadline as restriction.period.end. */
export function fulfillmentTask(order: Order, licence: string, pharmacyName: string | undefined, taskId: string): Task {
  return {
    resourceType: "Task",
    id: taskId,
    meta: { versionId: "1", lastUpdated: order.createdAt.toISOString() },
    groupIdentifier: { system: ORDER_SYSTEM, value: order.id },
    status: "requested",
    intent: "order",
    priority: "routine",
    code: {
      coding: [
        { system: "http://hl7.org/fhir/CodeSystem/task-code", code: "fulfill", display: "Fulfill the focal request" },
      ],
    },
    description: `Fulfill ${order.kind} order ${order.id}: confirm availability and delivery options before ${order.deadline.toISOString()}`,
    focus: refTo(order.requests[0] as Resource),
    for: refTo(order.anonymousPatient),
    authoredOn: order.createdAt.toISOString(),
    lastModified: order.createdAt.toISOString(),
    requester: { display: "UAE health-information exchange (sandbox)" },
    owner: {
      identifier: { system: PHARMACY_LICENCE_SYSTEM, value: licence },
      ...(pharmacyName ? { display: pharmacyName } : {}),
    },
    restriction: { period: { end: order.deadline.toISOString() } },
    input: order.requests.map((r): TaskInput => ({ type: part("order-item"), valueReference: refTo(r) })),
  };
}

/**
 * The order's requests as a pharmacy sees them: about the anonymous patient
 * (version 1, as created), or after allocation about the patient — other
 * content, so version 2 as of the allocation (a strict client keys resources
 * by id and version).
 *
 * @example
 *   requestsFor(order, order.anonymousPatient)[0]?.meta?.versionId // "1"
 */
export function requestsFor(order: Order, patient: Patient): OrderRequest[] {
  const identified = patient.id === order.patient.id && patient.id !== order.anonymousPatient.id;
  const meta = identified
    ? { versionId: "2", lastUpdated: (order.allocatedAt ?? order.createdAt).toISOString() }
    : { versionId: "1", lastUpdated: order.createdAt.toISOString() };
  return order.requests.map((r) => ({ ...r, meta, subject: refTo(patient) }) as MedicationRequest | DeviceRequest);
}

/**
 * What a message about one pharmacy's fulfillment Task carries so that every
 * reference in it resolves inside the Bundle: the Task, the order's requests
 * (Task.focus, Task.input) and the patient Task.for names — the anonymous one
 * until the order is allocated to this pharmacy, then the patient.
 *
 * @example
 *   taskResources(order, request) // [Task, MedicationRequest…, Patient]
 */
export function taskResources(order: Order, request: PharmacyRequest): Resource[] {
  const patient =
    request.task.for?.reference === refTo(order.patient).reference ? order.patient : order.anonymousPatient;
  return [request.task, ...requestsFor(order, patient), { ...patient }];
}

/** The delivery option as a Task.input / output element, with ETA and price as extensions. */
export function deliveryOptionPart(option: DeliveryOption, use: "delivery-option" | "chosen-delivery") {
  const extension = [];
  if (option.etaMinutes !== undefined) {
    extension.push({
      url: ETA_EXTENSION,
      valueDuration: { value: option.etaMinutes, unit: "min", system: "http://unitsofmeasure.org", code: "min" },
    });
  }
  if (option.price !== undefined)
    extension.push({ url: PRICE_EXTENSION, valueMoney: { value: option.price, currency: "AED" } });
  return {
    ...(extension.length > 0 ? { extension } : {}),
    type: part(use),
    valueCodeableConcept: { coding: [{ system: DELIVERY_METHOD_SYSTEM, code: option.method }] },
  };
}

/** What the allocated pharmacy receives (push and receive-allocation): the Task, the identified patient and the requests. */
export function allocationResources(order: Order, request: PharmacyRequest): { task: Task; resources: Resource[] } {
  return { task: request.task, resources: taskResources(order, request) };
}
