import type { MedicationDispense, MedicationRequest, Resource, Task } from "fhir/r4.js";
import { type Issue, issue } from "../fhir/outcome.js";
import type { Order, PharmacyRequest } from "./order.js";
import { changed, fail, findRequest, type OrderContext, touch, type WorkflowResult } from "./order-book.js";
import { status, taskResources } from "./order-resources.js";

/**
 * send-dispense-summary (CONTRACT §8, step 5): what the allocated pharmacy
 * handed over; the order ends dispensed. `focus` is the recorded dispenses
 * (or the completed Task), `resources` adds what they reference: the
 * requests and the patient.
 */
export function dispense(
  ctx: OrderContext,
  licence: string,
  focus: Array<{ resource: Resource; path: string }>,
): WorkflowResult<{ focus: Resource[]; resources: Resource[] }> {
  const first = focus[0];
  if (!first)
    return fail(
      issue("required", "send-dispense-summary needs a MedicationDispense or the completed fulfillment Task."),
    );
  const found = first.resource.resourceType === "Task" ? deviceOrder(ctx, licence, first) : dispensedOrder(ctx, focus);
  if (!found.ok) return found;
  const order = found.value;
  if (order.state !== "allocated" || order.allocatedTo !== licence) {
    const why =
      order.state === "allocated"
        ? `it is allocated to ${order.allocatedTo}, not to ${licence}`
        : order.state === "dispensed"
          ? `it was already dispensed`
          : `it is ${order.state}${order.state === "open" ? " (not allocated yet)" : ""}`;
    return fail(
      issue(
        order.state === "dispensed" ? "duplicate" : "business-rule",
        `Order ${order.id} cannot be dispensed: ${why}.`,
        first.path,
      ),
    );
  }
  const request = order.pharmacies.find((p) => p.licence === licence) as PharmacyRequest;
  if (first.resource.resourceType !== "Task") {
    const issues = overOrdered(order, focus);
    if (issues.length > 0) return fail(...issues);
  }
  const recorded =
    first.resource.resourceType === "Task"
      ? []
      : focus.map(({ resource }) => {
          const now = ctx.deps.now().toISOString();
          return { ...resource, id: ctx.deps.newId(), meta: { versionId: "1", lastUpdated: now } } as Resource;
        });
  order.state = "dispensed";
  order.dispensed = recorded;
  request.state = "dispensed";
  touch(ctx, request, { status: "completed", businessStatus: status("dispensed") });
  changed(ctx, order, `dispensed by ${licence}`);
  const [task, ...referenced] = taskResources(order, request);
  const shown = first.resource.resourceType === "Task" ? [task as Task] : recorded;
  return { ok: true, value: { focus: shown, resources: [...shown, ...referenced] } };
}

/** A device order is dispensed by its completed fulfillment Task. */
function deviceOrder(
  ctx: OrderContext,
  licence: string,
  first: { resource: Resource; path: string },
): WorkflowResult<Order> {
  const found = findRequest(ctx, first.resource.id, licence, first.path);
  if (!found.ok) return found;
  const { order } = found.value;
  if (order.kind !== "device") {
    return fail(
      issue(
        "business-rule",
        `Order ${order.id} is a medication order: send MedicationDispense resources, not the Task.`,
        first.path,
      ),
    );
  }
  return { ok: true, value: order };
}

/** The one order whose MedicationRequests every dispense's authorizingPrescription names. */
function dispensedOrder(ctx: OrderContext, focus: Array<{ resource: Resource; path: string }>): WorkflowResult<Order> {
  const issues: Issue[] = [];
  let order: Order | undefined;
  for (const { resource, path } of focus) {
    const refs = (resource as MedicationDispense).authorizingPrescription ?? [];
    const orders = new Set(refs.map((r) => ctx.book.byRequest((r.reference ?? "").split("/").pop() ?? "")));
    const [only] = [...orders];
    if (orders.size !== 1 || !only) {
      issues.push(
        issue(
          "not-found",
          "authorizingPrescription must reference the MedicationRequest(s) of one order the sandbox sent (MedicationRequest/{id}).",
          `${path}.authorizingPrescription`,
        ),
      );
    } else if (order && order !== only) {
      issues.push(
        issue(
          "business-rule",
          "All dispenses of one summary must belong to the same order.",
          `${path}.authorizingPrescription`,
        ),
      );
    } else order = only;
  }
  if (issues.length > 0 || !order) return fail(...issues);
  return { ok: true, value: order };
}

/** A dispense of more than its MedicationRequest ordered. */
function overOrdered(order: Order, focus: Array<{ resource: Resource; path: string }>): Issue[] {
  return focus.flatMap(({ resource, path }) => {
    const dispensed = resource as MedicationDispense;
    const ids = (dispensed.authorizingPrescription ?? []).map((r) => (r.reference ?? "").split("/").pop());
    const ordered = order.requests.find((r) => ids.includes(r.id)) as MedicationRequest | undefined;
    const max = ordered?.dispenseRequest?.quantity?.value;
    const given = dispensed.quantity?.value;
    return max !== undefined && given !== undefined && given > max
      ? [
          issue(
            "business-rule",
            `Dispensed quantity ${given} is above the ordered quantity ${max}; order ${order.id} stays ${order.state}.`,
            `${path}.quantity`,
          ),
        ]
      : [];
  });
}
