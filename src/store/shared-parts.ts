/** Parts longer than this (JSON characters) are left alone: long parts rarely repeat (notes, narratives). */
const MAX_PART_CHARS = 1024;

/** Distinct parts remembered; when full, the table starts again (parts shared so far stay shared). */
const MAX_PARTS = 8192;

/**
 * One copy of the parts stored records repeat. Records of a sandbox repeat
 * themselves: every allergy a load test adds carries the same clinical
 * status, code and category as the others, each parsed anew from its
 * message. The store freezes a record when it keeps it, so equal parts can be
 * one object: `share` freezes a record all the way down and puts, in place of
 * each member that equals one met before (by its JSON text), that one. A
 * record then costs its own members (id, meta, its patient), not copies of
 * everyone's codings: a third of the memory for an added allergy. Members,
 * not every object within them: looking each nested object up cost more
 * than it saved.
 *
 * @example
 *   const parts = new SharedParts();
 *   const a = parts.share(JSON.parse(text1)), b = parts.share(JSON.parse(text2));
 *   a.code === b.code; // true when the two codes are equal
 */
export class SharedParts {
  #parts = new Map<string, unknown>();

  constructor(
    private readonly maxParts = MAX_PARTS,
    private readonly maxPartChars = MAX_PART_CHARS,
  ) {}

  /** `record` frozen all the way down, its members that equal one met before replaced by that one. */
  share<T>(record: T): T {
    if (record === null || typeof record !== "object" || Object.isFrozen(record)) return deepFreeze(record);
    const members = record as Record<string, unknown>;
    for (const key of Object.keys(members)) {
      const member = members[key];
      if (member === null || typeof member !== "object") continue;
      // A record's meta (its version and when it was stored) is its own: looking it up would only fill the table.
      if (key === "meta") {
        deepFreeze(member);
        continue;
      }
      // Equal by JSON text: every view of a record (answers, the admin API, FHIRPath over its JSON) sees only that.
      const text = JSON.stringify(member);
      if (text.length > this.maxPartChars) {
        deepFreeze(member);
        continue;
      }
      const known = this.#parts.get(text);
      if (known !== undefined) {
        members[key] = known;
        continue;
      }
      if (this.#parts.size >= this.maxParts) this.#parts.clear();
      this.#parts.set(text, deepFreeze(member));
    }
    return Object.freeze(record);
  }

  /** How many distinct parts are remembered. */
  get size(): number {
    return this.#parts.size;
  }
}

/** Freezes a value and everything in it, so a handed-out record cannot be changed by mistake. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
