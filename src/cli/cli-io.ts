import type { LogStreams } from "../log/request-log.js";

/** What a command reads and writes besides its arguments: the process's, or a test's. */
export interface CliIo {
  out(line: string): void;
  err(line: string): void;
  env: NodeJS.ProcessEnv;
  /** stdout is a terminal: the request log is pretty and coloured by default. */
  tty?: boolean;
  /** Where serve's request log writes (default: out and err, a line at a time). */
  logStreams?(): LogStreams;
}
