/** How the dashboard writes times, durations and sizes. */

const time = new Intl.DateTimeFormat(undefined, {
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
  fractionalSecondDigits: 3,
  hour12: false,
});
const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

/** 14:03:27.512 (and the full date in the title). */
export const clock = (iso: string): string => time.format(new Date(iso));

export const when = (iso: string | null | undefined): string => (iso ? dateTime.format(new Date(iso)) : "—");

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
