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
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || ms >= 60000) bail();
  // A time without seconds: the library's precision handling differs from the spec.
  if (fields.length === 5) bail();
  return { fields, tz: m[8] };
}

/** Offset in minutes of `Z`/`+hh:mm`. */
function offset(tz: string): number {
  if (tz === "Z") return 0;
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

/** -1, 0 or 1; `undefined` when the precisions make the answer unknown. */
export function compareDateTimes(a: unknown, b: unknown): number | undefined {
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
