import { createHash } from "node:crypto";
import type { Faker } from "@faker-js/faker";
import type { DeviceRequest, MedicationRequest, Patient } from "fhir/r4.js";
import { emiratesId } from "../domain/emirates-id.js";
import { issue } from "../fhir/outcome.js";
import { DEVICES, DRUG_SYSTEM, DRUGS } from "../generate/drugs.js";
import { englishFaker } from "../generate/faker.js";
import { deadlinePassed } from "./deadline.js";
import type { Order, OrderRequest, PharmacyRequest } from "./order.js";
import { changed, fail, guarded, inBackground, type OrderContext, type WorkflowResult } from "./order-book.js";
import { fulfillmentTask, ORDER_SYSTEM } from "./order-resources.js";
import type { OrderSpec } from "./order-spec.js";
import { pushOrder } from "./push-order.js";

/**
 * Creates an order (CONTRACT §8, step 2) and pushes it to each target
 * pharmacy; deliveries run in the background. What the spec leaves out is
 * generated from the seed and the order's number, so the same seed gives the
 * same orders.
 */
export function createOrder(ctx: OrderContext, spec: OrderSpec = {}): WorkflowResult<Order> {
  const { deps, book } = ctx;
  const targets =
    spec.pharmacies ??
    deps.pharmacies
      .list()
      .filter((p) => p.endpoint)
      .map((p) => p.licence);
  const unknown = targets.filter((l) => !deps.pharmacies.get(l));
  if (unknown.length > 0) {
    return fail(issue("not-found", `Unknown pharmacy licence(s): ${unknown.join(", ")}. See GET /__admin/pharmacies.`));
  }
  const silent = targets.filter((l) => !deps.pharmacies.get(l)?.endpoint);
  if (silent.length > 0) {
    return fail(issue("business-rule", `Pharmacy ${silent.join(", ")} has no active subscription to push to.`));
  }
  if (targets.length === 0) {
    return fail(
      issue(
        "business-rule",
        "No pharmacy has an active subscription: subscribe one (subscribe-order-notifications) or add one as a scenario fixture first.",
      ),
    );
  }
  // Before anything changes (the numbering, the patient): a refused order leaves no trace.
  const full = book.noRoom();
  if (full) return fail(issue("too-costly", full.diagnostics));
  const n = book.nextNumber();
  const id = String(n);
  const faker = englishFaker();
  const digest = createHash("sha256").update(`${deps.seed}\u0000order\u0000${n}`).digest();
  faker.seed([digest.readUInt32BE(0), digest.readUInt32BE(4)]);

  const patientKey =
    spec.patient ??
    `${deps.emiratesIdSystem}|${emiratesId(faker.number.int({ min: 1950, max: 2004 }), faker.number.int({ min: 1_000_000, max: 9_999_999 }))}`;
  const patient = deps.store.ensurePatient({ keys: [patientKey], given: {} });
  const now = deps.now();
  const anonymousPatient: Patient = {
    resourceType: "Patient",
    id: deps.newId(),
    ...(patient.gender ? { gender: patient.gender } : {}),
    ...(patient.birthDate ? { birthDate: patient.birthDate.slice(0, 4) } : {}),
  };
  const requests = orderRequests(ctx, spec, faker, id, anonymousPatient, now);
  if (!requests.ok) return requests;
  const deadline = new Date(now.getTime() + (spec.deadlineMs ?? deps.confirmDeadlineMs));
  const order: Order = {
    id,
    state: "open",
    kind: requests.value[0]?.resourceType === "DeviceRequest" ? "device" : "medication",
    createdAt: now,
    deadline,
    patient,
    anonymousPatient,
    requests: requests.value,
    pharmacies: [],
    allocatedTo: null,
    allocatedAt: null,
    dispensed: [],
    history: [],
  };
  order.pharmacies = targets.map((licence) => ({
    licence,
    state: "sent",
    task: fulfillmentTask(order, licence, deps.pharmacies.get(licence)?.name, deps.newId()),
    delivery: { attempts: 0, status: null, error: null, deliveredAt: null },
    allocationDelivery: null,
    confirmation: null,
  }));
  book.add(order);
  book.setTimer(
    id,
    deadline.getTime() - now.getTime(),
    guarded(ctx, `order ${id}: the confirmation deadline`, () => deadlinePassed(ctx, order)),
  );
  changed(ctx, order, `created for ${targets.join(", ")}`);
  for (const request of order.pharmacies) sendFulfillmentRequest(ctx, order, request);
  return { ok: true, value: order };
}

