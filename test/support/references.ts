/**
 * Reference resolution inside a Bundle, written from the FHIR R4 rules
 * (http://hl7.org/fhir/R4/bundle.html#references), not from the sandbox's code:
 *
 * - an absolute reference (`http(s)://…`, `urn:uuid:…`, `urn:oid:…`) resolves to
 *   the entry whose fullUrl is that URL;
 * - a relative reference `Type/id` resolves only when the entry holding it has a
 *   RESTful fullUrl (`[base]/Type/id`): it becomes `[base]/Type/id` and resolves
 *   to the entry with that fullUrl (an entry with a `urn:` fullUrl gives a
 *   relative reference no meaning inside the Bundle);
 * - a version-specific reference (`…/_history/v`) also needs the target's
 *   `meta.versionId` to be `v`;
 * - `#id` points at a contained resource of the resource holding it.
 *
 * References with only an identifier or a display are logical and need no target.
 */

// biome-ignore lint/suspicious/noExplicitAny: walks arbitrary FHIR JSON
type Json = any;

/** The RESTful URL pattern of the R4 spec (references.html#regex), with an optional version. */
const RESTFUL =
  /^((?:https?:\/\/(?:[A-Za-z0-9\-\\.:%$]*\/)+)?)([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/([A-Za-z0-9\-.]{1,64}))?$/;
const ABSOLUTE = /^(https?:|urn:)/;

export interface UnresolvedReference {
  /** Index of the entry holding the reference. */
  entry: number;
  /** Where inside that entry's resource, as a dotted path. */
  path: string;
  reference: string;
}

/** Every `Reference.reference` in a resource, with its path; contained resources are walked as part of it. */
function referencesIn(node: Json, path: string, out: Array<{ path: string; reference: string }>): void {
  if (Array.isArray(node)) {
    node.forEach((item, i) => {
      referencesIn(item, `${path}[${i}]`, out);
    });
    return;
  }
  if (node === null || typeof node !== "object") return;
  for (const [key, value] of Object.entries(node)) {
    if (key === "reference" && typeof value === "string") out.push({ path: `${path}.reference`, reference: value });
    else referencesIn(value, `${path}.${key}`, out);
  }
}

/**
 * The references of a Bundle's entries that do not resolve inside it by the R4
 * rules; `allowed` are references to leave out (e.g. ones a client sent that
 * pointed outside its own message).
 *
 * @example
 *   expect(unresolvedReferences(responseBundle)).toEqual([]);
 */
export function unresolvedReferences(bundle: Json, allowed: ReadonlySet<string> = new Set()): UnresolvedReference[] {
  const entries: Json[] = Array.isArray(bundle?.entry) ? bundle.entry : [];
  const byFullUrl = new Map<string, Json>();
  for (const e of entries) if (typeof e?.fullUrl === "string") byFullUrl.set(e.fullUrl, e.resource);
  const out: UnresolvedReference[] = [];
  entries.forEach((entry, index) => {
    const resource = entry?.resource;
    const found: Array<{ path: string; reference: string }> = [];
    referencesIn(resource, resource?.resourceType ?? "?", found);
    for (const { path, reference } of found) {
      if (allowed.has(reference)) continue;
      if (!resolves(reference, entry.fullUrl, resource, byFullUrl)) out.push({ entry: index, path, reference });
    }
  });
  // Nested Bundles (a Bundle entry inside a Bundle) are their own resolution scope.
  return out;
}

function resolves(reference: string, holderUrl: unknown, holder: Json, byFullUrl: Map<string, Json>): boolean {
  if (reference.startsWith("#")) {
    const id = reference.slice(1);
    return id === "" || (Array.isArray(holder?.contained) && holder.contained.some((c: Json) => c?.id === id));
  }
  let absolute: string | undefined;
  if (ABSOLUTE.test(reference)) absolute = reference;
  else {
    const base = typeof holderUrl === "string" ? RESTFUL.exec(holderUrl)?.[1] : undefined;
    // Only a RESTful fullUrl with a base gives a relative reference a meaning.
    if (base && RESTFUL.test(reference)) absolute = `${base}${reference}`;
  }
  if (absolute === undefined) return false;
  if (byFullUrl.has(absolute)) return true;
  const versioned = RESTFUL.exec(absolute);
  if (versioned?.[4] === undefined) return false;
  const target = byFullUrl.get(absolute.slice(0, absolute.lastIndexOf("/_history/")));
  return target?.meta?.versionId === versioned[4];
}

/**
 * References of a request message that do not resolve inside it: the ones a
 * client may expect the sandbox to echo as sent.
 *
 * @example
 *   const echoes = referencesOutside(requestBundle);
 */
export function referencesOutside(bundle: Json): Set<string> {
  return new Set(unresolvedReferences(bundle).map((u) => u.reference));
}
