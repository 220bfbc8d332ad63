import type { Resource, Task } from "fhir/r4.js";
import { issue } from "../fhir/outcome.js";
import { allocateTo } from "./allocate.js";
import { readConfirmation } from "./confirmation.js";
import { changed, fail, findRequest, type OrderContext, touch, type WorkflowResult } from "./order-book.js";
import { allocationResources, status } from "./order-resources.js";

/**
 * confirm-drugs-availability (CONTRACT §8, step 3): records availability and
 * delivery options; under first-confirmed, a full confirmation allocates at once.
 */
export function confirm(
  ctx: OrderContext,
  licence: string,
  sent: Task,
  path: string,
): WorkflowResult<{ task: Task; resources: Resource[] }> {
  const { deps } = ctx;
  const found = findRequest(ctx, sent.id, licence, path);
  if (!found.ok) return found;
  const { order, request } = found.value;
  if (order.state !== "open") {
    return fail(
      issue(
        "business-rule",
        `Order ${order.id} is ${order.state}${order.allocatedTo ? ` (allocated to ${order.allocatedTo})` : ""}: it no longer takes confirmations.`,
        `${path}.id`,
      ),
    );
  }
  if (request.state === "expired" || deps.now() > order.deadline) {
    return fail(
      issue(
        "business-rule",
        `The confirmation deadline of order ${order.id} passed at ${order.deadline.toISOString()}; this pharmacy's request is expired (the order is ${order.state}).`,
        `${path}.id`,
      ),
    );
  }
  if (request.confirmation) {
    return fail(
      issue(
        "duplicate",
        `Order ${order.id} (${order.state}) was already confirmed by ${licence} at ${request.confirmation.at.toISOString()} (${request.confirmation.availability}).`,
        `${path}.id`,
      ),
    );
  }
  const confirmation = readConfirmation(
    sent,
    order.requests.map((r) => r.id as string),
    deps.now(),
  );
  request.confirmation = confirmation;
  request.state = "confirmed";
  touch(ctx, request, {
    status: confirmation.availability === "unavailable" ? "rejected" : "accepted",
    businessStatus: sent.businessStatus ?? status(confirmation.availability),
    ...(sent.output ? { output: sent.output } : {}),
    ...(sent.note ? { note: sent.note } : {}),
  });
  changed(ctx, order, `${licence}: confirmed ${confirmation.availability}`);
  if (deps.allocation === "first-confirmed" && confirmation.availability === "available")
    allocateTo(ctx, order, request);
  return { ok: true, value: allocationResources(order, request) };
}
