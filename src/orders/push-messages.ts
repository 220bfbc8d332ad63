/**
 * The messages the sandbox sends to pharmacies on its own (CONTRACT §8), as
 * data: their MessageDefinitions and CapabilityStatement entries come from here.
 */
export interface PushMessageSpec {
  /** The event code, also the MessageDefinition id. */
  id: "order-fulfillment-request" | "order-allocation";
  /** What it carries and when it is sent (the MessageDefinition's description). */
  summary: string;
  /** Resource types MessageHeader.focus points at, each exactly once. */
  focus: readonly string[];
}

export const PUSH_MESSAGES: readonly PushMessageSpec[] = [
  {
    id: "order-fulfillment-request",
    summary:
      "Sent to every subscribed pharmacy an order is for, to its Subscription's rest-hook endpoint with the Subscription's headers: the fulfillment Task (status requested, the confirmation deadline in restriction.period.end) and the MedicationRequests or DeviceRequest for an anonymous patient. The pharmacy answers later with confirm-drugs-availability.",
    focus: ["Task"],
  },
  {
    id: "order-allocation",
    summary:
      "Sent to the pharmacy an order is allocated to: the fulfillment Task (in-progress, businessStatus allocated, the chosen delivery option in Task.input), the requests and the identified patient. The same content receive-allocation answers with.",
    focus: ["Task"],
  },
];
