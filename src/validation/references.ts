import { isObject } from "../envelope/json.js";
import { isResourceType } from "./r4/definitions.js";

/** A RESTful URL or relative reference: [base/]Type/id[/_history/version]. */
const RESTFUL = /(?:^|\/)([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[A-Za-z0-9\-.]{1,64})?$/;
// Made once: a literal in a function body is a new RegExp each time it runs.
const LEADING_SLASH = /^\//;
const HISTORY = /\/_history\/.*$/;
const SCHEME = /^[a-z][a-z0-9+.-]*:/i;
const HTTP = /^https?:\/\//;

/**
 * The entries of a Bundle by fullUrl and by `Type/id`, for resolving
 * references the way R4 Bundles do (bundle.html#references): an absolute
 * reference names an entry's fullUrl; a relative one is read against the
 * RESTful fullUrl of the entry that holds it.
 */
export class BundleReferences {
  readonly #byUrl = new Map<string, string>();
  readonly #byTypeId = new Map<string, string>();

  constructor(bundle: Record<string, unknown>) {
    const entries = Array.isArray(bundle.entry) ? bundle.entry : [];
    for (const entry of entries) {
      if (!isObject(entry) || !isObject(entry.resource)) continue;
      const type = entry.resource.resourceType;
      if (typeof type !== "string") continue;
      if (typeof entry.fullUrl === "string") this.#byUrl.set(entry.fullUrl, type);
      if (typeof entry.resource.id === "string") this.#byTypeId.set(`${type}/${entry.resource.id}`, type);
    }
  }

  /** The resource type of the entry a reference resolves to, if any. */
  resolve(reference: string, holderUrl: string | undefined): string | undefined {
    const exact = this.#byUrl.get(reference);
    if (exact) return exact;
    if (!RESTFUL.test(reference) || reference.includes(":")) return undefined;
    const base = holderUrl ? RESTFUL.exec(holderUrl) : null;
    if (base && holderUrl) {
      const root = holderUrl.slice(0, holderUrl.length - base[0].length);
      const found = this.#byUrl.get(`${root}/${reference.replace(LEADING_SLASH, "")}`);
      if (found) return found;
    }
    // Clients commonly write Patient/{id} for an entry whose fullUrl is a urn:uuid; the sandbox resolves those too.
    return this.#byTypeId.get(reference.replace(HISTORY, ""));
  }
}

export interface ReferenceProblem {
  code: "not-found" | "structure";
  says: string;
}

/**
 * What is wrong with a Reference, if anything: a `urn:uuid:`/`urn:oid:`
 * reference must name an entry of the Bundle (there is nowhere else to find
 * it); the type it points at must be one the element allows. A relative
 * reference to a resource outside the Bundle names a resource on the
 * server and is accepted.
 */
export function referenceProblem(
  value: Record<string, unknown>,
  targets: readonly string[] | undefined,
  bundle: BundleReferences | undefined,
  holderUrl: string | undefined,
): ReferenceProblem | undefined {
  const reference = value.reference;
  if (typeof reference !== "string" || reference.startsWith("#")) return undefined;
  const resolved = bundle?.resolve(reference, holderUrl);
  const scheme = reference.startsWith("urn:uuid:")
    ? "urn:uuid"
    : reference.startsWith("urn:oid:")
      ? "urn:oid"
      : undefined;
  if (scheme && !resolved) {
    return {
      code: "not-found",
      says: `${JSON.stringify(reference)} names no entry of the Bundle: a ${scheme} reference must equal the fullUrl of an entry.`,
    };
  }
  let type = resolved;
  if (!type) {
    const m = RESTFUL.exec(reference);
    if (m && !SCHEME.test(reference)) {
      if (!isResourceType(m[1] as string)) {
        return { code: "structure", says: `${JSON.stringify(reference)}: ${m[1]} is not an R4 resource type.` };
      }
      type = m[1];
    } else if (m && HTTP.test(reference) && isResourceType(m[1] as string)) {
      type = m[1];
    }
  }
  if (!type || !targets || targets.includes("Resource") || targets.includes(type)) return undefined;
  return {
    code: "structure",
    says: `${JSON.stringify(reference)} points at a ${type}, but this element may only refer to ${targets.join(" or ")}.`,
  };
}
