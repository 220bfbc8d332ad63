/** Parts longer than this (JSON characters) are left alone: long parts rarely repeat (notes, narratives). */
const MAX_PART_CHARS = 512;

/** Distinct parts remembered; when full, the table starts again (parts shared so far stay shared). */
const MAX_PARTS = 8192;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * One copy of the parts stored records repeat. Records of a sandbox repeat
 * themselves: every allergy a load test adds carries the same clinical
 * status, code and category objects, each parsed anew from its message. The
 * store freezes a record when it keeps it, so equal parts can be one object:
 * `share` freezes a record all the way down and puts, in place of each
 * object or array within it that equals one met before (by its JSON text),
 * that one. A record then costs its own members, not copies of everyone's
 * codings — a third of the memory for an added allergy.
 *
 * @example
 *   const parts = new SharedParts();
 *   const a = parts.share(JSON.parse(text1)), b = parts.share(JSON.parse(text2));
 *   a.code === b.code; // true when the two codes are equal
 */
export class SharedParts {
  #parts = new Map<string, Json>();

  constructor(
    private readonly maxParts = MAX_PARTS,
    private readonly maxPartChars = MAX_PART_CHARS,
  ) {}

  /** `value` frozen all the way down, with its repeated parts shared; the root itself is never replaced. */
  share<T>(value: T): T {
    if (value !== null && typeof value === "object") this.#visit(value as Json, true);
    return value;
  }

  /** How many distinct parts are remembered. */
  get size(): number {
    return this.#parts.size;
  }

  /**
   * Shares the members of `value` (frozen from here down when it is not yet) and returns its JSON text, or
   * undefined where it is too long to be a shared part or holds what JSON does not (the text is then not needed).
   */
  #visit(value: Json, root: boolean): string | undefined {
    if (value === null || typeof value !== "object") return JSON.stringify(value);
    const frozen = Object.isFrozen(value);
    // The root's own text is never needed: only parts are shared.
    let text: string | undefined = root ? undefined : Array.isArray(value) ? "[" : "{";
    let first = true;
    for (const key of Object.keys(value)) {
      const member = (value as Record<string, Json>)[key] as Json;
      let memberText: string | undefined;
      if (member !== null && typeof member === "object") {
        memberText = this.#visit(member, false);
        const shared = memberText === undefined ? undefined : this.#parts.get(memberText);
        if (shared !== undefined && shared !== member && !frozen) (value as Record<string, Json>)[key] = shared;
        else if (shared === undefined && memberText !== undefined) this.#remember(memberText, member);
      } else {
        memberText = member === undefined ? undefined : JSON.stringify(member);
        // An undefined member is left out of JSON: the text of this value would not be its JSON.
        if (memberText === undefined) text = undefined;
      }
      if (text === undefined || memberText === undefined || text.length > this.maxPartChars) {
        text = undefined;
        continue;
      }
      if (!first) text += ",";
      text += Array.isArray(value) ? memberText : `${JSON.stringify(key)}:${memberText}`;
      first = false;
    }
    if (!frozen) Object.freeze(value);
    if (text === undefined) return undefined;
    text += Array.isArray(value) ? "]" : "}";
    return text.length > this.maxPartChars ? undefined : text;
  }

  #remember(text: string, part: Json): void {
    if (this.#parts.size >= this.maxParts) this.#parts.clear();
    this.#parts.set(text, part);
  }
}
