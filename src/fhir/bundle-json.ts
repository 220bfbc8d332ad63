import { randomUUID } from "node:crypto";
import { jsonText } from "../text/json-text.js";

/** Most resource texts kept: a few patient profiles' worth (a profile view sends 14 to 50 records). */
const LIMIT = 2_048;

/**
 * JSON texts of stored resources, by object. The store freezes what it keeps (deeply), so a stored record's text
 * never changes: it is serialized once and spliced into every answer that holds it. Bounded, oldest first out.
 */
const texts = new Map<object, string>();

/** Stands for a resource in the Bundle's text until its own text is spliced in; never leaves the process. */
const MARK = `@@uae-fhir-sandbox:${randomUUID()}:`;

/** Whether a value's JSON text cannot change: plain objects and arrays, frozen all the way down, and primitives. */
function fixed(value: unknown): boolean {
  if (value === null || typeof value !== "object") return typeof value !== "function";
  const proto = Object.getPrototypeOf(value);
  if ((proto !== Object.prototype && proto !== Array.prototype) || !Object.isFrozen(value)) return false;
  for (const child of Object.values(value)) if (!fixed(child)) return false;
  return true;
}

/** A stored resource's JSON text (jsonText's): kept from the last time, or made now (and kept if it cannot change). */
function resourceText(resource: object): string {
  const known = texts.get(resource);
  if (known !== undefined) {
    texts.delete(resource);
    texts.set(resource, known);
    return known;
  }
  const text = jsonText(resource);
  if (fixed(resource)) {
    texts.set(resource, text);
    if (texts.size > LIMIT) texts.delete(texts.keys().next().value as object);
  }
  return text;
}

/**
 * `jsonText(body)`, the same text, made faster for Bundles that hold several frozen (stored) resources: a
 * patient profile view sends the same records again and again, and serializing (and escaping) them was most of its
 * cost.
 *
 * @example
 *   bundleJson(okMessage(correlation, records, deps)) === jsonText(okMessage(correlation, records, deps))
 */
export function bundleJson(body: unknown): string {
  const entries = (body as { entry?: unknown } | null)?.entry;
  if (!Array.isArray(entries) || frozenResources(entries) < MIN_FROZEN) return jsonText(body);
  const spliced: string[] = [];
  const entry = entries.map((e: unknown) => {
    const resource = resourceOf(e);
    if (resource === undefined || !Object.isFrozen(resource)) return e;
    spliced.push(resourceText(resource));
    return { ...(e as object), resource: `${MARK}${spliced.length - 1}` };
  });
  const pieces = jsonText({ ...(body as object), entry }).split(`"${MARK}`);
  let text = pieces[0] as string;
  for (let i = 1; i < pieces.length; i++) {
    const piece = pieces[i] as string;
    const end = piece.indexOf('"');
    text += spliced[Number(piece.slice(0, end))] + piece.slice(end + 1);
  }
  return text;
}

/**
 * Fewer stored resources than this in a Bundle and it is serialized as a whole: splicing pays off for a profile's
 * records, not for an answer that holds one new record and its patient.
 */
const MIN_FROZEN = 4;

function resourceOf(entry: unknown): object | undefined {
  const resource = (entry as { resource?: unknown } | null)?.resource;
  return resource !== null && typeof resource === "object" ? resource : undefined;
}

function frozenResources(entries: readonly unknown[]): number {
  let count = 0;
  for (const e of entries) {
    const resource = resourceOf(e);
    if (resource !== undefined && Object.isFrozen(resource)) count++;
  }
  return count;
}
