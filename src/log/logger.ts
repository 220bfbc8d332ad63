/** Fields of a structured log event, e.g. `{ event: "push-failed", order: "3" }`: JSON keys, pretty labels. */
export type LogFields = Record<string, unknown>;

/**
 * Where the sandbox's own messages go: the CLI's request log, the console
 * (the embedded default), or a test's array.
 *
 * @example
 *   createApp({}, { logger: { info: () => undefined, error: (m) => errors.push(m) } });
 */
export interface Logger {
  info(message: string, fields?: LogFields): void;
  /**
   * Trouble the sandbox survives and keeps serving through: a failed push, a refused scenario reload, a journal
   * file that cannot be written, dropped connections. Optional: without it, warnings go to `error`.
   */
  warn?(message: string, fields?: LogFields): void;
  /** A failure: a sandbox bug, background work that threw. */
  error(message: string, error?: unknown): void;
}

/** A logger with every level, as the sandbox's parts use it. */
export type SandboxLogger = Required<Logger>;

/** Fills in `warn` (as `error`) for a logger given without it. */
export function withWarn(logger: Logger): SandboxLogger {
  return {
    info: (message, fields) => logger.info(message, fields),
    warn: logger.warn ? (message, fields) => logger.warn?.(message, fields) : (message) => logger.error(message),
    error: (message, error) => logger.error(message, error),
  };
}

/** The embedded API's default: the console, as before the request log existed; no line per call. */
export const consoleLogger: SandboxLogger = {
  info: (message) => console.log(message),
  // On stderr as before warnings had their own level: console.error, which the embedded API has always used.
  warn: (message) => console.error(message),
  // console.error(m, undefined) would print "m undefined": most errors (a refused reload) carry no Error.
  error: (message, error) => (error === undefined ? console.error(message) : console.error(message, error)),
};
