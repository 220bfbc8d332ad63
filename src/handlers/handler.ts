import type { Resource } from "fhir/r4.js";
import type { EntryRef, Message } from "../envelope/message.js";
import type { Issue } from "../fhir/outcome.js";
import type { Operation } from "../routing/operation.js";

/** What a handler gets: the routed operation, the parsed message and its checked focus. */
export interface HandlerInput {
  operation: Operation;
  message: Message;
  focus: EntryRef[];
}

/** What the built-in behaviour needs from outside: time and ids, so tests can fix both. */
export interface HandlerContext {
  now(): Date;
  newId(): string;
}

/**
 * A handler either returns resources (the response message's entries, with
 * `focus` naming which of them MessageHeader.focus points at, default all),
 * or refuses on a business rule. It never builds Bundles or OperationOutcomes.
 */
export type HandlerResult =
  | { kind: "ok"; resources: Resource[]; focus?: Resource[] }
  | { kind: "refused"; issues: Issue[] };

export type Handler = (input: HandlerInput, context: HandlerContext) => HandlerResult | Promise<HandlerResult>;

/** Handlers by operation id. */
export type HandlerTable = Readonly<Record<string, Handler>>;

export const ok = (resources: Resource[], focus?: Resource[]): HandlerResult =>
  focus ? { kind: "ok", resources, focus } : { kind: "ok", resources };

export const refuse = (...issues: Issue[]): HandlerResult => ({ kind: "refused", issues });
