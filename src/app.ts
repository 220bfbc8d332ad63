import { Hono } from "hono";
import { adminRoutes } from "./admin/admin-routes.js";
import { type AdminTokens, adminRefusal } from "./admin/auth.js";
import { LiveEvents } from "./admin/live-events.js";
import { type AuthDeps, type ClientsReload, createAuth } from "./auth/auth.js";
import { isAuthPath } from "./auth/discovery.js";
import { DEFAULT_FAILURE_LIMIT, FailureLimit } from "./auth/failure-limit.js";
import { DEFAULT_OPTIONS, normaliseBasePath, type SandboxOptions } from "./config/options.js";
import type { ServerLimits } from "./config/server-limits.js";
import { formatProblem } from "./config/yaml-file.js";
import { STEP_RUNS } from "./conformance/kinds/index.js";
import { createConformanceSessions } from "./conformance/sessions.js";
import type { ConformanceSessions } from "./conformance/sessions-api.js";
import { shippedPlans } from "./conformance/shipped-plans.js";
import { defaultDeps, type SandboxDeps } from "./deps.js";
import { SandboxEvents } from "./events.js";
import { issue } from "./fhir/outcome.js";
import { answerHeaders } from "./http/answer-headers.js";
import { adminWriteGuard, hostCheck, hostGuard } from "./http/browser-guard.js";
import { mountCapabilityRoutes } from "./http/capability-routes.js";
import { cors, corsPolicy } from "./http/cors.js";
import type { EdgeEnv } from "./http/edge-env.js";
import { SimulatedNetworkFault } from "./http/faults.js";
import { outcomeResponse } from "./http/fhir-response.js";
import { mountMessageRoutes } from "./http/message-routes.js";
import { type NodeMessages, nodeMessages } from "./http/node-message.js";
import { isReadPath, mountReadRoutes } from "./http/read-routes.js";
import { type RecorderDeps, recordCalls } from "./http/record-calls.js";
import { fromThisMachine, remoteAddress } from "./http/remote-address.js";
import { chooseWorkspace, routedPath, type WorkspaceChoiceDeps } from "./http/workspace-choice.js";
import { CallIds } from "./journal/call-ids.js";
import type { Journal } from "./journal/journal.js";
import { JournalFile } from "./journal/journal-file.js";
import { Redaction } from "./journal/redact.js";
import { REFUSED_LOG_LIMITS, RefusedLog } from "./journal/refused-log.js";
import { type SandboxLogger, withWarn } from "./log/logger.js";
import type { OrderWorkflow } from "./orders/order-workflow.js";
import type { PharmacyRegistry } from "./orders/pharmacy-registry.js";
import { PushDispatcher } from "./push/dispatcher.js";
import { pushAllowProblems } from "./push/push-allow.js";
import { PushTls } from "./push/push-tls.js";
import { ResponseDeliveries, sendingShare } from "./push/response-delivery.js";
import { buildCatalogue, type Catalogue, loadOperationsFile } from "./routing/catalogue.js";
import { ALTERNATE_PATH, STANDARD_PATH } from "./routing/default-operations.js";
import { operationNames } from "./routing/operation-names.js";
import type { LoadedScenario } from "./scenarios/load.js";
import { ScenarioFolder } from "./scenarios/scenario-folder.js";
import type { Scenarios } from "./scenarios/scenarios.js";
import { StateFile, StateWriteError } from "./state/state-file.js";
import { ProfileCache } from "./store/profile-cache.js";
import { RecordInterner } from "./store/record-interner.js";
import type { SandboxStore } from "./store/sandbox-store.js";
import { counted } from "./text/plural.js";
import { landingPage } from "./ui/ui-routes.js";
import { VERSION } from "./version.js";
import { RETRY_AFTER_S, unsavedIssue } from "./workspace/unsaved-answer.js";
import { createWorkspace, type Workspace, type WorkspaceShared } from "./workspace/workspace.js";
import { Workspaces } from "./workspace/workspaces.js";

