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
 * output serializes: calls as aligned single lines, the banner as a block,
 * anything else as `time LEVEL message`.
 *
 * @example
 *   prettyLine({ level: 30, time: "2026-01-15T09:30:00.000Z", msg: "call answered", fields: callEvent(call) }, false)
 *   // "13:30:00.000 IN  add-allergy                  200 ok              built-in   4.2 ms  #1\n"
 */
export function prettyLine(event: PrettyEvent, colours: boolean): string {
  const c = colours ? COLOURS : PLAIN;
  const time = c.dim(clock(event.time));
  if (event.fields.event === "call") return `${time} ${callLine(event.fields as unknown as CallEvent, c)}\n`;
  if (event.fields.event === "listening")
    return `${bannerText(event.fields as unknown as BannerEvent, event.msg ?? "", c)}\n`;
  const level = LEVEL_NAMES[event.level] ?? String(event.level);
  const label = event.level >= 50 ? c.red(level) : event.level >= 40 ? c.yellow(level) : c.dim(level);
  const err = event.fields.err as { stack?: string; message?: string } | undefined;
  const detail = err ? `\n${err.stack ?? err.message ?? String(err)}` : "";
  return `${time} ${label} ${event.msg ?? ""}${detail}\n`;
}

/** Local wall-clock time, HH:MM:SS.mmm. */
function clock(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const two = (n: number) => String(n).padStart(2, "0");
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, "0")}`;
}

function callLine(e: CallEvent, c: Palette): string {
  const inbound = e.direction === "inbound";
  const direction = inbound ? c.cyan("IN ") : c.magenta("OUT");
  const what = (e.operation ?? `${e.method} ${e.path}`).padEnd(27);
  const status = e.status === null ? c.red("---") : paintStatus(String(e.status), e.status, c);
  const code = (e.responseCode ?? "-").padEnd(15);
  const paintedCode =
    e.responseCode === "ok"
      ? c.green(code)
      : e.responseCode === null
        ? c.dim(code)
        : paintCode(code, e.responseCode, c);
  const by = inbound
    ? (e.rule ?? e.answeredBy ?? "built-in")
    : `${e.pharmacy ?? e.target ?? ""} attempt ${e.attempt ?? 1}`;
  // Padded as text, then painted: colour codes take no room on a terminal.
  const byColumn = (inbound && e.rule !== null ? c.bold(by) : by) + " ".repeat(Math.max(0, BY_WIDTH - by.length));
  const notes = [
    e.workspace !== undefined ? c.cyan(`[${e.workspace}]`) : "",
    e.fault !== undefined ? c.red(`fault ${e.fault}`) : "",
    e.duplicate ? c.yellow("duplicate") : "",
    e.error !== undefined ? c.red(e.error) : "",
    e.issue !== undefined ? `— ${e.issue}` : "",
  ].filter(Boolean);
  const duration = `${e.durationMs < 10 ? e.durationMs.toFixed(1) : Math.round(e.durationMs)} ms`;
  return [
    direction,
    what,
    status,
    paintedCode,
    byColumn,
    c.dim(duration.padStart(8)),
    c.dim(`#${e.callId}`),
    ...notes,
  ].join(" ");
}

/** Width of the "answered by" column: most rule names fit. */
const BY_WIDTH = 22;

function paintStatus(text: string, status: number, c: Palette): string {
  if (status >= 500) return c.red(text);
  if (status >= 400) return c.yellow(text);
  return c.green(text);
}

function paintCode(text: string, code: string, c: Palette): string {
  return code === "transient-error" ? c.yellow(text) : c.red(text);
}
