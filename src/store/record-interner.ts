import { InternTable } from "./intern-table.js";

/**
 * Keys whose string values recur from record to record (code systems,
 * codes, displays, units, references): one copy of each is kept.
 */
const VOCABULARY = new Set(["system", "code", "display", "unit", "use", "status", "url", "reference"]);
/** A resource's own parts, never alike from one record to the next: not looked up, only what they hold. */
const OWN = new Set(["meta", "text"]);
/** Longest string shared, in characters: longer ones are prose, not vocabulary. */
const MAX_STRING = 256;
/** Largest part shared, in characters of JSON: a CodeableConcept or a Reference, not a whole section. */
const MAX_PART = 256;

/**
 * Freezes what the store keeps, all the way down, and keeps one copy of each
 * recurring part. Every parsed message brings its own copy of everything:
 * fifty thousand allergies held fifty thousand `clinicalStatus` objects,
 * arrays and codings alike, and a hundred thousand copies of
 * "http://snomed.info/sct". Here a part of a record (an object or array
 * below the resource: a CodeableConcept, a Reference, …) that is the same
 * as one already kept, key order and values included, is replaced by that
 * one, and vocabulary strings by their first copy. Sharing is safe because
 * everything kept is frozen, and invisible: the same JSON, the same values.
 * Bounded (InternTable): what it holds past the records' own lifetime is at
 * most a few thousand small parts and strings.
 *
 * @example
 *   const kept = interner.keep(JSON.parse(text)); // frozen; its clinicalStatus the one kept before
 */
export class RecordInterner {
  readonly #strings: InternTable<string>;
  readonly #parts: InternTable<object>;

  /** At most this many strings and parts are held (a few hundred kilobytes at the default). */
  constructor(limits: { strings: number; parts: number } = { strings: 4_096, parts: 2_048 }) {
    this.#strings = new InternTable(limits.strings);
    this.#parts = new InternTable(limits.parts);
  }

  /** The resource, frozen all the way down, its recurring parts and strings replaced by the kept ones. */
  keep<T>(resource: T): T {
    if (!isObject(resource) || Object.isFrozen(resource)) return resource;
    this.#keepChildren(resource, OWN);
    return Object.freeze(resource);
  }

  /** Strings and parts held. */
  get size(): { strings: number; parts: number } {
    return { strings: this.#strings.size, parts: this.#parts.size };
  }

  /** Replaces a node's children by their kept (frozen) copies; the `own` keys' parts are frozen without a lookup. */
  #keepChildren(node: Record<string, unknown>, own?: ReadonlySet<string>): void {
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const child = node[i];
        if (isObject(child) && !Object.isFrozen(child)) node[i] = this.#part(child);
      }
      return;
    }
    for (const key of Object.keys(node)) {
      const child = node[key];
      if (typeof child === "string") {
        if (VOCABULARY.has(key) && child.length <= MAX_STRING) node[key] = this.#string(child);
      } else if (isObject(child) && !Object.isFrozen(child)) {
        if (own?.has(key)) {
          this.#keepChildren(child);
          Object.freeze(child);
        } else node[key] = this.#part(child);
      }
    }
  }

  #string(value: string): string {
    return this.#strings.get(value) ?? this.#strings.set(value, value);
  }

  /** The kept part equal to this one, or this one, frozen (and kept, if small enough to recur). */
  #part(node: Record<string, unknown>): object {
    // Serialized only when small and all JSON (one walk tells both): stringifying every level of a deep, large part
    // would cost its size times its depth. For parts that are all JSON, the same text means the same value.
    const text = shareable(node, MAX_PART) ? JSON.stringify(node) : undefined;
    if (text !== undefined && text.length <= MAX_PART) {
      const known = this.#parts.get(text);
      if (known !== undefined) return known;
      this.#keepChildren(node);
      return this.#parts.set(text, Object.freeze(node));
    }
    this.#keepChildren(node);
    return Object.freeze(node);
  }
}

/**
 * Whether `node` is all JSON and the strings and keys within it come to at most `budget` characters (a lower bound
 * of its JSON's length), found in one walk that stops past the budget. All JSON: plain objects and arrays, strings,
 * booleans, null and finite numbers but -0. Two such values with the same JSON text are alike in every way a reader
 * could tell (keys and their order included); others may not be: `{ a: undefined }` and `{}` have the same text, and
 * so have 0 and -0.
 */
function shareable(node: object, budget: number): boolean {
  return within(node, budget) >= 0;
}

/** What is left of `budget` after `value`'s strings and keys (each other value counts 1), or -1 past it or not JSON. */
function within(value: unknown, budget: number): number {
  switch (typeof value) {
    case "string":
      return budget - value.length;
    case "boolean":
      return budget - 1;
    case "number":
      return Number.isFinite(value) && !Object.is(value, -0) ? budget - 1 : -1;
    case "object": {
      if (value === null) return budget - 1;
      let left = budget;
      const proto = Object.getPrototypeOf(value);
      if (proto === Array.prototype) {
        const array = value as unknown[];
        for (let i = 0; i < array.length && left >= 0; i++) left = within(array[i], left);
        return left;
      }
      if (proto !== Object.prototype) return -1;
      for (const key in value) {
        left = within((value as Record<string, unknown>)[key], left - key.length);
        if (left < 0) return -1;
      }
      return left;
    }
    default:
      return -1;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object";
}
