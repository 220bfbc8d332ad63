import type { BundleEntry, Resource } from "fhir/r4.js";
import type { Message } from "../envelope/message.js";
import { referencesOf } from "./fixed-resources.js";

const ABSOLUTE = /^(https?:|urn:)/;

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
  // Entry 0 is the request's MessageHeader, never part of an answer: a request without other entries has no targets.
  if (message.entries.length <= 1) return [];
  const included: BundleEntry[] = [];
  // Made when a reference first finds an entry: most answers' references (their own patient) find none.
  let held: Set<string> | undefined;
  const taken = new Set<number>();
  const queue: Resource[] = [...resources];
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    // A stored record's references are found once (referencesOf), not walked again in every answer that holds it.
    for (const reference of referencesOf(next)) {
      if (reference.startsWith("#")) continue;
      const target = message.resolve(reference);
      if (!target || target.index === 0 || taken.has(target.index)) continue;
      const { resourceType, id } = target.resource;
      held ??= new Set(resources.flatMap((r) => (r.id ? [`${r.resourceType}/${r.id}`] : [])));
      // The sandbox's own version of a resource answers for it.
      if (id !== undefined && held.has(`${resourceType}/${id}`)) continue;
      const absolute = ABSOLUTE.test(reference);
      if (!absolute && id === undefined) continue;
      taken.add(target.index);
      if (id !== undefined) held.add(`${resourceType}/${id}`);
      const fullUrl = absolute ? reference.replace(/\/_history\/[^/]+$/, "") : undefined;
      included.push(fullUrl ? { fullUrl, resource: target.resource } : { resource: target.resource });
      queue.push(target.resource as Resource);
    }
  }
  return included;
}
