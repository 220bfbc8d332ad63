import type { MedicationRequest, Patient, Resource } from "fhir/r4.js";
import { outboundMessage } from "../../fhir/response-message.js";
import { DRUG_SYSTEM, DRUGS } from "../../generate/drugs.js";
import type { Order, PharmacyRequest } from "../../orders/order.js";
import { allocationResources, fulfillmentTask, ORDER_SYSTEM, status } from "../../orders/order-resources.js";
import { jsonText } from "../../text/json-text.js";
import type { StepContext } from "../step-context.js";

/** A push about an order nobody was sent: its envelope text, MessageHeader id and the ids it names. */
export interface UnknownPush {
  body: string;
  messageId: string;
  orderId: string;
  taskId: string;
  requestIds: string[];
  deadline: Date;
}

/**
 * Builds a push exactly as the order flow builds its own (the same resources, MessageHeader and envelope), about an
 * order that is in no order book: a pharmacy that takes it as delivered would act on an order it never got. The order
 * number is one the workspace will not reach in a session (the flow numbers from 1).
 */
export function unknownOrderPush(
  ctx: Pick<StepContext, "sandbox" | "workspace">,
  licence: string,
  endpoint: string,
  event: "order-fulfillment-request" | "order-allocation",
): UnknownPush {
  const { sandbox } = ctx;
  const now = sandbox.now();
  const id = String(900_000 + (Number.parseInt(sandbox.newId().replace(/-/g, "").slice(0, 5), 16) % 99_999));
  const deadline = new Date(now.getTime() + 60_000);
  const anonymous: Patient = { resourceType: "Patient", id: sandbox.newId(), gender: "female", birthDate: "1980" };
  const patient: Patient = {
    resourceType: "Patient",
    id: sandbox.newId(),
    active: true,
    gender: "female",
    birthDate: "1980-04-12",
    name: [{ use: "official", text: "Mariam Al Mansoori", family: "Al Mansoori", given: ["Mariam"] }],
  };
  const drug = DRUGS[0] as (typeof DRUGS)[number];
  const request: MedicationRequest = {
    resourceType: "MedicationRequest",
    id: sandbox.newId(),
    status: "active",
    intent: "order",
    groupIdentifier: { system: ORDER_SYSTEM, value: id },
    subject: { reference: `Patient/${anonymous.id}` },
    authoredOn: now.toISOString(),
    medicationCodeableConcept: {
      coding: [{ system: DRUG_SYSTEM, code: drug.code, display: drug.display }],
      text: drug.display,
    },
    dosageInstruction: [{ text: drug.dosage }],
    dispenseRequest: { quantity: { value: drug.quantities[0] ?? 30, unit: drug.unit } },
  };
  const allocated = event === "order-allocation";
  const order: Order = {
    id,
    state: allocated ? "allocated" : "open",
    kind: "medication",
    createdAt: now,
    deadline,
    patient,
    anonymousPatient: anonymous,
    requests: [request],
    pharmacies: [],
    allocatedTo: allocated ? licence : null,
    allocatedAt: allocated ? now : null,
    dispensed: [],
    history: [],
  };
  const task = fulfillmentTask(order, licence, undefined, sandbox.newId());
  const pharmacyRequest: PharmacyRequest = {
    licence,
    state: allocated ? "allocated" : "sent",
    task: allocated
      ? {
          ...task,
          meta: { versionId: "3", lastUpdated: now.toISOString() },
          status: "in-progress",
          businessStatus: status("allocated"),
          for: { reference: `Patient/${patient.id}` },
        }
      : task,
    delivery: { attempts: 0, status: null, error: null, deliveredAt: null },
    allocationDelivery: null,
    confirmation: null,
  };
  order.pharmacies = [pharmacyRequest];
  const { task: pushed, resources } = allocationResources(order, pharmacyRequest);
  const messageUrl = sandbox.messageUrl(ctx.workspace);
  const bundle = outboundMessage(
    {
      event,
      source: messageUrl,
      destination: { endpoint, receiver: { identifier: pushed.owner?.identifier } },
      resources: resources as Resource[],
      focus: [pushed],
      fhirBase: messageUrl.slice(0, messageUrl.lastIndexOf("/")),
    },
    { now: sandbox.now, newId: sandbox.newId },
  );
  const header = bundle.entry?.[0]?.resource as { id: string };
  return {
    body: jsonText({ content: jsonText(bundle) }),
    messageId: header.id,
    orderId: id,
    taskId: pushed.id as string,
    requestIds: [request.id as string],
    deadline,
  };
}
