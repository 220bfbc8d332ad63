/** How the dashboard writes times, durations and sizes. */

/** A date-time with its zone, as the admin API and FHIR write instants; a FHIR date ("1985-04-12") is not one. */
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})$/;

/**
 * The one way the dashboard writes a moment: ISO 8601 in UTC with milliseconds, as the admin API, the journal and
 * the request log write it, so a time on a page can be searched for and compared with theirs. Null when `value`
 * is not a date-time with a zone (a date, a partial date, text): that is shown as it is.
 *
 * @example
 *   instant("2026-11-27T13:23:50+04:00") // "2026-11-27T09:23:50.000Z"
 */
export function instant(value: string): string | null {
  if (!INSTANT.test(value)) return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

const UNITS: Array<[number, string]> = [
  [86_400_000, "d"],
  [3_600_000, "h"],
  [60_000, "min"],
  [1000, "s"],
];

/**
 * How long ago (or how far ahead) a moment is, in the largest whole unit: "3 min ago", "in 5 s", "just now".
 *
 * @example
 *   ago("2026-11-27T09:20:50Z", new Date("2026-11-27T09:23:50Z")) // "3 min ago"
 */
export function ago(value: string, now: Date = new Date()): string {
  const diff = now.getTime() - new Date(value).getTime();
  const size = Math.abs(diff);
  const [unit, name] = UNITS.find(([u]) => size >= u) ?? [1000, "s"];
  const n = Math.floor(size / unit);
  if (n === 0) return "just now";
  return diff >= 0 ? `${n} ${name} ago` : `in ${n} ${name}`;
}

export const ms = (value: number): string => (value < 10 ? `${value.toFixed(1)} ms` : `${Math.round(value)} ms`);

export function bytes(value: number): string {
  if (value < 1024) return `${value} B`;
  if (value < 1024 * 1024) return `${(value / 1024).toFixed(1)} KiB`;
  return `${(value / 1024 / 1024).toFixed(1)} MiB`;
}

export function duration(seconds: number): string {
  const d = Math.floor(seconds / 86400);
  const h = Math.floor((seconds % 86400) / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return [d ? `${d} d` : "", h ? `${h} h` : "", m ? `${m} min` : "", `${s} s`].filter(Boolean).join(" ");
}

/** A patient key as a path segment of the dashboard (patients/{key}). */
export const patientPath = (key: string): string => `patients/${encodeURIComponent(key)}`;
