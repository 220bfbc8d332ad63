/** Deepest nesting accepted in a request; real FHIR resources stay far below it. */
export const MAX_JSON_DEPTH = 128;

export type JsonParse = { ok: true; value: unknown } | { ok: false; reason: string };

/**
 * JSON.parse plus a nesting limit. V8's parser copes with deep input, but
 * everything after it (FHIRPath, serialisers, the journal) recurses, so an
 * attacker's 10,000-level document is refused here. Three steps, each only when the one before cannot tell,
 * none of the first two allocating: the brackets counted, the text's nesting, the parsed value's.
 */
export function parseJson(text: string, maxDepth = MAX_JSON_DEPTH): JsonParse {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: (error as Error).message };
  }
  if (
    !fewOpenings(text, maxDepth) &&
    !textWithinDepth(text, maxDepth) &&
    depthExceeding(value, maxDepth) !== undefined
  ) {
    return { ok: false, reason: `nesting deeper than ${maxDepth} levels` };
  }
  return { ok: true, value };
}

/**
 * Whether `text` holds at most `max` opening brackets, in strings or not: then it cannot nest deeper. A message
 * has a few dozen; indexOf finds them about as fast as memchr (under 1 µs for add-allergy, both texts).
 */
function fewOpenings(text: string, max: number): boolean {
  let count = 0;
  for (let i = text.indexOf("{"); i >= 0; i = text.indexOf("{", i + 1)) if (++count > max) return false;
  for (let i = text.indexOf("["); i >= 0; i = text.indexOf("[", i + 1)) if (++count > max) return false;
  return true;
}

/**
 * Whether `text` (valid JSON) nests no deeper than `maxDepth`, read from the text: a scan that allocates nothing,
 * where a walk of the parsed value builds an array of children per object (7.7 KiB for an add-allergy message).
 * Brackets inside strings are skipped: a string is jumped over to its closing quote.
 */
function textWithinDepth(text: string, maxDepth: number): boolean {
  let depth = 0;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) i = stringEnd(text, i);
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > maxDepth) return false;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
  }
  return true;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** The index of the quote that closes the string opened at `start` (one not escaped by an odd run of backslashes). */
function stringEnd(text: string, start: number): number {
  let end = text.indexOf('"', start + 1);
  while (end > 0) {
    let slashes = 0;
    while (text.charCodeAt(end - 1 - slashes) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return end;
    end = text.indexOf('"', end + 1);
  }
  return text.length;
}

/**
 * The depth past `maxDepth` the parsed value reaches, if it does. The text's nesting bounds the value's, so this
 * walk runs only when the text nests too deep: an attack, or a deep member that a later duplicate key replaced
 * (JSON.parse keeps the last), which the value does not hold and so is accepted as before.
 */
function depthExceeding(root: unknown, maxDepth: number): number | undefined {
  const stack: Array<[unknown, number]> = [[root, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop() as [unknown, number];
    if (value === null || typeof value !== "object") continue;
    if (depth > maxDepth) return depth;
    const children = Array.isArray(value) ? value : Object.values(value);
    for (const child of children) {
      if (child !== null && typeof child === "object") stack.push([child, depth + 1]);
    }
  }
  return undefined;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

export function describeJsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  return `a ${typeof value}`;
}
