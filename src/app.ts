import { randomUUID } from "node:crypto";
import { watch } from "node:fs";
import { Hono } from "hono";
import { adminRoutes } from "./admin/admin-routes.js";
import { LiveEvents } from "./admin/live-events.js";
import { createAuth } from "./auth/auth.js";
import { DEFAULT_WORKSPACE } from "./auth/workspace-name.js";
import { DEFAULT_OPTIONS, normaliseBasePath, type SandboxOptions } from "./config/options.js";
import type { ServerLimits } from "./config/server-limits.js";
import { formatProblem } from "./config/yaml-file.js";
import { SandboxEvents } from "./events.js";
import { issue } from "./fhir/outcome.js";
import { builtInHandlers } from "./handlers/built-in.js";
import { drugOrderHandlers } from "./handlers/drug-orders.js";
import type { HandlerTable } from "./handlers/handler.js";
import { mountCapabilityRoutes } from "./http/capability-routes.js";
import { cors } from "./http/cors.js";
import { SimulatedNetworkFault } from "./http/faults.js";
import { type EdgeEnv, outcomeResponse } from "./http/fhir-response.js";
import { mountMessageRoutes } from "./http/message-routes.js";
import { recordCalls } from "./http/record-calls.js";
import { Journal } from "./journal/journal.js";
import { JournalFile } from "./journal/journal-file.js";
import { Redaction } from "./journal/redact.js";
import { consoleLogger, type Logger, type SandboxLogger, withWarn } from "./log/logger.js";
import { OrderWorkflow } from "./orders/order-workflow.js";
import { PharmacyRegistry } from "./orders/pharmacy-registry.js";
import { ScheduledPushes } from "./orders/scheduled-pushes.js";
import { createMessagePipeline, type StoredAnswer } from "./pipeline/process-message.js";
import { ReplayCache } from "./pipeline/replay-cache.js";
import { PushDispatcher } from "./push/dispatcher.js";
import { buildCatalogue, type Catalogue, loadOperationsFile } from "./routing/catalogue.js";
import { ALTERNATE_PATH, STANDARD_PATH } from "./routing/default-operations.js";
import { operationNames } from "./routing/operation-names.js";
import { applyFixtures, rulePatientKeys } from "./scenarios/fixtures.js";
import type { LoadedScenario } from "./scenarios/load.js";
import { Scenarios } from "./scenarios/scenarios.js";
import { SandboxStore } from "./store/sandbox-store.js";
import { landingPage } from "./ui/ui-routes.js";
import { VERSION } from "./version.js";

export type { Logger } from "./log/logger.js";

/** Everything from outside the sandbox: time, ids, randomness, outbound HTTP, logging. Replace any of them in tests. */
export interface SandboxDeps {
  now(): Date;
  monotonic(): number;
  newId(): string;
  /** Uniform in [0, 1): delay ranges, retry jitter. */
  random(): number;
  /** Outbound HTTP for pushes to pharmacies. */
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
  fetch: (input, init) => fetch(input, init),
  logger: consoleLogger,
  handlers: {},
  fsWatch: watch,
});

/** Most processed answers remembered for resent message ids. */
const REPLAY_LIMIT = 2_000;

/** Budget of body bytes the journal holds, whatever the call count, so --journal-limit calls of large profiles stay within memory. */
const JOURNAL_MAX_BYTES = 96 * 1024 * 1024;

export interface SandboxApp {
  /** The fetch-style app: `app.request(...)` in tests, `app.fetch` for servers. */
  app: Hono;
  journal: Journal;
  events: SandboxEvents;
  catalogue: Catalogue;
  store: SandboxStore;
  scenarios: Scenarios;
  pharmacies: PharmacyRegistry;
  options: SandboxOptions;
  /** State back to fixtures, journal and counters cleared. */
  reset(): void;
  orders: OrderWorkflow;
  /** Loads the fixtures of scenarios added at run time. */
  applyFixtures(scenarios: readonly LoadedScenario[]): void;
  /**
   * Told by the server once it listens: its URL (which pushes name as their source, unless
   * --public-url fixed it) and its limits (shown by GET /__admin/health).
   */
  served(server: { url: string; limits: ServerLimits }): void;
  /** Where the sandbox's messages go (deps.logger, with `warn` filled in). */
  logger: SandboxLogger;
  /** Ends the answers that last until the client goes (the dashboard's event streams), so that a stop need not wait for them. */
  endStreams(): void;
  /** Stops watching the scenarios folder, scheduled pushes and order timers, then flushes and closes the journal file. */
  close(): void;
}

/** Simulated OAuth2 when --auth oauth2 (CONTRACT §13), with the scopes the catalogue uses. */
function oauth2(options: SandboxOptions, catalogue: Catalogue, deps: SandboxDeps) {
  if (options.auth !== "oauth2") return undefined;
  if (!options.clientsFile) throw new Error("auth oauth2 needs a clients file (--clients FILE)");
  return createAuth(
    {
      clientsFile: options.clientsFile,
      tokenTtlMs: options.tokenTtlMs,
      tokenKeyFile: options.tokenKeyFile,
      publicUrl: options.publicUrl,
      basePath: options.basePath,
      maxBody: options.maxBody,
      scopes: [...new Set(catalogue.operations.map((op) => op.scope))],
    },
    deps,
  );
}

