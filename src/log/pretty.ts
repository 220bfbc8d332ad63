import { type BannerEvent, bannerText } from "./banner.js";
import type { CallEvent } from "./call-event.js";
import { COLOURS, type Palette, PLAIN } from "./colours.js";

/** pino's level numbers. */
export const LEVEL_NAMES: Record<number, string> = {
  10: "TRACE",
  20: "DEBUG",
  30: "INFO",
  40: "WARN",
  50: "ERROR",
  60: "FATAL",
};

/** How the pretty lines give the time: the wall clock (HH:MM:SS.mmm), or ISO 8601 with the date and offset. */
export const LOG_TIMES = ["clock", "iso"] as const;
export type LogTime = (typeof LOG_TIMES)[number];

/** One pino event as a person reads it: a single line per call, a block for the start banner. */
export interface PrettyEvent {
  level: number;
  /** When it was logged (ISO 8601, as pino wrote it). */
  time: string;
  msg: string | undefined;
  fields: Record<string, unknown>;
}

/**
 * Formats pino's event objects for a terminal, from the same object the JSON
 * output serializes: calls as single lines in fixed columns, the banner as a
 * block, anything else as `time LEVEL message`.
 *
 * @example
 *   prettyLine({ level: 30, time: "2026-01-15T09:30:00.000Z", msg: "call answered", fields: callEvent(call) }, false)
 *   // "13:30:00.000 IN  add-allergy                   200 ok              built-in                       4.2 ms #1\n"
 */
export function prettyLine(event: PrettyEvent, colours: boolean, time: LogTime = "clock"): string {
  const c = colours ? COLOURS : PLAIN;
  const when = c.dim(time === "iso" ? isoLocal(event.time) : clock(event.time));
  if (event.fields.event === "call") return `${when} ${callLine(event.fields as unknown as CallEvent, c)}\n`;
  if (event.fields.event === "listening")
    return `${bannerText(event.fields as unknown as BannerEvent, event.msg ?? "", c)}\n`;
  const level = LEVEL_NAMES[event.level] ?? String(event.level);
  const label = event.level >= 50 ? c.red(level) : event.level >= 40 ? c.yellow(level) : c.dim(level);
  const err = event.fields.err as { stack?: string; message?: string } | undefined;
  const detail = err ? `\n${err.stack ?? err.message ?? String(err)}` : "";
  return `${when} ${label} ${ownLines(event.msg ?? "")}${detail}\n`;
}

const two = (n: number) => String(n).padStart(2, "0");

/** Local wall-clock time, HH:MM:SS.mmm. */
function clock(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return hms(d);
}

const hms = (d: Date) =>
  `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, "0")}`;

/**
 * Local time in ISO 8601 with the date and the offset, e.g. 2026-01-15T13:30:00.000+04:00: the offset always as
 * ±HH:MM (+00:00 for UTC, not Z), so that the column keeps its width when daylight saving time begins or ends.
 */
