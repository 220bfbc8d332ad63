import type { SandboxOptions } from "../config/options.js";
import { LIMIT_FLAGS, type StateLimit, type StateLimits } from "../config/state-limits.js";
import type { YamlProblem } from "../config/yaml-file.js";
import type { SandboxDeps } from "../deps.js";
import { SandboxEvents } from "../events.js";
import { builtInHandlers } from "../handlers/built-in.js";
import { drugOrderHandlers } from "../handlers/drug-orders.js";
import type { HandlerTable } from "../handlers/handler.js";
import type { CallIds } from "../journal/call-ids.js";
import type { CallDraft, CallRecord } from "../journal/call-record.js";
import { Journal } from "../journal/journal.js";
import type { Redaction } from "../journal/redact.js";
import { savedCall } from "../journal/saved-call.js";
import type { SandboxLogger } from "../log/logger.js";
import { OrderWorkflow } from "../orders/order-workflow.js";
import { PharmacyRegistry } from "../orders/pharmacy-registry.js";
import { ScheduledPushes } from "../orders/scheduled-pushes.js";
import { createMessagePipeline, type MessagePipeline, type StoredAnswer } from "../pipeline/process-message.js";
import { ReplayCache } from "../pipeline/replay-cache.js";
import type { PushDispatcher } from "../push/dispatcher.js";
import type { KeepAnswer, ResponseDeliveries, SavedDelivery } from "../push/response-delivery.js";
import type { Catalogue } from "../routing/catalogue.js";
import { applyFixtures, rulePatientKeys } from "../scenarios/fixtures.js";
import type { LoadedScenario } from "../scenarios/load.js";
import type { ScenarioFolder } from "../scenarios/scenario-folder.js";
import { type AddResult, Scenarios } from "../scenarios/scenarios.js";
import type { StateFile, StateWriteError } from "../state/state-file.js";
import { NO_STATE } from "../state/state-sink.js";
import { WorkspaceState } from "../state/workspace-state.js";
import type { ProfileCache } from "../store/profile-cache.js";
import type { RecordInterner } from "../store/record-interner.js";
import { SandboxStore } from "../store/sandbox-store.js";
import { PackedTexts } from "../text/packed-texts.js";
import { type MemoryFigures, workspaceBytes } from "./memory-estimate.js";
import { restoreWorkspace, savedAnswer, savedRows } from "./restore-workspace.js";
import { unsavedAnswer } from "./unsaved-answer.js";
import { workspacePrefix } from "./workspace-name.js";

/** Most processed answers remembered for resent message ids, per workspace. */
const REPLAY_LIMIT = 2_000;

/**
 * What every workspace is built from and shares, read-only: the options,
 * the outside world, the catalogue, the scenario files, and the process-wide
 * parts (push slots, journal ids, the sandbox-wide event bus).
 */
export interface WorkspaceShared {
  options: SandboxOptions;
  deps: Pick<SandboxDeps, "now" | "newId" | "random" | "fetch" | "handlers">;
  logger: SandboxLogger;
  catalogue: Catalogue;
  folder: ScenarioFolder;
  dispatcher: PushDispatcher;
  /** Where asynchronous answers go out (the message route's, the same): a restart sends those not yet delivered. */
  deliveries?: ResponseDeliveries;
  callIds: CallIds;
  redaction: Redaction;
  /** The sandbox-wide bus: each workspace passes on its recorded calls and order changes. */
  events: SandboxEvents;
  /** Generated patient profiles, one copy for every workspace. */
  profiles: ProfileCache;
  /** Recurring parts and strings of stored records, one copy for every workspace. */
  interner: RecordInterner;
  /** The sandbox's URL as pharmacies see it (--public-url, or where it listens). */
  publicUrl(): string;
  /** Runs `run` once the sandbox serves (at once if it does): what a state file had due waits for it. */
  whenResumed?(run: () => void): void;
  /** A workspace's own seed (the clients file), if it has one; else --seed. */
  seedOf?(workspace: string): string | undefined;
  /** The state file (--state-file): each workspace writes what changes and starts from what it holds. */
  state?: {
    file: StateFile;
    /** Sandbox-wide values written with every change (the call-id counter). */
    meta(): Record<string, string>;
    /** A change made outside a message could not be written. */
    failed(workspace: string, error: StateWriteError): void;
  };
}

/** What a workspace holds, counted: for health, the workspaces list and its memory estimate. */
export interface WorkspaceCounts extends MemoryFigures {
  /** Orders still open or allocated. */
  liveOrders: number;
  /** Finished orders forgotten to make room (--max-orders) since the start or the last reset. */
  evictedOrders: number;
}

