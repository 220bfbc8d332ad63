import { isObject } from "../envelope/json.js";

/**
 * dom-3, checked natively: every contained resource is referred to from
 * elsewhere in its container (a reference, canonical, uri or url "#id"), or
 * refers to the container itself ("#"). R4 writes it with `as()` on a
 * collection, which HL7's FHIRPath engine refuses to evaluate.
 *
 * @example unreferencedContained({ contained: [{ resourceType: "Medication", id: "m" }] }) // ["m"]
 */
export function unreferencedContained(resource: Record<string, unknown>): string[] {
  const contained = Array.isArray(resource.contained) ? resource.contained : [];
  if (contained.length === 0) return [];
  const local = new Set<string>();
  collectLocal(resource, local);
  return contained.flatMap((c) => {
    if (!isObject(c) || typeof c.id !== "string") return [];
    if (local.has(`#${c.id}`)) return [];
    const toContainer = new Set<string>();
    collectLocal(c, toContainer);
    return toContainer.has("#") ? [] : [c.id];
  });
}

/** Every string value starting with "#" below a node (references and canonical/uri/url values alike). */
function collectLocal(node: unknown, into: Set<string>): void {
  if (typeof node === "string") {
    if (node.charCodeAt(0) === 35 /* # */) into.add(node);
  } else if (Array.isArray(node)) {
    for (const item of node) collectLocal(item, into);
  } else if (isObject(node)) {
    for (const key in node) collectLocal(node[key], into);
  }
}
