import type { Order } from "./order.js";

/** A date of an order as the state file keeps it (JSON: an ISO string), back as a Date. */
const dateOf = (value: unknown): Date => new Date(value as string);
const maybeDate = (value: unknown): Date | null => (value === null || value === undefined ? null : dateOf(value));

/**
 * An order read back from the state file: JSON as `JSON.stringify(order)` wrote it, its dates made Dates again
 * (the flow compares and formats them).
 */
export function revivedOrder(saved: unknown): Order {
  const order = saved as Order;
  order.createdAt = dateOf(order.createdAt);
  order.deadline = dateOf(order.deadline);
  order.allocatedAt = maybeDate(order.allocatedAt);
  for (const entry of order.history) entry.at = dateOf(entry.at);
  for (const request of order.pharmacies) {
    request.delivery.deliveredAt = maybeDate(request.delivery.deliveredAt);
    if (request.allocationDelivery)
      request.allocationDelivery.deliveredAt = maybeDate(request.allocationDelivery.deliveredAt);
    if (request.confirmation) request.confirmation.at = dateOf(request.confirmation.at);
  }
  return order;
}