/** One limit of a workspace as health and the workspaces list show it: what it holds, its most, the flag. */
export interface LimitView {
  held: number;
  max: number | null;
  flag: string;
}

/** The limits of the workspace options set, from the options (CONTRACT §15). */
export const stateLimitsOf = (options: SandboxOptions): StateLimits => ({
  runtimeRules: options.maxRuntimeRules,
  runtimeScenarioBytes: options.maxRuntimeScenarioBytes,
  runtimeFhirpathBytes: options.maxRuntimeFhirpathBytes,
  orders: options.maxOrders,
  pharmacies: options.maxPharmacies,
  asyncAnswers: options.maxAsyncAnswers,
});

/**
 * One isolated sandbox state (CONTRACT §13): patients and records, tasks,
 * pharmacies, orders and their numbering, the journal, the duplicate-message
 * memory, runtime rules and hit counts, scheduled pushes. Nothing in it is
 * reachable from another workspace.
 */
export interface Workspace {
  readonly id: string;
  /** The path prefix that leads into it: "" for default, /w/{id} for the others. */
  readonly prefix: string;
  readonly seed: string;
  readonly createdAt: Date;
  /** When a request last acted in it. */
  lastUsedAt: Date;
  /** Its own events: its journal, waiters and order observers listen here. */
  readonly events: SandboxEvents;
  readonly journal: Journal;
  readonly store: SandboxStore;
  readonly pharmacies: PharmacyRegistry;
  readonly scenarios: Scenarios;
  readonly orders: OrderWorkflow;
  /**
   * Its message pipeline: the built-in behaviour bound to its state. With a state file, what a message (with its
   * journal call) changed is written when its call is recorded (`record`).
   */
  readonly processMessage: MessagePipeline;
  /**
   * Records a call in its journal (`call:completed`). With a state file, a message's changes are written with its
   * call, in one transaction: the error when that failed (nothing of the message was kept, the workspace went back to
   * the file, the call was not recorded); the caller answers 503 instead (unsavedIssue) and records that answer.
   */
  record(draft: CallDraft): StateWriteError | undefined;
  /**
   * A call it processed that its journal does not keep (an anonymous caller's, CONTRACT §15) is over: what the
   * message changed is written without a journal call; the error as `record`'s.
   */
  unjournaled(callId: string): StateWriteError | undefined;
  /** Keeps an asynchronous answer not yet delivered in the state file (nothing without one), until `done`. */
  keepAnswer: KeepAnswer;
  /** Loads the fixtures of scenarios added at run time. */
  applyFixtures(scenarios: readonly LoadedScenario[]): void;
  /**
   * Adds a scenario document at run time (POST /__admin/scenarios) and applies its fixtures, unless it is not
   * valid or would take the workspace past a limit (its rules, bytes, FHIRPath, its fixtures' pharmacies).
   * `forSession`: a conformance session's rule, first of all, never in the state file, not announced.
   */
  addScenario(text: string, options?: { forSession?: boolean }): AddResult;
  /**
   * Removes one document added at run time (its source, runtime-N), leaving the others; returns its rule count. A
   * conformance session's own rule: no change by hand, so nothing is announced.
   */
  removeScenario(source: string): number;
  /** The shared scenario files were loaded again (or refused): the patients their rules name stay pinned; its observers hear of it. */
  filesReloaded(result: { ok: boolean; problems: YamlProblem[] }): void;
  /** State back to fixtures, journal, duplicate memory and rule counters cleared (POST /__admin/reset). */
  reset(): void;
  counts(): WorkspaceCounts;
  /** Each limit with what is held against it (--max-runtime-rules, --max-orders, …). */
  limits(): Record<StateLimit, LimitView>;
  /** An estimate of the heap its state takes, from its counts (docs/benchmarks.md measures the figures). */
  memoryEstimate(): number;
  /** Stops its timers (order deadlines, scheduled pushes); it takes no more requests. */
  close(): void;
  /** Closes it and forgets its state in the state file too (deleted, or dropped for idleness). */
  discard(): void;
  /**
   * A request that is no message used it: its last use goes to the state file (a message writes it with its changes),
   * so that after a restart it is kept as long as it would have been without one.
   */
  keepLastUse(): void;
}

/**
 * Builds a workspace from the shared, read-only parts: one or a thousand
 * are the same code. It starts as the sandbox starts: fixtures loaded,
 * `on: start` scenario pushes scheduled.
 *
 * @example
 *   const team = createWorkspace("team-a", shared);
 *   await team.processMessage({ path, headers, body, endpoint, fhirBase });
 */
