import { R4 } from "./r4/definitions.js";

/** What is wrong with a primitive value, in words, with the IssueType it is. */
export interface PrimitiveProblem {
  code: "structure" | "value";
  says: string;
}

/** Checks one JSON value against an R4 primitive type; undefined when it is valid. */
export type PrimitiveCheck = (value: unknown) => PrimitiveProblem | undefined;

/** R4 integers are 32-bit signed (datatypes.html#integer). */
const INT_MIN = -2_147_483_648;
const INT_MAX = 2_147_483_647;
/** FHIR strings are at most 1 MiB (datatypes.html#string); the R4 definitions say so as maxLength. */
const DATE_TYPES = new Set(["date", "dateTime", "instant"]);
/** datatypes.html#string: no characters below U+0020 but tab, CR and LF (Medplum's validator refuses them too). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what this looks for.
const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F]/;

const examples: Record<string, string> = {
  date: "YYYY, YYYY-MM or YYYY-MM-DD, e.g. 1990-01-15",
  dateTime: "YYYY, YYYY-MM, YYYY-MM-DD or YYYY-MM-DDThh:mm:ss+zz:zz, e.g. 2026-01-15T09:30:00+04:00",
  instant: "YYYY-MM-DDThh:mm:ss(.sss)+zz:zz with a time zone, e.g. 2026-01-15T09:30:00.000Z",
  time: "hh:mm:ss, e.g. 09:30:00",
  code: "a token without leading, trailing or double whitespace",
  id: "1–64 of A–Z, a–z, 0–9, '-' and '.'",
  uri: "a URI without whitespace",
  url: "a URL without whitespace",
  canonical: "a canonical URL without whitespace",
  oid: "urn:oid: followed by a dotted number, e.g. urn:oid:2.16.840.1.113883",
  uuid: "urn:uuid: followed by a lower-case UUID",
  base64Binary: "base64 text",
  string: "text with at least one non-whitespace character",
  markdown: "text with at least one non-whitespace character",
  xhtml: "an XHTML <div>",
  boolean: "true or false (JSON booleans)",
  decimal: "a JSON number",
  integer: "a JSON whole number from -2147483648 to 2147483647",
  positiveInt: "a JSON whole number of 1 or more",
  unsignedInt: "a JSON whole number of 0 or more",
};

const cache = new Map<string, PrimitiveCheck>();

/**
 * The language of R4's base64Binary expression `(\s*([0-9a-zA-Z\+/=]){4}\s*)+` —
 * groups of four base64 characters, whitespace only between groups — read
 * in one linear pass instead of by a backtracking regular expression.
 */
const BASE64 = {
  test(s: string): boolean {
    let inGroup = 0;
    let groups = 0;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c === 32 || (c >= 9 && c <= 13)) {
        if (inGroup !== 0) return false;
        continue;
      }
      const ok =
        (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 43 || c === 47 || c === 61;
      if (!ok) return false;
      inGroup = (inGroup + 1) % 4;
      if (inGroup === 0) groups++;
    }
    return inGroup === 0 && groups > 0;
  },
};

/**
 * The check of an R4 primitive type, compiled once from its definition: the
 * JSON type (R4 JSON Schema), the R4 regular expression of its lexical form,
 * its length limit, plus the rules the spec states in words (32-bit
 * integers, positive/unsigned ranges, real calendar dates, non-blank strings).
 *
 * @example primitiveCheck("date")("15/01/1990") // → { code: "value", says: "…" }
 */
export function primitiveCheck(type: string): PrimitiveCheck {
  let check = cache.get(type);
  if (!check) {
    check = build(type);
    cache.set(type, check);
  }
  return check;
}

function build(type: string): PrimitiveCheck {
  const def = R4.primitives[type];
  if (!def) throw new Error(`not an R4 primitive type: ${type}`);
  // base64Binary's R4 expression backtracks exponentially on whitespace-heavy input; BASE64 reads the same language in one pass.
  const regex = type === "base64Binary" ? BASE64 : def.regex ? new RegExp(`^(?:${def.regex})$`) : undefined;
  const wanted = examples[type] ?? `an R4 ${type}`;
  const wrongFormat = (value: unknown): PrimitiveProblem => ({
    code: "value",
    says: `${JSON.stringify(value)} is not a valid ${type}: expected ${wanted}.`,
  });
  const kind = def.json;
  const text = type === "string" || type === "markdown";
  const date = DATE_TYPES.has(type);
  return (value) => {
    if (typeof value !== kind) {
      return {
        code: "structure",
        says: `must be a JSON ${kind} (FHIR ${type}), found ${describe(value)}; a ${type} is ${wanted}.`,
      };
    }
    if (kind === "number") {
      const n = value as number;
      if (!Number.isFinite(n)) return wrongFormat(value);
      if (type !== "decimal") {
        if (!Number.isInteger(n) || n < INT_MIN || n > INT_MAX) return wrongFormat(value);
        if (type === "positiveInt" && n < 1) return wrongFormat(value);
        if (type === "unsignedInt" && n < 0) return wrongFormat(value);
      }
      return undefined;
    }
    if (kind === "boolean") return undefined;
    const s = value as string;
    if (s.trim() === "") {
      return { code: "value", says: `must not be empty or only whitespace (FHIR ${type}: ${wanted}).` };
    }
    if (def.maxLength !== undefined && s.length > def.maxLength) {
      return { code: "value", says: `is longer than ${def.maxLength} characters, the limit of a FHIR ${type}.` };
    }
    if (regex && !regex.test(s)) return wrongFormat(value);
    if (text && CONTROL.test(s)) {
      return {
        code: "value",
        says: `contains a control character (below U+0020 other than tab, CR and LF), which FHIR ${type}s do not carry.`,
      };
    }
    if (date && !isCalendarDate(s)) {
      return {
        code: "value",
        says: `${JSON.stringify(s)} is not a real calendar date (FHIR ${type}: dates SHALL be valid dates).`,
      };
    }
    return undefined;
  };
}

/** Day within its month (leap years included), for values that already match the R4 regular expression. */
function isCalendarDate(s: string): boolean {
  if (s.length < 10) return true;
  const year = digits(s, 0, 4);
  const month = digits(s, 5, 7);
  const day = digits(s, 8, 10);
  if (month === 2) return day <= ((year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28);
  return day <= (DAYS[month - 1] ?? 0);
}

/** Days of each month in a common year. */
const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** The number written by the ASCII digits s[from, to) (the R4 expression has checked they are digits). */
function digits(s: string, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) n = n * 10 + (s.charCodeAt(i) - 48);
  return n;
}

export function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (typeof value === "string")
    return `a string (${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)})`;
  return `a ${typeof value} (${String(value)})`;
}
