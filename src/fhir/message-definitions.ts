import type { MessageDefinition, MessageDefinitionFocus } from "fhir/r4.js";
import type { PushMessageSpec } from "../orders/push-messages.js";
import type { OperationSpec } from "../routing/operation.js";
import { VERSION } from "../version.js";
import { canonicalUrl, PUBLISHER } from "./canonical.js";
import { SANDBOX_EVENT_SYSTEM } from "./response-message.js";

/** Why a MessageDefinition exists: an operation the sandbox receives (or an alias of one), or a push it sends. */
export type MessageMode = "receiver" | "sender";

/** A MessageDefinition with the mode the sandbox plays in it (the CapabilityStatement's supportedMessage.mode). */
export interface PublishedMessage {
  mode: MessageMode;
  definition: MessageDefinition;
}

/** R4 responses reuse the request's event, so every allowed response is a message of the same definition. */
const OPERATION_RESPONSES = [
  "`ok`: the message was processed; the resources the operation returns follow the MessageHeader as entries (warnings, if any, in an OperationOutcome that `response.details` references). HTTP 200.",
  "`fatal-error`: a business rule refused the message (an unknown or removed record, a Task transition outside the state machine, a late, duplicate, out-of-order or foreign drug-order message, …); `response.details` references the OperationOutcome entry that says why. Nothing changed. HTTP 200, or 422 with `--business-errors http`.",
  "`transient-error`: only when a scenario rule scripts it (a service down, throttling); `response.details` references the OperationOutcome. HTTP 200 or the scripted 429/5xx: send the message again later.",
] as const;

const PUSH_RESPONSE =
  "The sandbox reads only the HTTP status: any 2xx counts as delivered, and the body is recorded but not read, so a response message (`response.code` `ok`) is welcome but not needed. Connection errors, timeouts, 5xx, 408 and 429 are retried with backoff (`--push-attempts`); any other status is a failed delivery.";

/**
 * The MessageDefinitions of one catalogue operation: its own (id = the
 * operation id, eventCoding = the configured event code) and one per alias
 * (id `{operation}-alias-{n}`, `base` = the operation's own).
 *
 * @example
 *   operationMessages(addAllergy, "2026-11-23T10:00:00.000Z").map((m) => m.definition.id)
 *   // ["add-allergy", "add-allergy-alias-1"] when add-allergy has one alias
 */
export function operationMessages(op: OperationSpec, date: string): PublishedMessage[] {
  const url = canonicalUrl("MessageDefinition", op.id);
  const routing = (code: string) =>
    `Routed by \`MessageHeader.eventCoding.code\` \`${code}\` (case-insensitive, whatever the system) or an \`eventUri\` ending in \`/${code}\`.`;
  const renamed = op.event === op.id ? "" : ` The event code of operation ${op.id}, as the operations file renamed it.`;
  const own = messageDefinition({
    id: op.id,
    title: titleOf(op.id),
    description: `${op.summary} ${routing(op.event)}${renamed}${focusNote(op)}`,
    event: op.event,
    category: op.category,
    focus: operationFocus(op),
    responseRequired: "always",
    responses: OPERATION_RESPONSES,
    date,
  });
  const aliases = op.aliases.map((alias, i) =>
    messageDefinition({
      id: `${op.id}-alias-${i + 1}`,
      title: `${titleOf(op.id)} (alias ${alias})`,
      description: `An alias of ${op.id}: the same operation under the event code \`${alias}\`. ${op.summary} ${routing(alias)}${focusNote(op)}`,
      event: alias,
      category: op.category,
      focus: operationFocus(op),
      responseRequired: "always",
      responses: OPERATION_RESPONSES,
      date,
      base: url,
    }),
  );
  return [own, ...aliases].map((definition) => ({ mode: "receiver", definition }));
}

/**
 * The MessageDefinition of a push the sandbox sends to pharmacies.
 *
 * @example
 *   pushMessage(PUSH_MESSAGES[0], date).definition.url
 *   // "https://uae-fhir-sandbox.example/fhir/MessageDefinition/order-fulfillment-request"
 */
export function pushMessage(push: PushMessageSpec, date: string): PublishedMessage {
  return {
    mode: "sender",
    definition: messageDefinition({
      id: push.id,
      title: titleOf(push.id),
      description: `${push.summary} Sent with \`MessageHeader.eventCoding\` \`${SANDBOX_EVENT_SYSTEM}|${push.id}\`, as the body \`{"content": "<Bundle JSON>"}\`. No response message is required: an HTTP 2xx acknowledges it.`,
      event: push.id,
      category: "notification",
      focus: push.focus.map((code) => ({ code: resourceType(code), min: 1, max: "1" })),
      responseRequired: "never",
      responses: [PUSH_RESPONSE],
      date,
    }),
  };
}

/**
 * Every message the sandbox publishes: the catalogue's operations (aliases
 * included) as receiver, then the pushes as sender.
 *
 * @example
 *   publishedMessages(catalogue.operations, PUSH_MESSAGES, startedAt.toISOString())
 */
export function publishedMessages(
  operations: readonly OperationSpec[],
  pushes: readonly PushMessageSpec[],
  date: string,
): PublishedMessage[] {
  return [...operations.flatMap((op) => operationMessages(op, date)), ...pushes.map((p) => pushMessage(p, date))];
}

interface MessageParts {
  id: string;
  title: string;
  description: string;
  event: string;
  category: NonNullable<MessageDefinition["category"]>;
  focus: NonNullable<MessageDefinition["focus"]>;
  responseRequired: NonNullable<MessageDefinition["responseRequired"]>;
  responses: readonly string[];
  date: string;
  base?: string;
}

function messageDefinition(parts: MessageParts): MessageDefinition {
  const url = canonicalUrl("MessageDefinition", parts.id);
  return {
    resourceType: "MessageDefinition",
    id: parts.id,
    url,
    version: VERSION,
    name: nameOf(parts.id),
    title: parts.title,
    status: "active",
    date: parts.date,
    publisher: PUBLISHER,
    description: parts.description,
    ...(parts.base ? { base: parts.base } : {}),
    eventCoding: { system: SANDBOX_EVENT_SYSTEM, code: parts.event },
    category: parts.category,
    focus: parts.focus,
    responseRequired: parts.responseRequired,
    allowedResponse: parts.responses.map((situation) => ({ message: url, situation })),
  };
}

/** One focus entry per type: required types at least once; `single` types at most once, others any number. */
function operationFocus(op: OperationSpec): NonNullable<MessageDefinition["focus"]> {
  const { types, required, single } = op.focus;
  return types.map((code) => ({
    code: resourceType(code),
    min: (required ?? (types.length === 1 ? types : [])).includes(code) ? 1 : 0,
    max: single?.includes(code) ? "1" : "*",
  }));
}

/** Focus minimums cannot say "one of these types": the description does. */
function focusNote(op: OperationSpec): string {
  return op.focus.required === undefined && op.focus.types.length > 1
    ? ` The focus holds at least one ${op.focus.types.join(" or ")}.`
    : "";
}

/** The catalogue names resource types as plain strings; they are R4 type names. */
const resourceType = (code: string) => code as MessageDefinitionFocus["code"];

/** `add-allergy` → `AddAllergy`: a name that matches `[A-Z]([A-Za-z0-9_]){0,254}`. */
function nameOf(id: string): string {
  const name = id
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join("");
  return /^[A-Z]/.test(name) ? name : `M${name}`;
}

/** `view-patient-profile` → `View patient profile`. */
function titleOf(id: string): string {
  const words = id.replaceAll("-", " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
}