export { defaultDeps, type SandboxDeps } from "./deps.js";
export type { Logger } from "./log/logger.js";

export interface SandboxApp {
  /** The fetch-style app: `app.request(...)` in tests, `app.fetch` for servers. */
  app: Hono;
  /**
   * The message paths on plain node:http, the same edge as the app's called without Hono (startServer takes messages
   * there, the rest to `app`); undefined with --proxy, whose forwarding only the app does.
   */
  node: NodeMessages | undefined;
  /** Every workspace's recorded calls and order changes (each call names its workspace), and scenario loads. */
  sandboxEvents: SandboxEvents;
  catalogue: Catalogue;
  options: SandboxOptions;
  /** The workspaces (CONTRACT §13): the default one, and those made as requests name them. */
  workspaces: Workspaces;
  /** The shared scenario files. */
  folder: ScenarioFolder;
  /** The default workspace: what a single-user sandbox is. The fields below are its parts. */
  workspace: Workspace;
  events: SandboxEvents;
  journal: Journal;
  store: SandboxStore;
  /** The default workspace's rules: the files' and those it added at run time, with its hit counts. */
  scenarios: Scenarios;
  pharmacies: PharmacyRegistry;
  orders: OrderWorkflow;
  /** The default workspace's state back to fixtures, journal and counters cleared. */
  reset(): void;
  /** Loads the fixtures of scenarios added at run time (into the default workspace). */
  applyFixtures(scenarios: readonly LoadedScenario[]): void;
  /**
   * Told by the server once it listens: its URL (which pushes name as their source, unless
   * --public-url fixed it) and its limits (shown by GET /__admin/health).
   */
  served(server: { url: string; limits: ServerLimits }): void;
  /**
   * Does what the state file's orders had due when the sandbox stopped (pushes not delivered yet, deadlines that
   * passed meanwhile): served() does, once the sandbox listens; a sandbox used in-process, never served, calls it.
   */
  resume(): void;
  /** Where the sandbox's messages go (deps.logger, with `warn` filled in). */
  logger: SandboxLogger;
  /** The conformance sessions (the admin API's, the CLI's `conformance run`): at most one per workspace. */
  conformance: ConformanceSessions;
  /** Reads the clients file again (--auth oauth2; undefined without): SIGHUP and POST /__admin/clients/reload. */
  reloadClients(): ClientsReload | undefined;
  /** Ends the answers that last until the client goes (the dashboard's event streams), so that a stop need not wait for them. */
  endStreams(): void;
  /**
   * Stops watching the scenarios folder, every workspace's scheduled pushes and order timers, then flushes and
   * closes the journal file.
   */
  close(): void;
}

/** The state file's sandbox-wide row of the highest call id handed out. */
const HIGHEST_CALL_ID = "highestCallId";

/** How often idle workspaces are looked for when no request comes (requests look too). */
const SWEEP_INTERVAL_MS = 60_000;

