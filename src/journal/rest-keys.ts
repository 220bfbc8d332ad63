/**
 * The RESTful fullUrls a body names, read without a regular expression: the index reads every answer as it is kept,
 * and a match object, its capture and the tail's captures cost about 1.7 KiB of garbage per add-allergy answer.
 *
 * What counts (as the patterns `fullUrl\\?"\s*:\s*\\?"([^"\\]*)` for the value, and
 * `\/([A-Z][A-Za-z]{1,63})\/([A-Za-z0-9\-.]{1,64})$` for its tail, would read it): the value of each `fullUrl`
 * member, in the message Bundle itself or in the JSON string of the `{"content": …}` envelope (its quotes escaped),
 * cut at its first quote or backslash (ids and type names have neither), whose last two segments are a type name
 * and an R4 id (1–64 characters).
 */

/**
 * `type/id` as a 30-bit number (FNV-1a, kept small enough to be stored unboxed). Two resources may share one: a
 * lookup checks each call's entries anyway, so a shared number costs a body parsed, never a wrong answer; and the
 * index keeps no string (a capture is a slice of the body, which would keep the whole body alive unpacked).
 */
export function keyOf(type: string, id: string): number {
  return tailHash(type, 0, type.length, id, 0, id.length);
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const SLASH = 0x2f;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const MEMBER = "fullUrl";

/** keyOf of `type[typeFrom, typeTo)` and `id[idFrom, idTo)`, read in place. */
function tailHash(type: string, typeFrom: number, typeTo: number, id: string, idFrom: number, idTo: number): number {
  let hash = FNV_OFFSET;
  for (let i = typeFrom; i < typeTo; i++) hash = Math.imul(hash ^ type.charCodeAt(i), FNV_PRIME);
  hash = Math.imul(hash ^ SLASH, FNV_PRIME);
  for (let i = idFrom; i < idTo; i++) hash = Math.imul(hash ^ id.charCodeAt(i), FNV_PRIME);
  return hash & 0x3fffffff;
}

/** What `\s` matches: ECMAScript white space and line terminators. */
function isSpace(c: number): boolean {
  if (c <= 0x20) return c === 0x20 || (c >= 0x09 && c <= 0x0d);
  if (c < 0xa0) return false;
  return (
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

const isUpper = (c: number) => c >= 0x41 && c <= 0x5a;
const isLetter = (c: number) => isUpper(c) || (c >= 0x61 && c <= 0x7a);
const isIdChar = (c: number) => isLetter(c) || (c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2e;

/** The key of a value's REST tail (`…/{type}/{id}` at its end, `body[from, to)`), else -1. */
function tailKey(body: string, from: number, to: number): number {
  const idEnd = to;
  let i = to - 1;
  while (i >= from && isIdChar(body.charCodeAt(i))) i--;
  const idStart = i + 1;
  if (i < from || body.charCodeAt(i) !== SLASH || idEnd - idStart < 1 || idEnd - idStart > 64) return -1;
  const typeEnd = i;
  i--;
  while (i >= from && isLetter(body.charCodeAt(i))) i--;
  const typeStart = i + 1;
  const typeLength = typeEnd - typeStart;
  if (i < from || body.charCodeAt(i) !== SLASH || typeLength < 2 || typeLength > 64) return -1;
  // The type's first letter must be upper case: a lower-case one leaves no match (the segment is all letters).
  if (!isUpper(body.charCodeAt(typeStart))) return -1;
  return tailHash(body, typeStart, typeEnd, body, idStart, idEnd);
}

/** Pushes onto `into` the key (keyOf) of each RESTful fullUrl `body` names, in order, repeats included. */
export function restKeysOf(body: string, into: number[]): void {
  let from = 0;
  for (;;) {
    const at = body.indexOf(MEMBER, from);
    if (at < 0) return;
    from = at + MEMBER.length;
    let i = from;
    if (body.charCodeAt(i) === BACKSLASH) i++;
    if (body.charCodeAt(i) !== QUOTE) continue;
    i++;
    while (isSpace(body.charCodeAt(i))) i++;
    if (body.charCodeAt(i) !== COLON) continue;
    i++;
    while (isSpace(body.charCodeAt(i))) i++;
    if (body.charCodeAt(i) === BACKSLASH) i++;
    if (body.charCodeAt(i) !== QUOTE) continue;
    const start = ++i;
    for (let c = body.charCodeAt(i); i < body.length && c !== QUOTE && c !== BACKSLASH; c = body.charCodeAt(++i));
    from = i;
    const key = tailKey(body, start, i);
    if (key >= 0) into.push(key);
  }
}