/**
 * Builds the sandbox as a Hono app from options and dependencies; the Node
 * server (ports, signals) is a thin shell around it.
 *
 * @example
 *   const { app } = createApp({ businessErrors: "http" });
 *   const res = await app.request("/__admin/health");
 */
export function createApp(
  overrides: Partial<SandboxOptions> = {},
  depOverrides: Partial<SandboxDeps> = {},
): SandboxApp {
  const options: SandboxOptions = { ...DEFAULT_OPTIONS, ...overrides };
  options.basePath = normaliseBasePath(options.basePath);
  const deps: SandboxDeps = { ...defaultDeps(), ...depOverrides };
  const logger = withWarn(deps.logger);
  const startedAt = deps.now();
  if (options.corsAdmin && (options.cors.length === 0 || options.adminToken === undefined)) {
    throw new Error(
      "corsAdmin needs cors origins and an adminToken: the admin API is opened to browsers only behind a token",
    );
  }

  const events = new SandboxEvents();
  const catalogue = buildCatalogue(options.operationsFile ? loadOperationsFile(options.operationsFile) : undefined);
  const auth = oauth2(options, catalogue, deps);
  // Resends come soon after the original: the last few thousand answers cover them, at a fraction of the memory.
  const replays = new ReplayCache<StoredAnswer>(Math.min(options.journalLimit, REPLAY_LIMIT));
  const store = new SandboxStore(
    { seed: options.seed, emiratesIdSystem: options.emiratesIdSystem, now: deps.now, newId: deps.newId },
    { patients: options.maxPatients, recordsPerPatient: options.maxRecordsPerPatient },
  );
  const pharmacies = new PharmacyRegistry();
  const scenarios = new Scenarios(options.scenarios, {
    now: deps.now,
    operations: operationNames(catalogue),
    maxFileBytes: options.maxScenarioFile,
    events: {
      onLoad: ({ ok, problems }) => {
        if (ok) store.pinKeys(rulePatientKeys(scenarios.scenarios));
        // The first load is told by whoever started the sandbox (the CLI's banner); reloads are logged.
        if (started && ok) {
          const { files, rules } = scenarios.view();
          logger.info(`scenarios loaded from ${options.scenarios}: ${rules.length} rules`, {
            event: "scenarios-loaded",
            source: options.scenarios,
            files: files.length,
            rules: rules.length,
          });
        } else if (started) {
          const lines = problems.map(formatProblem);
          logger.warn(`scenarios not reloaded, the previous set keeps serving:\n${lines.join("\n")}`, {
            event: "scenarios-refused",
            source: options.scenarios,
            problems: lines,
          });
        }
        events.emit("scenarios:loaded", { ok, problems });
      },
      onWatchError: (message) => logger.warn(message, { event: "scenarios-watch" }),
    },
    fsWatch: deps.fsWatch,
  });
  let started = false;
  const loaded = scenarios.reload();
  if (!loaded.ok) throw new Error(`invalid scenario files:\n${loaded.problems.map(formatProblem).join("\n")}`);
  started = true;
  // Opened once nothing else can fail to start, so a refused start leaves no file open.
  const journalFile = options.journalFile
    ? new JournalFile(options.journalFile, {
        events,
        highestIdIssued: (): number => journal.highestIdIssued,
        warn: (message) => logger.warn(message, { event: "journal-file", path: options.journalFile }),
      })
    : undefined;
  const journal = new Journal(
    { maxCalls: options.journalLimit, maxBytes: JOURNAL_MAX_BYTES },
    events,
    journalFile?.nextId ?? 1,
    new Redaction(options.redactHeaders),
  );
  const fixturesOf = (list: readonly LoadedScenario[]) => {
    // Runtime scenarios (POST /__admin/scenarios) may name patients too; reset cleared the pins.
    store.pinKeys(rulePatientKeys(scenarios.scenarios));
    applyFixtures(list, { store, pharmacies, seed: options.seed, emiratesIdSystem: options.emiratesIdSystem });
  };
  const loadFixtures = () => fixturesOf(scenarios.fixtureOrder);
  loadFixtures();
  let publicUrl = options.publicUrl ?? "http://localhost:8080";
  let serverLimits: ServerLimits | null = null;
  const dispatcher = new PushDispatcher(
    {
      timeoutMs: options.pushTimeoutMs,
      attempts: options.pushAttempts,
      concurrency: options.pushConcurrency,
      backoffMs: options.pushBackoffMs,
      allow: options.pushAllow,
    },
    { fetch: deps.fetch, events, now: deps.now, monotonic: deps.monotonic, random: deps.random },
  );
  const workflow = new OrderWorkflow({
    seed: options.seed,
    emiratesIdSystem: options.emiratesIdSystem,
    confirmDeadlineMs: options.confirmDeadlineMs,
    allocation: options.allocation,
    now: deps.now,
    newId: deps.newId,
    store,
    pharmacies,
    dispatcher,
    events,
    logger,
    publicUrl: () => publicUrl,
  });
  const pushes = new ScheduledPushes(workflow, logger);
  const handlers: HandlerTable = {
    ...builtInHandlers,
    ...drugOrderHandlers({
      workflow,
      pharmacies,
      pushAllow: options.pushAllow,
      onSubscribed: (licence) => pushes.subscribed(licence),
    }),
    ...deps.handlers,
  };
  const pipeline = createMessagePipeline(
    { ...options, proxy: options.proxy !== undefined },
    { ...deps, handlers, catalogue, replays, store, scenarios },
  );

  const reset = () => {
    pushes.stop();
    workflow.clear();
    journal.clear();
    replays.clear();
    store.clear();
    pharmacies.clear();
    loadFixtures();
    scenarios.resetCounters();
    pushes.start(scenarios.scenarios);
  };
  pushes.start(scenarios.scenarios);
  const stopWatching = options.watch ? scenarios.watch() : () => undefined;

  const live = new LiveEvents(events);
  const app = new Hono<EdgeEnv>();
  // Before every route, the admin API's included, so that a preflight never meets a route or a token check.
  if (options.cors.length > 0) app.use("*", cors({ origins: options.cors, admin: options.corsAdmin }));
  app.use("/__admin/*", async (c, next) => {
    if (events.listenerCount("admin:answered") === 0) return next();
    const started = deps.monotonic();
    await next();
    const durationMs = Math.round((deps.monotonic() - started) * 1000) / 1000;
    events.emit("admin:answered", { method: c.req.method, path: c.req.path, status: c.res.status, durationMs });
  });
  app.route(
    "/__admin",
    adminRoutes({
      catalogue,
      journal,
      events,
      store,
      scenarios,
      pharmacies,
      applyFixtures: fixturesOf,
      workflow,
      basePath: options.basePath,
      maxBody: options.maxBody,
      adminToken: options.adminToken,
      ...(auth ? { workspaceAdminToken: auth.workspaceAdminToken } : {}),
      version: VERSION,
      startedAt,
      now: deps.now,
      newId: deps.newId,
      reset,
      health: () => ({ server: serverLimits, journalFile: journalFile?.status() ?? null }),
      live,
      resend: async (request) => app.fetch(request),
      pushes: () => dispatcher.stats(),
      allocation: options.allocation,
    }),
  );
  // Before the recorder: the landing page is not a call to the exchange.
  app.get("/", (c) =>
    landingPage(c, {
      basePath: options.basePath,
      version: VERSION,
      tokenRequired: options.adminToken !== undefined || auth?.workspaceAdminToken(DEFAULT_WORKSPACE) !== undefined,
    }),
  );
  const record = recordCalls({
    events,
    now: deps.now,
    monotonic: deps.monotonic,
    reserveId: () => journal.reserveId(),
  });
  app.use("*", async (c, next) => (c.req.path.startsWith("/__admin/") ? next() : record(c, next)));
  auth?.mount(app);
  mountMessageRoutes(app, catalogue.paths, options, pipeline, deps.fetch, auth?.authenticate);
  mountCapabilityRoutes(app, {
    basePath: options.basePath,
    catalogue,
    publishedAt: startedAt,
    ...(auth ? { tokenEndpoint: (url: string) => auth.endpoints(url).tokenEndpoint } : {}),
  });

  app.notFound((c) =>
    outcomeResponse(c, 404, [
      issue(
        "not-found",
        `Nothing is served at ${c.req.method} ${c.req.path}. Messages go to POST ${options.basePath}${STANDARD_PATH} (remove-allergy: POST ${options.basePath}${ALTERNATE_PATH}); what is served: GET ${options.basePath}/uae-fhir/r4/metadata; the admin API is under /__admin.`,
      ),
    ]),
  );
  app.onError((error, c) => {
    // In-process, a scripted network fault rejects app.request as fetch would.
    if (error instanceof SimulatedNetworkFault) throw error;
    logger.error(`unhandled error on ${c.req.method} ${c.req.path}`, error);
    return outcomeResponse(c, 500, [
      issue(
        "exception",
        "The sandbox failed to process this request; this is a sandbox bug, please report it.",
        undefined,
        "fatal",
      ),
    ]);
  });

  return {
    app: app as unknown as Hono,
    journal,
    events,
    catalogue,
    store,
    scenarios,
    pharmacies,
    options,
    orders: workflow,
    reset,
    applyFixtures: fixturesOf,
    served: (server) => {
      if (options.publicUrl === undefined) publicUrl = server.url;
      serverLimits = server.limits;
    },
    logger,
    endStreams: () => live.close(),
    close: () => {
      live.close();
      stopWatching();
      pushes.stop();
      workflow.clear();
      // Last: whatever ended before this is written.
      journalFile?.close();
    },
  };
}
