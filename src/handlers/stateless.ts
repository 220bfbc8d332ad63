import type { Resource } from "fhir/r4.js";
import { type Handler, type HandlerContext, type HandlerTable, ok } from "./handler.js";

/**
 * Built-in handlers that keep no state, for the drug-order operations until
 * the order flow lands: a new resource comes back with a server id, an update
 * bumps the version it was sent with, a read echoes its focus.
 */
type Change = "create" | "update" | "read";

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
  read: (r) => r,
};

const apply =
  (change: Change): Handler =>
  ({ focus }, context) =>
    ok(focus.map((e) => changes[change](e.resource, context)));

export const statelessHandlers: HandlerTable = {
  "subscribe-order-notifications": apply("create"),
  "confirm-drugs-availability": apply("update"),
  "receive-allocation": apply("read"),
  "send-dispense-summary": apply("create"),
};
