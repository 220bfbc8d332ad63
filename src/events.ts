import { EventEmitter } from "node:events";
import type { YamlProblem } from "./config/yaml-file.js";
import type { CallDraft, CallRecord } from "./journal/call-record.js";
import type { Order } from "./orders/order.js";

/** Lifecycle events of the sandbox; observers (the journal, waiters) subscribe, the request path only emits. */
export interface SandboxEventMap {
  /** An inbound call was answered, or an outbound delivery attempt ended. */
  "call:completed": [CallDraft];
  /**
   * A call that belongs to no workspace (CONTRACT §15): of a caller without a valid token under --auth oauth2, or
   * refused before any workspace took it. `workspace` is the one its request named (null: no valid name). The
   * refused log observes it; no journal does.
   */
  "call:anonymous": [{ workspace: string | null; call: CallDraft }];
  /** The journal stored a call. */
  "call:recorded": [CallRecord];
  /** The journal was emptied (DELETE /__admin/calls, a reset). */
  "journal:cleared": [];
  /** An order changed state (created, delivered, confirmed, allocated, dispensed, expired, cancelled). */
  "order:updated": [Order];
  /** An admin API request was answered (emitted only while someone listens: the request log at debug level). */
  "admin:answered": [{ method: string; path: string; status: number; durationMs: number; workspace?: string }];
  /** The scenarios folder was loaded or reloaded; on problems the previous set keeps serving. */
  "scenarios:loaded": [{ ok: boolean; problems: YamlProblem[] }];
  /** Someone changed the sandbox's state by hand (the admin API, the embedded handle): the request log says so. */
  "sandbox:changed": [SandboxChange];
}

/**
 * A change made by hand, with what it counted: a reset, rules added or removed at run time, the journal cleared,
 * a workspace made, deleted or dropped for idleness. `workspace` is the one it acted in.
 */
export type SandboxChange =
  | { change: "reset"; workspace: string; calls: number; orders: number; patients: number; runtimeRules: number }
  | { change: "rules-added"; workspace: string; source: string; rules: number }
  | { change: "rules-removed"; workspace: string; rules: number }
  | { change: "calls-cleared"; workspace: string; calls: number }
  | { change: "workspace-created" | "workspace-deleted"; workspace: string; workspaces: number }
  | { change: "workspace-dropped"; workspace: string; workspaces: number; idleMs: number }
  | { change: "states-reset"; workspace: string; states: number; scenario: string | null; key: string | null };

/** What a workspace's bus passes on to the sandbox-wide one: what observers of every workspace (the journal file, logs) hear. */
const PASSED_ON: ReadonlySet<keyof SandboxEventMap> = new Set(["call:recorded", "order:updated", "sandbox:changed"]);

/**
 * An event bus. Each workspace has its own (its journal, waiters and order
 * observers listen there); given the sandbox-wide bus as `parent`, it passes
 * recorded calls and order changes on to it as well, without a listener of
 * its own (so listener counts stay those of real observers); its changes by hand too.
 */
export class SandboxEvents extends EventEmitter<SandboxEventMap> {
  readonly #parent: SandboxEvents | undefined;

  constructor(parent?: SandboxEvents) {
    super();
    this.#parent = parent;
    // Waiters (long-polls) subscribe one each; there is no fixed bound on them.
    this.setMaxListeners(0);
  }

  override emit<K extends keyof SandboxEventMap>(name: K, ...args: SandboxEventMap[K]): boolean {
    const heard = (super.emit as (name: K, ...args: SandboxEventMap[K]) => boolean)(name, ...args);
    if (this.#parent && PASSED_ON.has(name)) this.#parent.emit(name, ...args);
    return heard;
  }
}
