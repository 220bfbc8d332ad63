import type { Bundle, BundleEntry, Coding, MessageHeader, Reference, Resource } from "fhir/r4.js";
import { VERSION } from "../version.js";
import { fullUrlFor } from "./ids.js";

/** Event codes of the messages the sandbox sends live under this system. */
export const SANDBOX_EVENT_SYSTEM = "urn:uae-fhir-sandbox:events";

export interface OutboundMessage {
  event: string;
  /** The sandbox's own URL (MessageHeader.source.endpoint). */
  source: string;
  /** Where the message goes (MessageHeader.destination.endpoint) and to whom. */
  destination: { endpoint: string; receiver?: Reference };
  resources: readonly Resource[];
  focus: readonly Resource[];
  fhirBase: string;
  newId(): string;
  now(): Date;
}

/**
 * A message the sandbox sends (pushes to pharmacies): MessageHeader with the
 * event, source and destination, focus on the given resources, then the
 * resources as entries.
 */
export function outboundMessage(m: OutboundMessage): Bundle {
  const entries: BundleEntry[] = m.resources.map((resource) => ({
    fullUrl: fullUrlFor(resource, m.fhirBase),
    resource,
  }));
  const eventCoding: Coding = { system: SANDBOX_EVENT_SYSTEM, code: m.event };
  const header: MessageHeader = {
    resourceType: "MessageHeader",
    id: m.newId(),
    eventCoding,
    destination: [
      m.destination.receiver
        ? { endpoint: m.destination.endpoint, receiver: m.destination.receiver }
        : { endpoint: m.destination.endpoint },
    ],
    source: { name: "uae-fhir-sandbox", software: "uae-fhir-sandbox", version: VERSION, endpoint: m.source },
    focus: m.focus.map((r) => ({ reference: fullUrlFor(r, m.fhirBase) })),
  };
  return {
    resourceType: "Bundle",
    id: m.newId(),
    type: "message",
    timestamp: m.now().toISOString(),
    entry: [{ fullUrl: `urn:uuid:${header.id}`, resource: header }, ...entries],
  };
}
