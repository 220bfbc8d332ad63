import type { Resource } from "fhir/r4.js";
import { outboundMessage } from "../fhir/response-message.js";
import type { PushResult } from "../push/dispatcher.js";
import { STANDARD_FHIR_BASE, STANDARD_PATH } from "../routing/default-operations.js";
import { jsonText } from "../text/json-text.js";
import { counted } from "../text/plural.js";
import type { Order, PharmacyRequest } from "./order.js";
import type { OrderContext } from "./order-book.js";
import { allocationResources } from "./order-resources.js";
import type { PushMessageSpec } from "./push-messages.js";

/**
 * Sends a pharmacy one of the sandbox's pushes about an order (its
 * fulfillment request, or the allocation) to the endpoint it subscribed
 * with; resolves with how the delivery went, never rejects.
 */
export async function pushOrder(
  ctx: OrderContext,
  order: Order,
  request: PharmacyRequest,
  event: PushMessageSpec["id"],
): Promise<PushResult> {
  const { deps } = ctx;
  const pharmacy = deps.pharmacies.get(request.licence);
  if (!pharmacy?.endpoint) return { delivered: false, attempts: 0, status: null, error: "no active subscription" };
  const { task, resources } = allocationResources(order, request);
  const base = deps.sandboxUrl();
  const bundle = outboundMessage(
    {
      event,
      source: `${base}${STANDARD_PATH}`,
      destination: {
        endpoint: pharmacy.endpoint,
        receiver: { identifier: task.owner?.identifier, display: pharmacy.name },
      },
      resources: resources as Resource[],
      focus: [task],
      fhirBase: `${base}${STANDARD_FHIR_BASE}`,
    },
    deps,
  );
  const header = bundle.entry?.[0]?.resource as { id: string };
  const result = await deps.dispatcher.deliver({
    target: pharmacy.endpoint,
    pharmacy: request.licence,
    headers: pharmacy.headers,
    body: jsonText({ content: jsonText(bundle) }),
    event,
    messageId: header.id,
    events: deps.events,
    clientCertificate: pharmacy.clientCertificate,
  });
  if (!result.delivered) {
    // Each attempt is a line of the request log; this says the push as a whole is given up.
    deps.logger.warn(
      `order ${order.id}: ${event} to pharmacy ${request.licence} (${pharmacy.endpoint}) failed after ${counted(result.attempts, "attempt")}: ${result.error ?? `answered ${result.status}`}`,
      {
        event: "push-failed",
        order: order.id,
        pharmacy: request.licence,
        push: event,
        target: pharmacy.endpoint,
        attempts: result.attempts,
        status: result.status,
        error: result.error,
      },
    );
  }
  return result;
}
