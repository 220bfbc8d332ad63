import { issue } from "../fhir/outcome.js";
import type { Order } from "./order.js";
import { changed, fail, type OrderContext, touch, type WorkflowResult } from "./order-book.js";
import { status } from "./order-resources.js";

/** Cancels an open or allocated order (POST /__admin/orders/{id}/cancel): every live fulfillment Task is cancelled. */
export function cancel(ctx: OrderContext, orderId: string): WorkflowResult<Order> {
  const order = ctx.book.get(orderId);
  if (!order) return fail(issue("not-found", `No order ${orderId}.`));
  if (order.state !== "open" && order.state !== "allocated") {
    return fail(issue("business-rule", `Order ${orderId} is ${order.state}: it can no longer be cancelled.`));
  }
  ctx.book.clearTimer(order.id);
  order.state = "cancelled";
  for (const request of order.pharmacies) {
    if (request.state === "expired" || request.state === "not-allocated") continue;
    touch(ctx, request, {
      status: "cancelled",
      businessStatus: status("cancelled"),
      statusReason: { text: "The order was cancelled." },
    });
  }
  changed(ctx, order, "cancelled");
  return { ok: true, value: order };
}