/** Simulated OAuth2 when --auth oauth2 (CONTRACT §13), with the scopes the catalogue uses. */
function oauth2(options: SandboxOptions, catalogue: Catalogue, deps: AuthDeps) {
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
      mutualTls: options.mutualTls,
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
  const badPushAllow = pushAllowProblems(options.pushAllow);
  if (badPushAllow.length > 0) throw new Error(badPushAllow.join("\n"));
  const pushTls = PushTls.load({
    clientCert: options.pushClientCert,
    clientKey: options.pushClientKey,
    clientCerts: options.pushClientCerts,
    ca: options.pushCa,
    serverCert: options.tlsCertFile,
  });
  if (options.corsAdmin && (options.cors.length === 0 || options.adminToken === undefined)) {
    throw new Error(
      "corsAdmin needs cors origins and an adminToken: the admin API is opened to browsers only behind a token",
    );
  }

  if (options.basePath === "/w" || options.basePath.startsWith("/w/")) {
    throw new Error(`basePath ${options.basePath} would be read as a workspace prefix /w/{workspace}; choose another`);
  }

  // Sandbox-wide and read-only once built: shared by every workspace.
  const events = new SandboxEvents();
  const catalogue = buildCatalogue(options.operationsFile ? loadOperationsFile(options.operationsFile) : undefined);
  let workspaces: Workspaces | undefined;
  // In-process the sandbox is where app.request places it (Hono's default); served() tells where it listens.
  let listeningUrl = "http://localhost";
  const auth = oauth2(options, catalogue, {
    ...deps,
    listeningUrl: () => listeningUrl,
    log: logger,
    // A reloaded clients file may name no workspace that --workspaces fixed does not have.
    workspacesProblem: (names) => {
      if (options.workspaces !== "fixed") return undefined;
      const missing = names.filter((name) => workspaces?.isNamed(name) === false);
      return missing.length === 0
        ? undefined
        : `it names workspace ${missing.join(", ")}, which this sandbox does not have (--workspaces fixed): restart it to add workspaces`;
    },
    // A token request is journaled in its client's workspace once the client is known (if it can be used).
    clientIn: (c, name) => {
      // A caller that proved a client: no longer anonymous (CONTRACT §15), and its workspace may be made.
      c.set("anonymous", false);
      const found = workspaces?.use(name, "The client's workspace");
      if (found?.ok) c.set("workspace", found.workspace);
    },
  });
  const folder = new ScenarioFolder(options.scenarios, {
    now: deps.now,
    operations: operationNames(catalogue),
    maxFileBytes: options.maxScenarioFile,
    events: {
      onLoad: ({ ok, problems }, cause) => {
        // The first load is told by whoever started the sandbox (the CLI's banner); reloads are logged.
        if (started && ok) {
          logger.info(`scenarios loaded from ${options.scenarios}: ${counted(folder.rules.rules.length, "rule")}`, {
            event: "scenarios-loaded",
            source: options.scenarios,
            files: folder.scenarios.length,
            rules: folder.rules.rules.length,
            // What made it: a file changed (the watch) or POST /__admin/scenarios/reload.
            cause,
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
        // The first load comes before any workspace; each one made later starts from the files as they are.
        for (const workspace of workspaces?.list() ?? []) workspace.filesReloaded({ ok, problems });
      },
      onWatchError: (message) => logger.warn(message, { event: "scenarios-watch" }),
    },
    fsWatch: deps.fsWatch,
  });
  let started = false;
  const loaded = folder.reload("start");
  if (!loaded.ok) throw new Error(`invalid scenario files:\n${loaded.problems.map(formatProblem).join("\n")}`);
  started = true;
  const named = [...options.workspaceNames, ...(auth?.namedWorkspaces ?? [])];
  if (options.workspaces === "fixed" && new Set(["default", ...named]).size > options.maxWorkspaces) {
    throw new Error(
      `--workspaces fixed names ${new Set(["default", ...named]).size} workspaces (default and those of the clients file included), more than --max-workspaces ${options.maxWorkspaces}`,
    );
  }
  // The state file first: it may refuse the start (not a state file, a newer schema), and then nothing is open.
  const stateFile = options.stateFile
    ? StateFile.open(options.stateFile, { maxBytes: options.maxStateFile, now: deps.now })
    : undefined;
  // Opened once nothing else can fail to start, so a refused start leaves no file open.
  const journalFile = options.journalFile
    ? new JournalFile(options.journalFile, {
        events,
        highestIdIssued: (): number => callIds.highestIssued,
        warn: (message) => logger.warn(message, { event: "journal-file", path: options.journalFile }),
      })
    : undefined;
  // Ids go on from the highest either file has seen: an id names one call across restarts.
  const callIds = new CallIds(Math.max(journalFile?.nextId ?? 1, Number(stateFile?.meta(HIGHEST_CALL_ID) ?? 0) + 1));
  let publicUrl = options.publicUrl ?? "http://localhost:8080";
  // What the state file's orders had due at the stop waits until the sandbox serves: the pushes name its URL, and a
  // start that fails (a port in use) must have sent nothing.
  let resumed = false;
  const dueAtResume: Array<() => void> = [];
  const resume = () => {
    resumed = true;
    for (const run of dueAtResume.splice(0)) run();
  };
  let serverLimits: ServerLimits | null = null;
  const dispatcher = new PushDispatcher(
    {
      timeoutMs: options.pushTimeoutMs,
      attempts: options.pushAttempts,
      concurrency: options.pushConcurrency,
      backoffMs: options.pushBackoffMs,
      allow: options.pushAllow,
      guardAddresses: options.auth === "oauth2",
      tls: pushTls,
    },
    { fetch: deps.fetch, events, now: deps.now, monotonic: deps.monotonic, random: deps.random },
  );
  const deliveries = new ResponseDeliveries(dispatcher, logger, deps.now, {
    perWorkspace: options.maxAsyncAnswers,
    sendingPerWorkspace: sendingShare(options.pushConcurrency),
  });
  const redaction = new Redaction(options.redactHeaders);
  const refused = new RefusedLog(REFUSED_LOG_LIMITS, events, redaction);
  const shared: WorkspaceShared = {
    options,
    deps,
    logger,
    catalogue,
    folder,
    dispatcher,
    deliveries,
    callIds,
    redaction,
    events,
    profiles: new ProfileCache(),
    interner: new RecordInterner(),
    publicUrl: () => publicUrl,
    whenResumed: (run: () => void) => (resumed ? run() : dueAtResume.push(run)),
    ...(auth ? { seedOf: auth.workspaceSeed } : {}),
    ...(stateFile
      ? {
          state: {
            file: stateFile,
            meta: () => ({ [HIGHEST_CALL_ID]: String(callIds.highestIssued) }),
            failed: (workspace: string, error: Error) =>
              logger.warn(
                `state file ${stateFile.path}: a change of workspace ${workspace} was not saved: ${error.message}`,
                {
                  event: "state-file",
                  path: stateFile.path,
                  workspace,
                },
              ),
          },
        }
      : {}),
  };
  workspaces = new Workspaces(
    {
      max: options.maxWorkspaces,
      ttlMs: options.workspaceTtlMs,
      mode: options.workspaces,
      named: new Set(named),
    },
    (id) => createWorkspace(id, shared),
    deps.now,
    events,
  );
  // Every workspace the state file keeps comes back as it was (the default one was made from it above).
  if (stateFile) workspaces.restore(stateFile.workspaces());
  const defaultWorkspace = workspaces.default;
  const stopWatching = options.watch ? folder.watch() : () => undefined;
  // Watched with the scenarios (--watch): a client disabled or removed in the file is refused at once.
  const stopWatchingClients = auth && options.watch ? auth.watchClients() : () => undefined;
  const adminFailures = new FailureLimit(DEFAULT_FAILURE_LIMIT, deps.monotonic);
  // Idle workspaces go as requests come; this catches them when none come.
  const sweeper = setInterval(() => workspaces?.sweep(), SWEEP_INTERVAL_MS);
  sweeper.unref();

  // Plans read once, when first asked for: a sandbox that never runs a session never reads them.
  let plans: ReturnType<typeof shippedPlans> | undefined;
  const conformance = createConformanceSessions({
    plans: () => {
      plans ??= shippedPlans();
      return plans;
    },
    sandbox: {
      now: deps.now,
      newId: deps.newId,
      publicUrl: () => publicUrl,
      messageUrl: (workspace) => `${publicUrl}${workspace.prefix}${options.basePath}${STANDARD_PATH}`,
      operationIds: () => catalogue.operations.map((op) => op.id),
      deliver: (push) => dispatcher.deliver(push),
    },
    kinds: STEP_RUNS,
    events,
    pushAllow: options.pushAllow,
    guardAddresses: options.auth === "oauth2",
  });

  const messagePaths = new Map(catalogue.paths.map((path) => [`${options.basePath}${path}`, path]));
  const live = new LiveEvents(events);
  const app = new Hono<EdgeEnv>({ getPath: routedPath });
  // Outermost: every answer, whoever makes it, leaves with nosniff and a CSP (CONTRACT §15).
  app.use("*", answerHeaders());
  const hosts = { allowedHosts: options.allowedHosts, publicUrl: options.publicUrl };
  app.use("*", hostGuard(hosts));
  // Before every route, the admin API's included, so that a preflight never meets a route or a token check.
  const corsOptions = { origins: options.cors, admin: options.corsAdmin };
  if (options.cors.length > 0) app.use("*", cors(corsOptions));
  // Before the workspace choice, so that the calls it refuses are recorded too (in the refused log). Admin calls
  // are not recorded, nor the landing page: it is not a call to the exchange.
  const recorder: RecorderDeps = { now: deps.now, monotonic: deps.monotonic, reserveId: () => callIds.next(), events };
  const record = recordCalls(recorder);
  app.use("*", async (c, next) => {
    const { path, method } = c.req;
    const landing = path === "/" && (method === "GET" || method === "HEAD");
    return path.startsWith("/__admin/") || path === "/__admin" || landing ? next() : record(c, next);
  });
  const adminTokens: AdminTokens = {
    global: options.adminToken,
    ...(auth
      ? { workspace: auth.workspaceAdminToken, anyWorkspaceToken: auth.anyWorkspaceAdminToken, openOnlyLocally: true }
      : {}),
  };
  // Before the workspace is chosen: a refused write makes nothing, not even a workspace.
  app.use(
    "/__admin/*",
    adminWriteGuard({ corsAdmin: options.corsAdmin ? options.cors : [], publicUrl: options.publicUrl }),
  );
  const workspaceChoice: WorkspaceChoiceDeps = {
    workspaces,
    ...(auth ? { authenticate: auth.authenticate } : {}),
    workspaceFromCertificate: options.workspaceFromCert,
    isMessagePath: (path) => messagePaths.has(path),
    isReadPath: (path) => isReadPath(options.basePath, path),
    isAuthPath,
    adminRefusal: (c, workspace) =>
      adminRefusal(
        adminTokens,
        { workspace },
        {
          method: c.req.method,
          path: c.req.path,
          authorization: c.req.header("authorization"),
          local: fromThisMachine(c),
        },
        // A right token is told from a wrong one here too (404 against 401): counted as on the admin API.
        { failures: adminFailures, address: remoteAddress(c) },
      ),
  };
  app.use("*", chooseWorkspace(workspaceChoice));
  // Every request in a workspace is a use of it, which its idle drop counts from: a message writes its use with its
  // changes; any other (the admin API, a dashboard, a token) here, so a restart does not drop a workspace early.
  if (stateFile) {
    app.use("*", async (c, next) => {
      await next();
      (c.var.workspace as Workspace | undefined)?.keepLastUse();
    });
  }
  app.use("/__admin/*", async (c, next) => {
    if (events.listenerCount("admin:answered") === 0) return next();
    const began = deps.monotonic();
    await next();
    const durationMs = Math.round((deps.monotonic() - began) * 1000) / 1000;
    events.emit("admin:answered", {
      method: c.req.method,
      path: new URL(c.req.url).pathname,
      status: c.res.status,
      durationMs,
      ...(c.get("workspace").prefix === "" ? {} : { workspace: c.get("workspace").id }),
    });
  });
  app.route(
    "/__admin",
    adminRoutes({
      catalogue,
      workspaces,
      folder,
      basePath: options.basePath,
      maxBody: options.maxBody,
      tokens: adminTokens,
      ...(auth ? { reloadClients: auth.reloadClients } : {}),
      refused,
      tokenFailures: adminFailures,
      version: VERSION,
      startedAt,
      now: deps.now,
      newId: deps.newId,
      health: () => ({
        server: serverLimits,
        journalFile: journalFile?.status() ?? null,
        stateFile: stateFile?.status() ?? null,
      }),
      ...(stateFile ? { stateFile } : {}),
      live,
      resend: async (request) => app.fetch(request),
      pushes: () => ({ ...dispatcher.stats(), asyncAnswers: deliveries.stats() }),
      allocation: options.allocation,
      businessErrors: options.businessErrors,
      redaction,
      conformance,
    }),
  );
  app.get("/", (c) =>
    landingPage(c, {
      basePath: options.basePath,
      version: VERSION,
      tokenRequired: options.adminToken !== undefined || auth?.workspaceAdminToken(c.get("workspace").id) !== undefined,
    }),
  );
  auth?.mount(app);
  mountMessageRoutes(app, catalogue.paths, options, deps.fetch, deliveries);
  mountCapabilityRoutes(app, {
    basePath: options.basePath,
    catalogue,
    publishedAt: startedAt,
    ...(auth ? { tokenEndpoint: (url: string) => auth.endpoints(url).tokenEndpoint } : {}),
  });
  // After the capability routes: their MessageDefinition and StructureDefinition reads come first.
  mountReadRoutes(app, { basePath: options.basePath, oauth2: auth !== undefined });

  app.notFound((c) =>
    outcomeResponse(c, 404, [
      issue(
        "not-found",
        `Nothing is served at ${c.req.method} ${c.req.path}. Messages go to POST ${options.basePath}${STANDARD_PATH} (remove-allergy: POST ${options.basePath}${ALTERNATE_PATH}); what is served: GET ${options.basePath}/uae-fhir/r4/metadata; the admin API is under /__admin.`,
      ),
    ]),
  );
  /** An error no one expected: logged, and answered 500 with these issues. */
  const sandboxBug = (method: string, path: string, error: unknown) => {
    logger.error(`unhandled error on ${method} ${path}`, error);
    return [
      issue(
        "exception",
        "The sandbox failed to process this request; this is a sandbox bug, please report it.",
        undefined,
        "fatal",
      ),
    ];
  };
  app.onError((error, c) => {
    // In-process, a scripted network fault rejects app.request as fetch would.
    if (error instanceof SimulatedNetworkFault) throw error;
    // An admin change the state file could not take: nothing of it was kept (the workspace went back to the file).
    if (error instanceof StateWriteError) {
      return outcomeResponse(c, 503, [unsavedIssue(error)], { "Retry-After": String(RETRY_AFTER_S) });
    }
    return outcomeResponse(c, 500, sandboxBug(c.req.method, c.req.path, error));
  });
  // The same edge for messages on node:http. --proxy forwards with web Requests: Hono keeps its messages.
  const node = options.proxy
    ? undefined
    : nodeMessages({
        basePath: options.basePath,
        paths: messagePaths,
        maxBody: options.maxBody,
        responseEnvelope: options.responseEnvelope,
        hostCheck: hostCheck(hosts),
        cors: options.cors.length > 0 ? corsPolicy(corsOptions) : undefined,
        recorder,
        workspaceChoice,
        unexpected: sandboxBug,
      });

  return {
    app: app as unknown as Hono,
    node,
    sandboxEvents: events,
    catalogue,
    options,
    workspaces,
    folder,
    workspace: defaultWorkspace,
    events: defaultWorkspace.events,
    journal: defaultWorkspace.journal,
    store: defaultWorkspace.store,
    scenarios: defaultWorkspace.scenarios,
    pharmacies: defaultWorkspace.pharmacies,
    orders: defaultWorkspace.orders,
    reset: () => defaultWorkspace.reset(),
    applyFixtures: (list) => defaultWorkspace.applyFixtures(list),
    served: (server) => {
      listeningUrl = server.url;
      if (options.publicUrl === undefined) publicUrl = server.url;
      serverLimits = server.limits;
      resume();
    },
    resume,
    logger,
    conformance,
    reloadClients: () => auth?.reloadClients(),
    endStreams: () => live.close(),
    close: () => {
      // First: a session's rules go while the workspaces are still there.
      conformance.close();
      live.close();
      deliveries.stop();
      stopWatching();
      stopWatchingClients();
      clearInterval(sweeper);
      workspaces?.close();
      stateFile?.close();
      // Last: whatever ended before this is written.
      journalFile?.close();
    },
  };
}
