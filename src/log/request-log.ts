import pino from "pino";
import type { SandboxEventMap, SandboxEvents } from "../events.js";
import type { CallRecord } from "../journal/call-record.js";
import { oneLineJson } from "../text/one-line-json.js";
import type { BannerEvent } from "./banner.js";
import { type CallEvent, callEvent } from "./call-event.js";
import { changeLine } from "./changes.js";
import { jsonLine } from "./json-line.js";
import type { LogFields, SandboxLogger } from "./logger.js";
import { type LogTime, prettyLine } from "./pretty.js";

export const LOG_FORMATS = ["pretty", "json"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];
/** From quietest to most talkative; each shows its own level and the ones before it. */
export const LOG_LEVELS = ["silent", "error", "warn", "info", "debug"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export { LOG_TIMES, type LogTime } from "./pretty.js";

export interface LogSettings {
  format: LogFormat;
  level: LogLevel;
  /** ANSI colours in the pretty format (a terminal). */
  colours: boolean;
  /** The pretty lines' time (default clock); JSON's `time` is always ISO 8601 in UTC. */
  time?: LogTime;
}

/** Somewhere to write text: a pino destination, a test's collector. */
export interface LogSink {
  write(text: string): unknown;
}

/** Info and debug go to `out`, warnings and errors to `err` (stdout and stderr in the CLI). */
export interface LogStreams {
  out: LogSink;
  err: LogSink;
}

/**
 * The request log: a line per recorded call and the sandbox's own messages,
 * through one pino logger, as JSON (one object per line) or pretty lines
 * formatted from the same objects.
 */
export interface RequestLog {
  /** The sandbox's own messages (createApp's `logger` dependency). */
  logger: SandboxLogger;
  /**
   * Logs a line per recorded call (unless `calls` is false: --quiet) and per change made by hand (a reset, rules
   * added, a workspace deleted, …) from now on, off the request path; returns the function that stops it.
   */
  observe(events: SandboxEvents, options?: { calls?: boolean }): () => void;
  /** The start banner: what is on. */
  banner(event: BannerEvent, headline: string): void;
  /** Keeps output back (until listening: nothing is printed before a failure to start) … */
  hold(): void;
  /** … and writes what was kept back. */
  release(): void;
  /** Writes the call lines not yet written; call before the process exits. */
  flush(): void;
}

/** pino's level numbers: info, and the one at and above which output goes to `err`. */
const INFO = 30;
const WARN = 40;
const METADATA = Symbol.for("pino.metadata");

/**
 * A pino destination that routes by level and formats: pino hands it the
 * serialized JSON and, as a metadata stream, the event object it came from.
 */
class Destination {
  readonly [METADATA] = true;
  lastLevel = 0;
  lastTime = "";
  lastMsg: string | undefined;
  lastObj: object = {};
  /** Text kept back while held, in order, with where it goes. */
  #held: Array<[LogSink, string]> = [];
  #holds = 0;

  constructor(
    private readonly settings: LogSettings,
    private readonly streams: LogStreams,
  ) {}

  write(json: string): void {
    const sink = this.lastLevel >= WARN ? this.streams.err : this.streams.out;
    this.#text(
      sink,
      this.settings.format === "json"
        ? // pino leaves U+2028 and U+2029 raw (a message id, an issue may hold them), where Node's readline ends a
          // line: escaped, so that each event stays one line.
          `${oneLineJson(json.trimEnd())}\n`
        : prettyLine(
            {
              level: this.lastLevel,
              time: this.lastTime.replaceAll('"', ""),
              msg: this.lastMsg,
              fields: this.lastObj as Record<string, unknown>,
            },
            this.settings.colours,
            this.settings.time,
          ),
    );
  }

  /**
   * The line of a recorded call (level info), made without pino: as JSON, as pino would have written its event
   * (jsonLine), or pretty.
   */
  call(event: CallEvent, time: Timestamp): void {
    this.#text(
      this.streams.out,
      this.settings.format === "json"
        ? `${oneLineJson(jsonLine("info", time.json(), event, summary(event)))}\n`
        : prettyLine(
            { level: INFO, time: time.iso(), msg: undefined, fields: event as unknown as Record<string, unknown> },
            this.settings.colours,
            this.settings.time,
          ),
    );
  }

  #text(sink: LogSink, text: string): void {
    if (this.#holds > 0) this.#held.push([sink, text]);
    else sink.write(text);
  }

  /** Keeps text back until as many release() calls; holds nest. */
  hold(): void {
    this.#holds++;
  }

  /** Writes what was kept back, in order: one write per run of text to the same sink. */
  release(): void {
    if (this.#holds === 0 || --this.#holds > 0) return;
    const held = this.#held.splice(0);
    let i = 0;
    while (i < held.length) {
      const [sink] = held[i] as [LogSink, string];
      let text = "";
      for (; i < held.length && held[i]?.[0] === sink; i++) text += held[i]?.[1];
      sink.write(text);
    }
  }
}

