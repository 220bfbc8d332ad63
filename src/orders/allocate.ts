import type { Resource, Task } from "fhir/r4.js";
import { issue } from "../fhir/outcome.js";
import { bestOption } from "./confirmation.js";
import type { Order, PharmacyRequest } from "./order.js";
import {
  changed,
  fail,
  findRequest,
  inBackground,
  type OrderContext,
  touch,
  type WorkflowResult,
} from "./order-book.js";
import { allocationResources, deliveryOptionPart, status } from "./order-resources.js";
import { pushOrder } from "./push-order.js";

/** Allocates an open order to a pharmacy that confirmed (manual policy: POST /__admin/orders/{id}/allocate). */
export function allocate(ctx: OrderContext, orderId: string, licence: string): WorkflowResult<Order> {
  const order = ctx.book.get(orderId);
  if (!order) return fail(issue("not-found", `No order ${orderId}.`));
  if (order.state !== "open")
    return fail(issue("business-rule", `Order ${orderId} is ${order.state}: only an open order can be allocated.`));
  const request = order.pharmacies.find((p) => p.licence === licence);
  if (!request) return fail(issue("not-found", `Order ${orderId} was not sent to pharmacy ${licence}.`));
  if (!request.confirmation || request.confirmation.availability === "unavailable") {
    return fail(
      issue(
        "business-rule",
        `Pharmacy ${licence} has ${request.confirmation ? "nothing available" : "not confirmed"} for order ${orderId}.`,
      ),
    );
  }
  allocateTo(ctx, order, request);
  return { ok: true, value: order };
}

/**
 * Gives the order to `chosen` (CONTRACT §8, step 4): its Task goes in
 * progress with the chosen delivery option, every other pharmacy's is
 * cancelled as not allocated, and the allocation is pushed to `chosen`.
 */
export function allocateTo(ctx: OrderContext, order: Order, chosen: PharmacyRequest): void {
  const { deps } = ctx;
  ctx.book.clearTimer(order.id);
  order.state = "allocated";
  order.allocatedTo = chosen.licence;
  order.allocatedAt = deps.now();
  chosen.state = "allocated";
  const option = bestOption(chosen.confirmation?.options ?? []);
  touch(ctx, chosen, {
    status: "in-progress",
    businessStatus: status("allocated"),
    for: { reference: `Patient/${order.patient.id}` },
    input: [...(chosen.task.input ?? []), ...(option ? [deliveryOptionPart(option, "chosen-delivery")] : [])],
  });
  for (const other of order.pharmacies) {
    if (other === chosen || other.state === "expired") continue;
    other.state = "not-allocated";
    touch(ctx, other, {
      status: "cancelled",
      businessStatus: status("not-allocated"),
      statusReason: { text: "The order was allocated to another pharmacy." },
    });
  }
  changed(ctx, order, `allocated to ${chosen.licence}`);
  sendAllocation(ctx, order, chosen);
}

/** Pushes the allocated pharmacy its allocation, in the background; the order records how the delivery went. */
export function sendAllocation(ctx: OrderContext, order: Order, chosen: PharmacyRequest): void {
  inBackground(ctx, `order ${order.id}: ${chosen.licence}: order-allocation`, async () => {
    const result = await pushOrder(ctx, order, chosen, "order-allocation");
    chosen.allocationDelivery = { ...result, deliveredAt: result.delivered ? ctx.deps.now() : null };
    changed(ctx, order, `${chosen.licence}: allocation ${result.delivered ? "delivered" : "delivery failed"}`);
  });
}

/** receive-allocation: the allocated pharmacy gets the allocation; others learn they were not allocated. */
export function receiveAllocation(
  ctx: OrderContext,
  licence: string,
  taskId: string | undefined,
  path: string,
): WorkflowResult<{ task: Task; resources: Resource[] }> {
  const found = findRequest(ctx, taskId, licence, path);
  if (!found.ok) return found;
  const { order, request } = found.value;
  if (order.state === "open" || order.state === "expired" || order.state === "cancelled") {
    return fail(
      issue(
        "business-rule",
        `Order ${order.id} is ${order.state}: there is no allocation to receive${order.state === "open" ? " yet (confirm availability first)" : ""}.`,
        `${path}.id`,
      ),
    );
  }
  return { ok: true, value: allocationResources(order, request) };
}
