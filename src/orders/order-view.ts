import type { DeviceRequest, MedicationRequest } from "fhir/r4.js";
import type { Order } from "./order.js";

/** GET /__admin/orders/{id}: an order and each pharmacy's request state (CONTRACT §9). */
export function orderView(order: Order) {
  return {
    id: order.id,
    state: order.state,
    kind: order.kind,
    createdAt: order.createdAt.toISOString(),
    deadline: order.deadline.toISOString(),
    allocatedTo: order.allocatedTo,
    patient: { id: order.patient.id, identifier: order.patient.identifier ?? [] },
    items: order.requests.map((r) => {
      const concept =
        r.resourceType === "MedicationRequest"
          ? (r as MedicationRequest).medicationCodeableConcept
          : (r as DeviceRequest).codeCodeableConcept;
      const coding = concept?.coding?.[0];
      return {
        requestId: r.id,
        resourceType: r.resourceType,
        code: coding?.code ?? null,
        // An item ordered by code alone has its name in the concept's text only.
        display: coding?.display ?? concept?.text ?? null,
        quantity: (r as MedicationRequest).dispenseRequest?.quantity ?? null,
      };
    }),
    pharmacies: order.pharmacies.map((p) => ({
      licence: p.licence,
      state: p.state,
      taskId: p.task.id,
      taskStatus: p.task.status,
      // Why a Task ended (expired, not-allocated, cancelled…) shows only here, so the view carries it.
      businessStatus: p.task.businessStatus?.coding?.[0]?.code ?? null,
      delivery: { ...p.delivery, deliveredAt: p.delivery.deliveredAt?.toISOString() ?? null },
      allocationDelivery: p.allocationDelivery
        ? { ...p.allocationDelivery, deliveredAt: p.allocationDelivery.deliveredAt?.toISOString() ?? null }
        : null,
      confirmation: p.confirmation ? { ...p.confirmation, at: p.confirmation.at.toISOString() } : null,
    })),
    dispensed: order.dispensed,
    history: order.history.map((h) => ({ at: h.at.toISOString(), event: h.event })),
  };
}
