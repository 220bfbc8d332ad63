import type { BundleEntry, Resource } from "fhir/r4.js";
import type { Message } from "../envelope/message.js";

const ABSOLUTE = /^(https?:|urn:)/;

/** Every `reference` string inside a resource (Reference.reference at any depth). */
function referencesIn(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) {
    for (const item of node) referencesIn(item, out);
  } else if (node !== null && typeof node === "object") {
    const record = node as Record<string, unknown>;
    for (const key in record) {
      const value = record[key];
      if (key === "reference" && typeof value === "string") out.push(value);
      else if (typeof value === "object") referencesIn(value, out);
    }
  }
  return out;
}

/**
 * The entries of the request message that the answer's resources refer to
 * (directly or through each other) and that the answer does not hold itself:
 * they go into the response Bundle so those references resolve there too
 * (CONTRACT §11). An absolute reference (`urn:uuid:…`, `http…`) keeps its
 * target's fullUrl; a relative `Type/id` one gets the RESTful fullUrl the
 * response gives every resource with an id. References to nothing in the
 * request are echoed as sent and get no entry.
 *
 * @example
 *   // allergy.recorder = "urn:uuid:1" and the request carries that Practitioner
 *   clientTargets([storedAllergy], message) // [{ fullUrl: "urn:uuid:1", resource: practitioner }]
 */
export function clientTargets(resources: readonly Resource[], message: Message): BundleEntry[] {
  const held = new Set(resources.flatMap((r) => (r.id ? [`${r.resourceType}/${r.id}`] : [])));
  const included: BundleEntry[] = [];
  const taken = new Set<number>();
  const queue: unknown[] = [...resources];
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    for (const reference of referencesIn(next)) {
      if (reference.startsWith("#")) continue;
      const target = message.resolve(reference);
      // Entry 0 is the request's MessageHeader: never part of an answer.
      if (!target || target.index === 0 || taken.has(target.index)) continue;
      const { resourceType, id } = target.resource;
      // The sandbox's own version of a resource answers for it.
      if (id !== undefined && held.has(`${resourceType}/${id}`)) continue;
      const absolute = ABSOLUTE.test(reference);
      if (!absolute && id === undefined) continue;
      taken.add(target.index);
      if (id !== undefined) held.add(`${resourceType}/${id}`);
      const fullUrl = absolute ? reference.replace(/\/_history\/[^/]+$/, "") : undefined;
      included.push(fullUrl ? { fullUrl, resource: target.resource } : { resource: target.resource });
      queue.push(target.resource);
    }
  }
  return included;
}
