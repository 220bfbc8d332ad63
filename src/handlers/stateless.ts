import type { Resource } from "fhir/r4.js";
import { markEnteredInError } from "../fhir/entered-in-error.js";
import { type Handler, type HandlerContext, type HandlerTable, ok } from "./handler.js";

/**
 * Built-in handlers that keep no state: what an add returns is its focus
 * with a server id, an update bumps the version it was sent with, a remove
 * comes back marked entered-in-error, reads echo their focus. The stateful
 * store replaces these per operation id.
 */
type Change = "create" | "update" | "remove" | "read";

const stamp = (resource: Resource, version: number, context: HandlerContext, id = resource.id): Resource =>
  ({
    ...resource,
    id,
    meta: { ...resource.meta, versionId: String(version), lastUpdated: context.now().toISOString() },
  }) as Resource;

const previousVersion = (resource: Resource): number => {
  const v = Number(resource.meta?.versionId);
  return Number.isInteger(v) && v > 0 ? v : 1;
};

const changes: Record<Change, (r: Resource, context: HandlerContext) => Resource> = {
  create: (r, context) => stamp(r, 1, context, context.newId()),
  update: (r, context) => stamp(r, previousVersion(r) + 1, context),
  remove: (r, context) => stamp(markEnteredInError(r), previousVersion(r) + 1, context),
  read: (r) => r,
};

const apply =
  (change: Change): Handler =>
  ({ focus }, context) =>
    ok(focus.map((e) => changes[change](e.resource, context)));

export const statelessHandlers: HandlerTable = {
  "view-patient-profile": apply("read"),
  "add-allergy": apply("create"),
  "update-allergy": apply("update"),
  "remove-allergy": apply("remove"),
  "add-history": apply("create"),
  "update-history": apply("update"),
  "remove-history": apply("remove"),
  "add-measurement": apply("create"),
  "update-measurement": apply("update"),
  "remove-measurement": apply("remove"),
  "subscribe-order-notifications": apply("create"),
  "confirm-drugs-availability": apply("update"),
  "receive-allocation": apply("read"),
  "send-dispense-summary": apply("create"),
  "get-pending-tasks": () => ok([]),
  "add-task": apply("create"),
  "update-task": apply("update"),
  "cancel-task": apply("update"),
};
