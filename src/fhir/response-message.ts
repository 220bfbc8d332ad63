import type { Bundle, BundleEntry, Coding, MessageHeader, OperationOutcome, Reference, Resource } from "fhir/r4.js";
import { VERSION } from "../version.js";
import { fullUrlFor } from "./ids.js";
import { type Issue, operationOutcome } from "./outcome.js";

/**
 * Message Bundles the sandbox builds: response messages correlated to a
 * request, and the messages it sends on its own (pushes).
 */

/** http://hl7.org/fhir/response-code */
export type ResponseCode = "ok" | "transient-error" | "fatal-error";

/** What a response message answers: the request's header and where the sandbox lives. */
export interface Correlation {
  /** The request's MessageHeader (id, event, source). */
  request: Pick<MessageHeader, "id" | "eventCoding" | "eventUri" | "source">;
  /** The endpoint the request was sent to; becomes `source.endpoint`. */
  endpoint: string;
  /** Base for RESTful fullUrls of resources whose id is not a UUID. */
  fhirBase: string;
}

export interface MessageDeps {
  newId: () => string;
  now: () => Date;
}

export const SANDBOX_SOFTWARE = { name: "uae-fhir-sandbox", software: "uae-fhir-sandbox", version: VERSION };

/**
 * The `ok` response message: MessageHeader correlated with the request, its
 * focus on `focus` (default: every resource), then the resources as entries,
 * then `included` (entries of the request they refer to, fullUrls kept).
 * Warnings about the request (CONTRACT §5) go into an OperationOutcome entry
 * that `response.details` points at; they never make the answer an error.
 *
 * @example
 *   okMessage(correlation, [storedAllergy, patient], deps, [storedAllergy])
 */
export function okMessage(
  correlation: Correlation,
  resources: readonly Resource[],
  deps: MessageDeps,
  focus: readonly Resource[] = resources,
  included: readonly BundleEntry[] = [],
  warnings: readonly Issue[] = [],
): Bundle {
  if (warnings.length === 0) return message(correlation, "ok", resources, focus, undefined, deps, included);
  const outcome = operationOutcome(warnings, deps.newId());
  return message(correlation, "ok", [...resources, outcome], focus, outcome, deps, included);
}

/**
 * A refusal or failure as a response message: `response.code` is
 * `fatal-error` or `transient-error` and `response.details` points at the
 * OperationOutcome entry in the same Bundle.
 */
export function errorMessage(
  correlation: Correlation,
  code: Exclude<ResponseCode, "ok">,
  issues: readonly Issue[],
  deps: MessageDeps,
): Bundle {
  const outcome = operationOutcome(issues, deps.newId());
  return message(correlation, code, [outcome], [], outcome, deps);
}

function message(
  correlation: Correlation,
  code: ResponseCode,
  resources: readonly Resource[],
  focus: readonly Resource[],
  details: OperationOutcome | undefined,
  deps: MessageDeps,
  included: readonly BundleEntry[] = [],
): Bundle {
  const { request, endpoint, fhirBase } = correlation;
  const destination = request.source?.endpoint;
  return assemble(
    {
      ...eventOf(request),
      ...(destination ? { destination: [{ endpoint: destination }] } : {}),
      source: { ...SANDBOX_SOFTWARE, endpoint },
      response: { identifier: request.id as string, code },
    },
    resources,
    focus,
    fhirBase,
    deps,
    details,
    included,
  );
}

/** A message the sandbox sends on its own (pushes to pharmacies): event, source, destination, focus. */
export interface OutboundMessage {
  event: string;
  /** The sandbox's own URL (MessageHeader.source.endpoint). */
  source: string;
  /** Where the message goes (MessageHeader.destination) and to whom. */
  destination: { endpoint: string; receiver?: Reference };
  resources: readonly Resource[];
  focus: readonly Resource[];
  fhirBase: string;
}

/** Event codes of the messages the sandbox sends live under this system. */
export const SANDBOX_EVENT_SYSTEM = "urn:uae-fhir-sandbox:events";