function isoLocal(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const east = -d.getTimezoneOffset();
  const offset = `${east < 0 ? "-" : "+"}${two(Math.floor(Math.abs(east) / 60))}:${two(Math.abs(east) % 60)}`;
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${hms(d)}${offset}`;
}

/**
 * The columns of a call's line and their widths: each value is padded to its width, or cut with an ellipsis when
 * longer, so that a long operation, path or rule name never shifts the columns after it. The operation column
 * fits the longest operation id (subscribe-order-notifications); the answered-by column the shipped rules' names.
 */
const WIDTH = { operation: 29, status: 3, code: 15, by: 28, duration: 8, callId: 8 } as const;

function callLine(e: CallEvent, c: Palette): string {
  const inbound = e.direction === "inbound";
  const direction = inbound ? c.cyan("IN ") : c.magenta("OUT");
  const what = inColumn(e.operation ?? `${e.method} ${e.path}`, WIDTH.operation);
  const status = e.status === null ? c.red("---") : paintStatus(inColumn(String(e.status), WIDTH.status), e.status, c);
  const code = inColumn(e.responseCode ?? "-", WIDTH.code);
  const paintedCode =
    e.responseCode === "ok"
      ? c.green(code)
      : e.responseCode === null
        ? c.dim(code)
        : paintCode(code, e.responseCode, c);
  // A push: the pharmacy (or the target) cut, never the attempt.
  const attempt = ` attempt ${e.attempt ?? 1}`;
  const by = inbound
    ? inColumn(e.rule ?? e.answeredBy ?? "built-in", WIDTH.by)
    : inColumn(`${cut(e.pharmacy ?? e.target ?? "", WIDTH.by - attempt.length)}${attempt}`, WIDTH.by);
  // Padded as text, then painted: colour codes take no room on a terminal.
  const byColumn = inbound && e.rule !== null ? c.bold(by) : by;
  const notes = [
    e.workspace !== undefined ? c.cyan(`[${e.workspace}]`) : "",
    // A fault said once; the error a fault that sent nothing carries is its own name again.
    e.fault !== undefined ? c.red(`scripted fault: ${e.fault}`) : e.error !== undefined ? c.red(oneLine(e.error)) : "",
    e.duplicate ? c.yellow("duplicate") : "",
    // A rule's diagnostics are a tenant's text: one line, so it cannot print a call line of its own.
    e.issue !== undefined ? `— ${oneLine(e.issue)}` : "",
  ].filter(Boolean);
  // The call id is never cut (it is what GET /__admin/calls/{id} takes): an id past 7 digits widens its column.
  return [
    direction,
    what,
    status,
    paintedCode,
    byColumn,
    c.dim(inColumn(duration(e.durationMs), WIDTH.duration, "start")),
    ...(notes.length > 0 ? [c.dim(`#${e.callId}`.padEnd(WIDTH.callId)), ...notes] : [c.dim(`#${e.callId}`)]),
  ].join(" ");
}

/** 4.2 ms, 36 ms, 12345 ms; from 100 s on, whole seconds: the column holds it. */
function duration(ms: number): string {
  if (!(ms >= 0)) return "- ms";
  if (ms < 10) return `${ms.toFixed(1)} ms`;
  if (ms < 100_000) return `${Math.round(ms)} ms`;
  return `${Math.round(ms / 1000)} s`;
}

/** Characters that would break a line or move the cursor, shown as U+FFFD in a column. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is its purpose
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/** Text kept on its line: every control character (line breaks, escape sequences) shown as U+FFFD. */
export function oneLine(text: string): string {
  return text.replace(CONTROL, "\ufffd");
}

/**
 * A message's own line breaks kept, its later lines indented, so text a message carries from a tenant (a licence,
 * a rule's words) cannot start a line that reads as the sandbox's own; other control characters as U+FFFD.
 */
function ownLines(text: string): string {
  return text
    .split(/\r\n|\n|\r/)
    .map(oneLine)
    .join("\n  ");
}

/** Text cut to `width` characters (code points), its last one an ellipsis when it was longer. */
function cut(text: string, width: number): string {
  const clean = text.replace(CONTROL, "\ufffd");
  // Most values are short ASCII: no need to split them into code points.
  if (clean.length <= width) return clean;
  const points = Array.from(clean);
  return points.length <= width ? clean : `${points.slice(0, Math.max(0, width - 1)).join("")}…`;
}

/** Text in a column of `width`: cut with an ellipsis when longer, else padded (at the end, or at the start). */
function inColumn(text: string, width: number, pad: "end" | "start" = "end"): string {
  const cutText = cut(text, width);
  const room = width - Array.from(cutText).length;
  if (room <= 0) return cutText;
  return pad === "end" ? cutText + " ".repeat(room) : " ".repeat(room) + cutText;
}

function paintStatus(text: string, status: number, c: Palette): string {
  if (status >= 500) return c.red(text);
  if (status >= 400) return c.yellow(text);
  return c.green(text);
}

function paintCode(text: string, code: string, c: Palette): string {
  return code === "transient-error" ? c.yellow(text) : c.red(text);
}
