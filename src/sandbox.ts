import type { Hono } from "hono";
import { createApp, type SandboxApp } from "./app.js";
import type { SandboxOptions } from "./config/options.js";
import type { ServerLimits } from "./config/server-limits.js";
import { formatProblem } from "./config/yaml-file.js";
import type { SandboxDeps } from "./deps.js";
import { callView } from "./journal/call-view.js";
import type { CallFilter } from "./journal/journal.js";
import { compileExpectation, type Expectation, expectationSchema, type Verification } from "./journal/verify.js";
import { waitUntil } from "./journal/wait.js";
import { createRequestLog, type LogFormat, type LogLevel, type LogTime } from "./log/request-log.js";
import { type OperationNames, operationNames } from "./routing/operation-names.js";
import { startServer } from "./server/start-server.js";

export interface SandboxInit extends Partial<SandboxOptions> {
  /** Serve on a real port (default true); false gives an in-process sandbox: use `app.fetch` / `app.request`. */
  listen?: boolean;
  /** Port to listen on (default 0: any free port). */
  port?: number;
  /** Interface to bind (default 127.0.0.1). */
  host?: string;
  /** Server timeouts, connection cap and shutdown grace (default the CLI's, but a 1 s shutdown grace). */
  limits?: Partial<ServerLimits>;
  /** Replace time, ids, randomness, outbound fetch or logging. */
  deps?: Partial<SandboxDeps>;
  /**
   * The CLI's request log on this process's stdout and stderr — a line per call, and the sandbox's messages —
   * instead of `deps.logger`. Off by default: a test suite's output stays its own.
   */
  log?: { format?: LogFormat; level?: LogLevel; colours?: boolean; time?: LogTime };
}

/** A test suite's close() should not wait long for a call it abandoned. */
const EMBEDDED_SHUTDOWN_GRACE_MS = 1000;

export type CallView = ReturnType<typeof callView>;

/** A sandbox for a test suite: one handle for the URL, the journal, expectations, rules and shutdown. */
export interface Sandbox {
  /** Base URL, e.g. http://127.0.0.1:41237 ("" when not listening). */
  url: string;
  /** The Hono app: `app.request(path, init)` or `app.fetch(request)` work without a port. */
  app: Hono;
  /** Recorded calls, oldest first (the same filters as GET /__admin/calls; throws on an unknown operation). */
  calls(filter?: CallFilter): CallView[];
  /** Checks an expectation against the journal now (throws on a malformed one, or an unknown operation). */
  verify(expectation: Expectation): Verification;
  /** Resolves as soon as the expectation holds, or with ok: false after `timeoutMs` (default 5000) or on close(). */
  waitFor(expectation: Expectation, timeoutMs?: number): Promise<Verification>;
  /** State back to fixtures, journal cleared, rule counters reset. */
  reset(): void;
  /** Adds scenario rules (a YAML/JSON document, or its object form) ahead of the folder's; returns their ids. */
  addRules(scenario: string | object): string[];
  /**
   * Stops accepting connections, lets calls in flight finish (up to the shutdown grace), then stops timers and
   * watchers and closes the journal file; pending waitFor calls resolve at once. Safe to call twice.
   */
  close(): Promise<void>;
  /** The parts underneath, for what the handle does not cover. */
  internals: SandboxApp;
}

function compiled(expectation: Expectation, names: OperationNames) {
  const parsed = expectationSchema.safeParse(expectation);
  if (!parsed.success) throw new Error(`bad expectation: ${parsed.error.issues.map((i) => i.message).join("; ")}`);
  const result = compileExpectation(parsed.data, names);
  if (!result.ok) throw new Error(`bad expectation: ${result.reason}`);
  return result.verify;
}

/**
 * Starts a sandbox for a test suite.
 *
 * @example
 *   const sandbox = await createSandbox({ scenarios: "./scenarios" });
 *   await myClient(sandbox.url).addAllergy(...);
 *   expect(sandbox.verify({ operation: "add-allergy", count: 1 }).ok).toBe(true);
 *   await sandbox.close();
 */
export async function createSandbox(init: SandboxInit = {}): Promise<Sandbox> {
  const { listen = true, port = 0, host = "127.0.0.1", limits, deps, log: logSettings, ...options } = init;
  const log = logSettings
    ? createRequestLog(
        {
          format: logSettings.format ?? (process.stdout.isTTY ? "pretty" : "json"),
          level: logSettings.level ?? "info",
          colours: logSettings.colours ?? process.stdout.isTTY === true,
          time: logSettings.time ?? "clock",
        },
        { out: process.stdout, err: process.stderr },
      )
    : undefined;
  const internals = createApp(options, log ? { ...deps, logger: log.logger } : deps);
  const stopLogging = log?.observe(internals.sandboxEvents);
  // A port in use rejects here: stop what createApp started (watcher, scheduled pushes) before passing it on.
  const running = listen
    ? await startServer(internals, {
        port,
        host,
        limits: { shutdownGraceMs: EMBEDDED_SHUTDOWN_GRACE_MS, ...limits },
      }).catch((error: unknown) => {
        internals.close();
        throw error;
      })
    : undefined;
  // Served, it resumed what a state file had due; in-process only, it does so now.
  if (!running) internals.resume();
  // A test suite's sandbox is the default workspace.
  const { journal, events } = internals.workspace;
  const names = operationNames(internals.catalogue, { pushes: true });
  // Aborted by close(): a pending waitFor resolves then instead of holding its timer (and the process) open.
  const closing = new AbortController();
  let closed: Promise<void> | undefined;
  return {
    url: running?.url ?? "",
    app: internals.app,
    internals,
    calls(filter) {
      if (filter?.operation === undefined) return journal.list(filter).map(callView);
      const resolved = names.resolve(filter.operation);
      if (!resolved.ok) throw new Error(`bad call filter: ${resolved.problem}`);
      return journal.list({ ...filter, operation: resolved.id }).map(callView);
    },
    verify: (expectation) => compiled(expectation, names).verify(journal.list()),
    // async: a malformed expectation rejects the promise; the waiter still subscribes before this returns.
    async waitFor(expectation, timeoutMs = 5000) {
      return waitUntil(events, compiled(expectation, names), () => journal.list(), timeoutMs, closing.signal);
    },
    reset: internals.reset,
    addRules(scenario) {
      const added = internals.workspace.addScenario(typeof scenario === "string" ? scenario : JSON.stringify(scenario));
      if (added.refused) throw new Error(`rules not added: ${added.refused.diagnostics}`);
      if (!added.ok) throw new Error(`invalid rules:\n${added.problems.map(formatProblem).join("\n")}`);
      return added.scenario.rules.map((r) => r.id);
    },
    close() {
      // Idempotent: afterAll hooks and error paths may both close.
      // As the CLI stops: no new connections, calls in flight finish (and are journaled), then the rest.
      closed ??= (async () => {
        closing.abort();
        await running?.close();
        internals.close();
        log?.flush();
        stopLogging?.();
      })();
      return closed;
    },
  };
}