/** A message the sandbox sends, built like its responses: MessageHeader first, focus on the resources that follow. */
export function outboundMessage(m: OutboundMessage, deps: MessageDeps): Bundle {
  const { endpoint, receiver } = m.destination;
  return assemble(
    {
      eventCoding: { system: SANDBOX_EVENT_SYSTEM, code: m.event },
      destination: [receiver ? { endpoint, receiver } : { endpoint }],
      source: { ...SANDBOX_SOFTWARE, endpoint: m.source },
    },
    m.resources,
    m.focus,
    m.fhirBase,
    deps,
  );
}

/** A message as a client sends it (the `example` command): the client's event and source, its own fullUrls. */
export interface ClientMessage {
  eventCoding: Coding;
  /** The sending system (MessageHeader.source.endpoint). */
  source: string;
  /** Entries after the MessageHeader, with the fullUrls the client gave them. */
  entries: readonly BundleEntry[];
  /** The resources MessageHeader.focus points at (among `entries`). */
  focus: readonly Resource[];
  /** The entry MessageHeader.sender points at (a pharmacy's Organization). */
  sender?: Resource;
}

/** A request message, built like every other message of the sandbox (see assemble). */
export function requestMessage(m: ClientMessage, deps: MessageDeps): Bundle {
  const sender = m.entries.find((e) => e.resource === m.sender)?.fullUrl;
  return assemble(
    {
      eventCoding: { ...m.eventCoding },
      source: { endpoint: m.source },
      ...(sender ? { sender: { reference: sender } } : {}),
    },
    [],
    m.focus,
    "",
    deps,
    undefined,
    m.entries,
  );
}

/**
 * The one place a message Bundle is put together: fullUrls for the
 * resources, the MessageHeader (with its focus and response.details pointing
 * at them) as the first entry.
 */
function assemble(
  header: Omit<MessageHeader, "resourceType" | "id" | "focus">,
  resources: readonly Resource[],
  focus: readonly Resource[],
  fhirBase: string,
  deps: MessageDeps,
  details?: OperationOutcome,
  included: readonly BundleEntry[] = [],
): Bundle {
  // The MessageHeader's entry goes first; its id is drawn after the resources' fullUrls, as it always was.
  const entry: BundleEntry[] = [{}];
  // A resource without an id (an echoed read, say) still needs a fullUrl for focus to point at.
  for (const resource of resources) {
    entry.push({ fullUrl: resource.id ? fullUrlFor(resource, fhirBase) : `urn:uuid:${deps.newId()}`, resource });
  }
  for (const { fullUrl, resource } of included) {
    if (resource) entry.push({ fullUrl: fullUrl ?? fullUrlFor(resource, fhirBase), resource });
  }
  const messageHeader: MessageHeader = { resourceType: "MessageHeader", id: deps.newId(), ...header } as MessageHeader;
  if (details && messageHeader.response)
    messageHeader.response.details = { reference: urlOf(entry, details) as string };
  // Loops over the few entries, not a Map and flatMap: a message has a handful.
  let focusRefs: Reference[] | undefined;
  for (const r of focus) {
    const url = urlOf(entry, r);
    if (!url) continue;
    focusRefs ??= [];
    focusRefs.push({ reference: url });
  }
  if (focusRefs) messageHeader.focus = focusRefs;
  entry[0] = { fullUrl: `urn:uuid:${messageHeader.id}`, resource: messageHeader };
  return {
    resourceType: "Bundle",
    id: deps.newId(),
    type: "message",
    timestamp: deps.now().toISOString(),
    entry,
  };
}

/** The fullUrl of the last entry (the MessageHeader's aside) that holds `resource`, as a Map of them would give. */
function urlOf(entries: readonly BundleEntry[], resource: Resource): string | undefined {
  for (let i = entries.length - 1; i >= 1; i--) if (entries[i]?.resource === resource) return entries[i]?.fullUrl;
  return undefined;
}

function eventOf(request: Correlation["request"]): { eventCoding: Coding } | { eventUri: string } {
  if (request.eventCoding) return { eventCoding: { ...request.eventCoding } };
  return { eventUri: request.eventUri as string };
}