export function createWorkspace(id: string, shared: WorkspaceShared): Workspace {
  const { options, deps, logger, catalogue } = shared;
  const seed = shared.seedOf?.(id) ?? options.seed;
  const prefix = workspacePrefix(id);
  let createdAt = deps.now();
  const fileState = shared.state
    ? new WorkspaceState(shared.state.file, id, {
        meta: shared.state.meta,
        failed: (error) => shared.state?.failed(id, error),
      })
    : undefined;
  const sink = fileState ?? NO_STATE;

  // Passes recorded calls and order changes on: what the whole sandbox observes (the journal file) hears every workspace.
  const events = new SandboxEvents(shared.events);

  // The journal's bodies and the duplicate memory's answers and messages, packed together.
  const texts = new PackedTexts();
  const journal = new Journal({ maxCalls: options.journalLimit, maxBytes: options.journalMaxBytes }, events, {
    ids: shared.callIds,
    redaction: shared.redaction,
    workspace: id,
    texts,
    ...(fileState ? { dropped: (call) => fileState.remove("call", call.id), save: (call) => saveCall(call) } : {}),
  });
  // Resends come soon after the original: the last few thousand answers cover them, at a fraction of the memory;
  // and no more characters than the journal's budget, whose calls they outlive when the journal drops them.
  const replays = new ReplayCache<StoredAnswer>(
    Math.min(options.journalLimit, REPLAY_LIMIT),
    {
      maxChars: options.journalMaxBytes,
      sizeOf: (answer) => answer.body.length + ("body" in answer.identity ? answer.identity.body.length : 0),
    },
    fileState && {
      remembered: (messageId, answer) => fileState.put("replay", messageId, () => savedAnswer(answer)),
      forgotten: (messageId) => fileState.remove("replay", messageId),
    },
  );
  const store = new SandboxStore(
    {
      seed,
      emiratesIdSystem: options.emiratesIdSystem,
      now: deps.now,
      newId: deps.newId,
      profiles: shared.profiles,
      interner: shared.interner,
      sink,
    },
    { patients: options.maxPatients, recordsPerPatient: options.maxRecordsPerPatient },
  );
  const limits = stateLimitsOf(options);
  const pharmacies = new PharmacyRegistry(limits.pharmacies, sink);
  const scenarios = new Scenarios(shared.folder, undefined, limits, sink, seed, deps.now);
  const orders = new OrderWorkflow({
    seed,
    emiratesIdSystem: options.emiratesIdSystem,
    confirmDeadlineMs: options.confirmDeadlineMs,
    allocation: options.allocation,
    now: deps.now,
    newId: deps.newId,
    store,
    pharmacies,
    dispatcher: shared.dispatcher,
    events,
    logger,
    sandboxUrl: () => `${shared.publicUrl()}${prefix}${options.basePath}`,
    maxOrders: limits.orders,
    sink,
  });
  const pushes = new ScheduledPushes(orders, logger);
  // Keyed by the inbound call it answers: one answer per call.
  const keepAnswer: KeepAnswer = (saved) => {
    sink.put("answer", saved.respondsTo, () => saved);
    return { done: () => sink.remove("answer", saved.respondsTo) };
  };
  const handlers: HandlerTable = {
    ...builtInHandlers,
    ...drugOrderHandlers({
      workflow: orders,
      pharmacies,
      pushAllow: options.pushAllow,
      guardAddresses: options.auth === "oauth2",
      pushCertificates: shared.dispatcher.settings.tls,
      onSubscribed: (licence) => pushes.subscribed(licence),
    }),
    ...deps.handlers,
  };
  const pipeline = createMessagePipeline(
    { ...options, proxy: options.proxy !== undefined },
    { ...deps, handlers, catalogue, replays, texts, store, scenarios },
  );

  const pinRulePatients = () => store.pinKeys(rulePatientKeys(scenarios.scenarios));
  const fixtures = (list: readonly LoadedScenario[]) => {
    // Runtime scenarios (POST /__admin/scenarios) may name patients too; reset cleared the pins.
    pinRulePatients();
    applyFixtures(list, { store, pharmacies, seed, emiratesIdSystem: options.emiratesIdSystem });
  };
  let self: Workspace | undefined;
  /** The last use the state file holds (or is about to): keepLastUse writes only a later one. */
  let savedLastUse = 0;
  const workspaceRow = () => {
    const lastUsedAt = self?.lastUsedAt ?? createdAt;
    savedLastUse = lastUsedAt.getTime();
    // The journal's next page cursor: after a restart it goes on from there, even if the journal was cleared.
    return { createdAt, lastUsedAt, journalSeq: journal.nextSeq };
  };
  const file = shared.state?.file;
  /** Back to what the state file holds: at start (`resume`: what was due waits for resumeDue), or after a write failed. */
  const restore = (resume: boolean) =>
    restoreWorkspace(savedRows(file as StateFile, id), {
      store,
      pharmacies,
      scenarios,
      orders,
      replays,
      journal,
      texts,
      resume,
      logger,
      id,
    });
  let lastUsedAt: Date | undefined;
  if (fileState && file?.holds(id)) {
    let answers: SavedDelivery[] = [];
    fileState.muted(() => {
      const times = restore(true);
      createdAt = times.createdAt ?? createdAt;
      lastUsedAt = times.lastUsedAt;
      answers = times.answers;
      pinRulePatients();
    });
    // Pushes and asynchronous answers not delivered, deadlines passed while the sandbox was down: once it serves.
    const resumeDue = () => {
      orders.resumeDue();
      for (const saved of answers) {
        const delayMs = Math.max(0, Date.parse(saved.dueAt) - deps.now().getTime());
        shared.deliveries?.send({ ...saved, workspace: id, events, delayMs }, keepAnswer);
      }
    };
    if (shared.whenResumed) shared.whenResumed(resumeDue);
    else resumeDue();
  } else if (fileState) {
    // A new workspace: its fixtures are its first state.
    const made = fileState.within(() => {
      fixtures(scenarios.fixtureOrder);
      fileState.put("workspace", "", workspaceRow);
    });
    if (made.error) shared.state?.failed(id, made.error);
  } else {
    fixtures(scenarios.fixtureOrder);
  }
  pushes.start(scenarios.scenarios);

  /** A write failed: the workspace goes back to what the file holds (its journal stays: it tells what happened). */
  const stepBack = (cause: StateWriteError) => {
    (fileState as WorkspaceState).abandon(cause);
    (fileState as WorkspaceState).muted(() => {
      restore(false);
      pinRulePatients();
    });
  };
  /** Why the call being recorded was not: its message's changes could not be written. */
  let unsaved: StateWriteError | undefined;
  const processMessage: MessagePipeline = fileState
    ? (inbound) => {
        // Through the edge (a journal call), the changes wait for the call's record (settle): one transaction for
        // both, before the answer goes out.
        const { value, error } = fileState.within(() => {
          fileState.put("workspace", "", workspaceRow);
          return pipeline(inbound);
        }, inbound.call?.id);
        if (!error) return value;
        stepBack(error);
        return value instanceof Promise
          ? value.then((answer) => unsavedAnswer(answer, error))
          : unsavedAnswer(value, error);
      }
    : pipeline;
  /**
   * Writes a call's journal record (none for a call its journal does not keep) with its message's changes, in one
   * transaction. False for a message whose changes are not in the file (this write failed, or an earlier one took
   * them with the step back to the file): it is answered 503 (`unsaved` says why).
   */
  const settle = (callId: string, call: CallRecord | undefined): boolean => {
    const state = fileState as WorkspaceState;
    const message = state.holds(callId);
    const undone = state.undone(callId);
    // The page cursor the journal gives the record when it keeps it.
    const seq = journal.nextSeq;
    const error = state.recorded(callId, call ? () => savedCall(call, seq) : undefined);
    if (!error) return true;
    shared.state?.failed(id, error);
    // Not a message's (a push's record, a refused body): it stays in memory, and health says the file fails.
    if (!message) return true;
    if (!undone) stepBack(error);
    unsaved = error;
    return false;
  };
  const saveCall = (call: CallRecord) => settle(call.id, call);
  if (fileState) {
    events.on("journal:cleared", () => {
      fileState.removeAll("call");
      fileState.put("workspace", "", workspaceRow);
    });
  }
  /** Runs an admin change in one transaction; a failed write takes the workspace back and throws. */
  const written = <T>(change: () => T): T => {
    if (!fileState) return change();
    const { value, error } = fileState.within(change);
    if (!error) return value;
    stepBack(error);
    throw error;
  };

  const counts = (): WorkspaceCounts => {
    const held = store.counts();
    const runtime = scenarios.runtimeCost;
    const book = orders.held;
    return {
      calls: journal.size,
      journalBytes: journal.bytes,
      patients: held.patients,
      records: held.records,
      orders: book.orders,
      liveOrders: book.live,
      evictedOrders: book.evicted,
      orderRequests: book.requests,
      runtimeRules: runtime.rules,
      runtimeScenarioBytes: runtime.bytes,
      runtimeFhirpathBytes: runtime.fhirpathBytes,
      pharmacies: pharmacies.size,
    };
  };
  const view = (held: number, max: number, limit: StateLimit): LimitView => ({
    held,
    // JSON has no infinity: an unlimited one (an embedding sandbox's default) shows as null.
    max: Number.isFinite(max) ? max : null,
    flag: LIMIT_FLAGS[limit],
  });

  const workspace: Workspace = {
    id,
    prefix,
    seed,
    createdAt,
    lastUsedAt: lastUsedAt ?? createdAt,
    events,
    journal,
    store,
    pharmacies,
    scenarios,
    orders,
    processMessage,
    keepAnswer,
    record(draft) {
      unsaved = undefined;
      events.emit("call:completed", draft);
      const error = unsaved;
      unsaved = undefined;
      return error;
    },
    unjournaled(callId) {
      if (!fileState) return undefined;
      unsaved = undefined;
      settle(callId, undefined);
      const error = unsaved;
      unsaved = undefined;
      return error;
    },
    applyFixtures: fixtures,
    addScenario(text, options) {
      const added = written(() => {
        // Its fixtures' pharmacies count against --max-pharmacies; the files' own fixtures never do.
        const added = scenarios.add(
          text,
          (scenario) => pharmacies.noRoomFor((scenario.fixtures?.pharmacies ?? []).map((p) => p.licence)),
          options?.forSession,
        );
        if (added.ok) fixtures([added.scenario]);
        return added;
      });
      // A session's rule is no change by hand: its session's report says what it answered.
      if (added.ok && !options?.forSession) {
        const { source, rules } = added.scenario;
        events.emit("sandbox:changed", { change: "rules-added", workspace: id, source, rules: rules.length });
      }
      return added;
    },
    removeScenario(source) {
      return written(() => scenarios.removeRuntime(source));
    },
    filesReloaded(result) {
      if (result.ok) pinRulePatients();
      events.emit("scenarios:loaded", result);
    },
    reset() {
      const before = counts();
      written(() => {
        pushes.stop();
        shared.deliveries?.withdraw(id);
        // Everything of it goes from the file; the fixtures below are its new state (runtime rules stay).
        fileState?.removeEverything();
        orders.clear();
        journal.clear();
        replays.clear();
        texts.clear();
        store.clear();
        pharmacies.clear();
        fixtures(scenarios.fixtureOrder);
        scenarios.resetCounters();
        if (fileState) {
          fileState.put("workspace", "", workspaceRow);
          scenarios.saveRuntime();
        }
        pushes.start(scenarios.scenarios);
      });
      events.emit("sandbox:changed", {
        change: "reset",
        workspace: id,
        calls: before.calls,
        orders: before.orders,
        patients: before.patients,
        runtimeRules: scenarios.runtimeCost.rules,
      });
    },
    counts,
    limits() {
      const c = counts();
      return {
        runtimeRules: view(c.runtimeRules, limits.runtimeRules, "runtimeRules"),
        runtimeScenarioBytes: view(c.runtimeScenarioBytes, limits.runtimeScenarioBytes, "runtimeScenarioBytes"),
        runtimeFhirpathBytes: view(c.runtimeFhirpathBytes, limits.runtimeFhirpathBytes, "runtimeFhirpathBytes"),
        orders: view(c.orders, limits.orders, "orders"),
        pharmacies: view(c.pharmacies, limits.pharmacies, "pharmacies"),
        asyncAnswers: view(shared.deliveries?.held(id) ?? 0, limits.asyncAnswers, "asyncAnswers"),
      };
    },
    memoryEstimate: () => workspaceBytes(counts()),
    close() {
      pushes.stop();
      fileState?.muted(() => orders.clear());
    },
    discard() {
      workspace.close();
      shared.deliveries?.withdraw(id);
      if (!fileState) return;
      fileState.removeEverything();
      const error = fileState.flush();
      fileState.end();
      if (error) shared.state?.failed(id, error);
    },
    keepLastUse() {
      if (fileState && workspace.lastUsedAt.getTime() !== savedLastUse) fileState.put("workspace", "", workspaceRow);
    },
  };
  self = workspace;
  savedLastUse = workspace.lastUsedAt.getTime();
  return workspace;
}
