import { jsonText } from "../text/json-text.js";

/**
 * What is worked out once from a resource that cannot change (the store freezes what it keeps, all the way down):
 * its JSON text, spliced into every answer that holds it, and the references it carries, which each answer resolves
 * against its request (clientTargets). A patient of 1.3 KB is in every answer about its records; a profile view
 * sends the same 14 to 50 records again and again.
 */
interface Derived {
  /** Kept from the second time the resource is written (see resourceText). */
  text: string | undefined;
  /** Written once already, its text not kept. */
  written: boolean;
  references: readonly string[] | undefined;
}

/** Characters of text held at most (both generations): a few megabytes, whatever the answers hold. */
const MAX_CHARS = 2 * 1024 * 1024;
/** Resources held at most: a few patient profiles' worth, and the records of the latest answers. */
const MAX_ENTRIES = 4_096;

/**
 * By resource object, bounded like InternTable: two generations, an entry used again moves to the young one, and
 * the young one becomes the old one (the old one dropped) when it holds half the characters or half the entries.
 * No recency list to update on every lookup.
 */
let young = new Map<object, Derived>();
let old = new Map<object, Derived>();
let youngChars = 0;

function derivedOf(resource: object): Derived | undefined {
  const known = young.get(resource);
  if (known !== undefined) return known;
  const before = old.get(resource);
  if (before !== undefined) {
    old.delete(resource);
    keep(resource, before);
    return before;
  }
  if (!fixed(resource)) return undefined;
  return keep(resource, { text: undefined, written: false, references: undefined });
}

function keep(resource: object, derived: Derived): Derived {
  young.set(resource, derived);
  grew(derived.text?.length ?? 0);
  return derived;
}

function grew(chars: number): void {
  youngChars += chars;
  if (youngChars >= MAX_CHARS / 2 || young.size >= MAX_ENTRIES / 2) {
    old = young;
    young = new Map();
    youngChars = 0;
  }
}

/**
 * Takes a resource as one that cannot change, without the walk that tells it: for the store, which has just frozen
 * it all the way down (RecordInterner) and is about to answer with it.
 */
export function isFixed(resource: object): void {
  if (!young.has(resource)) keep(resource, { text: undefined, written: false, references: undefined });
}

/**
 * Whether a value's JSON text cannot change: plain objects and arrays, frozen all the way down, and primitives but
 * functions (which have no JSON, and a `toJSON` could give anything).
 */
function fixed(value: unknown): boolean {
  if (value === null || typeof value !== "object") return typeof value !== "function";
  const proto = Object.getPrototypeOf(value);
  if ((proto !== Object.prototype && proto !== Array.prototype) || !Object.isFrozen(value)) return false;
  for (const key in value) if (!fixed((value as Record<string, unknown>)[key])) return false;
  return true;
}

/**
 * A resource's JSON text as jsonText writes it: for a resource that cannot change (frozen all the way down), kept
 * from the second time it is written, and reused; made anew each time for any other. Most records are written once
 * (a new allergy, in the answer that adds it): holding each one's text until the table turns it over cost more in
 * garbage collection (old-space texts) than writing it again when a profile view sends it.
 *
 * @example
 *   resourceText(storedPatient) === jsonText(storedPatient) // kept on the second call, reused from the third
 */
export function resourceText(resource: object): string {
  const derived = Object.isFrozen(resource) ? derivedOf(resource) : undefined;
  if (derived === undefined) return jsonText(resource);
  if (derived.text === undefined) {
    if (!derived.written) {
      derived.written = true;
      return jsonText(resource);
    }
    derived.text = jsonText(resource);
    // Counted in the generation that holds it now (derivedOf just put it in the young one).
    grew(derived.text.length);
  }
  return derived.text;
}

/**
 * Every `reference` string inside a resource (Reference.reference at any depth), in document order: found once
 * for a resource that cannot change.
 */
export function referencesOf(resource: object): readonly string[] {
  const derived = Object.isFrozen(resource) ? derivedOf(resource) : undefined;
  if (derived === undefined) return referencesIn(resource, []);
  derived.references ??= referencesIn(resource, []);
  return derived.references;
}

function referencesIn(node: unknown, out: string[]): string[] {
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
