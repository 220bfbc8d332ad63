import { allocateTo } from "./allocate.js";
import { bestOption } from "./confirmation.js";
import type { Order, PharmacyRequest } from "./order.js";
import { changed, type OrderContext, touch } from "./order-book.js";
import { status } from "./order-resources.js";

/**
 * The confirmation deadline of an open order passed: pharmacies that did not
 * confirm expire; under best-at-deadline the best confirmation gets the
 * order, under manual it waits for POST /__admin/orders/{id}/allocate; with
 * nothing usable the order expires.
 */
export function deadlinePassed(ctx: OrderContext, order: Order): void {
  ctx.book.clearTimer(order.id);
  if (order.state !== "open") return;
  for (const request of order.pharmacies) {
    if (request.confirmation) continue;
    request.state = "expired";
    touch(ctx, request, {
      status: "failed",
      businessStatus: status("expired"),
      statusReason: { text: "No confirmation before the deadline." },
    });
  }
  const usable = order.pharmacies.filter((p) => p.confirmation && p.confirmation.availability !== "unavailable");
  const { allocation } = ctx.deps;
  if (allocation === "best-at-deadline" && usable.length > 0) {
    allocateTo(ctx, order, best(usable));
    return;
  }
  if (allocation === "manual" && usable.length > 0) {
    changed(ctx, order, "deadline passed: waiting for manual allocation");
    return;
  }
  order.state = "expired";
  changed(ctx, order, "expired at the deadline");
}

/** Most items available, then the fastest delivery option, then the earliest confirmation. */
function best(usable: readonly PharmacyRequest[]): PharmacyRequest {
  return [...usable].sort(
    (a, b) =>
      (b.confirmation?.availableItems.length ?? 0) - (a.confirmation?.availableItems.length ?? 0) ||
      (bestOption(a.confirmation?.options ?? [])?.etaMinutes ?? Number.POSITIVE_INFINITY) -
        (bestOption(b.confirmation?.options ?? [])?.etaMinutes ?? Number.POSITIVE_INFINITY) ||
      (a.confirmation?.at.getTime() ?? 0) - (b.confirmation?.at.getTime() ?? 0),
  )[0] as PharmacyRequest;
}
