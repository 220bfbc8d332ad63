import { randomUUID } from "node:crypto";
import { watch } from "node:fs";
import type { HandlerTable } from "./handlers/handler.js";
import { consoleLogger, type Logger } from "./log/logger.js";
import { outboundFetch } from "./push/outbound-fetch.js";

// Below everything that uses them: the workspace, the edge and the app take these, and none of them imports app.ts.
/** Everything from outside the sandbox: time, ids, randomness, outbound HTTP, logging. Replace any of them in tests. */
export interface SandboxDeps {
  now(): Date;
  monotonic(): number;
  newId(): string;
  /** Uniform in [0, 1): delay ranges, retry jitter. */
  random(): number;
  /**
   * Outbound HTTP: pushes to pharmacies, --proxy, a client's jwksUrl. The default is fetch, except that a push
   * under --auth oauth2 goes to the address its check gave (see outboundFetch); a replacement that ignores
   * `connectTo` still gets the check of literal addresses, not of resolved names.
   */
  fetch: typeof fetch;
  logger: Logger;
  /** Handlers that replace built-in ones, by operation id. */
  handlers: HandlerTable;
  /** fs.watch, for the scenarios folder (`--watch`). */
  fsWatch: typeof watch;
}

export const defaultDeps = (): SandboxDeps => ({
  now: () => new Date(),
  monotonic: () => performance.now(),
  newId: () => randomUUID(),
  random: Math.random,
  fetch: outboundFetch,
  logger: consoleLogger,
  handlers: {},
  fsWatch: watch,
});
