import { bail } from "./runtime.js";

/**
 * FHIRPath ordering of date, dateTime and instant values with partial
 * precision: compared field by field down to the coarser precision; equal
 * so far with different precisions gives empty. Seconds and milliseconds
 * are one precision. Cases where the library's normalisation is subtle
 * (one side with a time zone and the other without, different offsets with
 * different precisions, sub-millisecond digits) defer to the library.
 */

const DATE_TIME =
  /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?(Z|[+-]\d{2}:\d{2})?)?)?)?$/;

interface Parsed {
  /** year, month, day, hour, minute, second+ms as numbers. */
  fields: number[];
  tz: string | undefined;
}

function parse(s: unknown): Parsed {
  if (typeof s !== "string") bail();
  const m = DATE_TIME.exec(s);
  if (!m) bail();
  const fields: number[] = [];
  for (let i = 1; i <= 5; i++) {
    const f = m[i];
    if (f === undefined) break;
    fields.push(Number(f));
  }
  if (m[6] !== undefined) fields.push(Number(m[6]) * 1000 + (m[7] === undefined ? 0 : Number(m[7].padEnd(3, "0"))));
  const [, month = 1, day = 1, hour = 0, minute = 0, ms = 0] = fields;
  if (month < 1 || month > 12 || day < 1 || day > daysIn(fields[0] ?? 0, month) || hour > 23 || minute > 59) bail();
  if (ms >= 60000) bail();
  // A time without seconds: the library's precision handling differs from the spec.
  if (fields.length === 5) bail();
  return { fields, tz: m[8] };
}

/** Offset in minutes of `Z`/`+hh:mm`. */
function offset(tz: string): number {
  if (tz === "Z") return 0;
  // Out-of-range offsets: whatever the library does with them, it decides.
  if (Number(tz.slice(1, 3)) > 14 || Number(tz.slice(4, 6)) > 59) bail();
  const sign = tz.startsWith("-") ? -1 : 1;
  return sign * (Number(tz.slice(1, 3)) * 60 + Number(tz.slice(4, 6)));
}

function toUtcFields(p: Parsed): number[] {
  const [y = 0, mo = 1, d = 1, h = 0, mi = 0, ms = 0] = p.fields;
  const t = Date.UTC(y, mo - 1, d, h, mi, 0, ms) - offset(p.tz ?? "Z") * 60000;
  const u = new Date(t);
  return [
    u.getUTCFullYear(),
    u.getUTCMonth() + 1,
    u.getUTCDate(),
    u.getUTCHours(),
    u.getUTCMinutes(),
    u.getUTCSeconds() * 1000 + u.getUTCMilliseconds(),
  ].slice(0, p.fields.length);
}

/** The library rejects days past the end of the month (an evaluation error). */
function daysIn(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

function digits(s: string, at: number, n: number): number {
  let v = 0;
  for (let i = at; i < at + n; i++) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    v = v * 10 + c;
  }
  return v;
}

/**
 * Where the time zone of a well-formed date/dateTime/instant with seconds
 * (or a date) starts, -1 when the string needs the full parser.
 */
function zoneStart(s: string): number {
  const n = s.length;
  if (n < 4 || digits(s, 0, 4) < 0) return -1;
  if (n === 4) return 4;
  if (s[4] !== "-" || n < 7) return -1;
  const month = digits(s, 5, 2);
  if (month < 1 || month > 12) return -1;
  if (n === 7) return 7;
  if (s[7] !== "-" || n < 10) return -1;
  const day = digits(s, 8, 2);
  if (day < 1 || day > daysIn(digits(s, 0, 4), month)) return -1;
  if (n === 10) return 10;
  if (s[10] !== "T" || n < 19 || s[13] !== ":" || s[16] !== ":") return -1;
  const h = digits(s, 11, 2);
  const m = digits(s, 14, 2);
  const sec = digits(s, 17, 2);
  if (h < 0 || h > 23 || m < 0 || m > 59 || sec < 0 || sec > 59) return -1;
  let i = 19;
  if (s[i] === ".") {
    const start = ++i;
    while (i < n && i - start < 3 && digits(s, i, 1) >= 0) i++;
    if (i === start || (i < n && digits(s, i, 1) >= 0)) return -1;
  }
  if (i === n) return i;
  if (s[i] === "Z") return i + 1 === n ? i : -1;
  if ((s[i] === "+" || s[i] === "-") && n === i + 6 && s[i + 3] === ":" && digits(s, i + 1, 2) >= 0) {
    return digits(s, i + 4, 2) >= 0 ? i : -1;
  }
  return -1;
}

/** -1, 0 or 1; `undefined` when the precisions make the answer unknown. */
export function compareDateTimes(a: unknown, b: unknown): number | undefined {
  // Same layout and the same zone text: the strings order like the values.
  if (typeof a === "string" && typeof b === "string" && a.length === b.length) {
    const za = zoneStart(a);
    if (za >= 0 && za === zoneStart(b) && a.endsWith(b.slice(za))) return a < b ? -1 : a > b ? 1 : 0;
  }
  return compareParsed(a, b);
}

function compareParsed(a: unknown, b: unknown): number | undefined {
  let pa = parse(a);
  let pb = parse(b);
  const hasTimeA = pa.fields.length > 3;
  const hasTimeB = pb.fields.length > 3;
  let fa = pa.fields;
  let fb = pb.fields;
  if (hasTimeA || hasTimeB) {
    if ((pa.tz === undefined) !== (pb.tz === undefined)) bail();
    if (pa.tz !== undefined && pb.tz !== undefined && offset(pa.tz) !== offset(pb.tz)) {
      if (pa.fields.length !== pb.fields.length) bail();
      fa = toUtcFields(pa);
      fb = toUtcFields(pb);
      pa = { fields: fa, tz: "Z" };
      pb = { fields: fb, tz: "Z" };
    }
  }
  const n = Math.min(fa.length, fb.length);
  for (let i = 0; i < n; i++) {
    const x = fa[i] as number;
    const y = fb[i] as number;
    if (x !== y) return x < y ? -1 : 1;
  }
  return fa.length === fb.length ? 0 : undefined;
}