/** Pushes a pharmacy its fulfillment request, in the background; its delivery and state follow the answer. */
export function sendFulfillmentRequest(ctx: OrderContext, order: Order, request: PharmacyRequest): void {
  inBackground(ctx, `order ${order.id}: ${request.licence}: order-fulfillment-request`, async () => {
    const result = await pushOrder(ctx, order, request, "order-fulfillment-request");
    request.delivery = { ...result, deliveredAt: result.delivered ? ctx.deps.now() : null };
    if (request.state === "sent") {
      request.state = result.delivered ? "delivered" : "delivery-failed";
      changed(ctx, order, `${request.licence}: ${request.state}`);
    } else {
      ctx.book.saved(order);
    }
  });
}

/** The order's MedicationRequests (or its one DeviceRequest): the spec's items, or generated ones. */
function orderRequests(
  ctx: OrderContext,
  spec: OrderSpec,
  faker: Faker,
  orderId: string,
  subject: Patient,
  now: Date,
): WorkflowResult<OrderRequest[]> {
  const base = {
    status: "active" as const,
    intent: "order" as const,
    groupIdentifier: { system: ORDER_SYSTEM, value: orderId },
    subject: { reference: `Patient/${subject.id}` },
    authoredOn: now.toISOString(),
  };
  const items: NonNullable<OrderSpec["items"]> =
    spec.items ??
    (faker.number.int({ min: 1, max: 5 }) === 1
      ? [{ device: faker.helpers.arrayElement(DEVICES), quantity: 1 }]
      : faker.helpers.arrayElements(DRUGS, { min: 1, max: 3 }).map((d) => ({
          medication: { system: DRUG_SYSTEM, code: d.code, display: d.display },
          quantity: faker.helpers.arrayElement(d.quantities),
          unit: d.unit,
          dosage: d.dosage,
        })));
  if (items.length === 0) return fail(issue("required", "An order needs at least one item."));
  const devices = items.filter((i) => i.device).length;
  if (devices > 0 && (devices !== items.length || items.length > 1)) {
    return fail(issue("business-rule", "A device order holds exactly one device; medications go in a separate order."));
  }
  return {
    ok: true,
    value: items.map((item): OrderRequest => {
      if (item.device) {
        const device: DeviceRequest = {
          resourceType: "DeviceRequest",
          id: ctx.deps.newId(),
          ...base,
          codeCodeableConcept: {
            coding: [{ system: item.device.system ?? DEVICES[0]?.system, ...item.device }],
            text: item.device.display,
          },
        };
        return device;
      }
      const medication = item.medication as NonNullable<typeof item.medication>;
      const drug = DRUGS.find((d) => d.code === medication.code);
      const quantity = item.quantity ?? drug?.quantities[0] ?? 30;
      const unit = item.unit ?? drug?.unit ?? "tablet";
      const request: MedicationRequest = {
        resourceType: "MedicationRequest",
        id: ctx.deps.newId(),
        ...base,
        medicationCodeableConcept: {
          coding: [
            {
              system: medication.system ?? DRUG_SYSTEM,
              code: medication.code,
              ...(medication.display ? { display: medication.display } : {}),
            },
          ],
          ...((medication.display ?? drug?.display) ? { text: medication.display ?? drug?.display } : {}),
        },
        dosageInstruction: [{ text: item.dosage ?? drug?.dosage ?? "as directed" }],
        dispenseRequest: { quantity: { value: quantity, unit } },
      };
      return request;
    }),
  };
}