/** Now in ISO 8601: as pino's `time` member (`,"time":"…"`), and bare (the pretty lines'). */
interface Timestamp {
  json(): string;
  iso(): string;
}

/**
 * The log's timestamp, made once per millisecond: under load many lines share one, and formatting a Date is a
 * good part of a line's cost.
 */
function timestamp(): Timestamp {
  let last = -1;
  let iso = "";
  let json = "";
  const tick = () => {
    const now = Date.now();
    if (now !== last) {
      last = now;
      iso = new Date(now).toISOString();
      json = `,"time":"${iso}"`;
    }
  };
  return {
    json: () => {
      tick();
      return json;
    },
    iso: () => {
      tick();
      return iso;
    },
  };
}

/** A short human summary of a call, pino's `msg`: log viewers often show only it. */
function summary(e: CallEvent): string {
  const what = e.operation ?? `${e.method} ${e.path}`;
  const answer =
    e.status === null
      ? (e.fault ?? e.error ?? "no answer")
      : `${e.status}${e.responseCode ? ` ${e.responseCode}` : ""}`;
  return e.direction === "inbound"
    ? `IN ${what} ${answer} (${e.answeredBy})`
    : `OUT ${what} to ${e.pharmacy ?? e.target}, attempt ${e.attempt}: ${answer}`;
}

/**
 * Builds the request log.
 *
 * @example
 *   const log = createRequestLog({ format: "json", level: "info", colours: false }, { out, err });
 *   const sandbox = createApp(options, { logger: log.logger });
 *   log.observe(sandbox.sandboxEvents);
 */
export function createRequestLog(settings: LogSettings, streams: LogStreams): RequestLog {
  const destination = new Destination(settings, streams);
  const time = timestamp();
  const log = pino(
    {
      level: settings.level,
      base: undefined,
      timestamp: time.json,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );

  // Calls are queued as they are recorded and logged together on the next turn of the event loop, in one
  // write: the request path only pushes to an array. Their lines are written directly, not through pino (the
  // level is info: observe() listens only when it shows).
  const pending: CallRecord[] = [];
  let scheduled = false;
  const drain = () => {
    scheduled = false;
    destination.hold();
    for (const call of pending.splice(0)) destination.call(callEvent(call), time);
    destination.release();
  };
  const onCall = (call: CallRecord) => {
    pending.push(call);
    if (!scheduled) {
      scheduled = true;
      setImmediate(drain);
    }
  };

  // The sandbox's own messages come after the lines of the calls before them (a failed push after its attempts).
  const at = (level: "info" | "warn") => (message: string, fields?: LogFields) => {
    drain();
    if (fields === undefined) log[level](message);
    else log[level](fields, message);
  };
  return {
    logger: {
      info: at("info"),
      warn: at("warn"),
      error: (message, error) => {
        drain();
        if (error === undefined) log.error(message);
        else log.error({ err: error }, message);
      },
    },
    observe(events, { calls = true } = {}) {
      const onAdmin = (a: SandboxEventMap["admin:answered"][0]) =>
        log.debug({ event: "admin", ...a }, `admin ${a.method} ${a.path} ${a.status} (${a.durationMs} ms)`);
      // After the lines of the calls before it, as the sandbox's own messages.
      const onChange = (change: SandboxEventMap["sandbox:changed"][0]) => {
        const { fields, msg } = changeLine(change);
        drain();
        log.info(fields, msg);
      };
      // Not listening at a level that shows nothing: then the request path does not even queue.
      if (log.isLevelEnabled("info") && calls) events.on("call:recorded", onCall);
      if (log.isLevelEnabled("info")) events.on("sandbox:changed", onChange);
      if (log.isLevelEnabled("debug")) events.on("admin:answered", onAdmin);
      return () => {
        events.off("call:recorded", onCall);
        events.off("sandbox:changed", onChange);
        events.off("admin:answered", onAdmin);
      };
    },
    banner: (event, headline) => log.info(event, headline),
    hold: () => destination.hold(),
    release: () => destination.release(),
    flush: drain,
  };
}
