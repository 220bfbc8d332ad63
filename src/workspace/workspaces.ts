import type { SandboxEvents } from "../events.js";
import { type Issue, issue } from "../fhir/outcome.js";
import type { Workspace } from "./workspace.js";
import { DEFAULT_WORKSPACE, isWorkspaceName, WORKSPACE_NAME_RULE } from "./workspace-name.js";

export interface WorkspaceSettings {
  /** Workspaces held at once, default included (--max-workspaces). */
  max: number;
  /** One nobody used for this long is dropped with its state (--workspace-ttl), unless named. */
  ttlMs: number;
  /** open: a workspace is made on first use; fixed: only default and the named ones exist. */
  mode: "open" | "fixed";
  /** Named by configuration (--workspaces …:a,b, the clients file): never dropped for idleness. */
  named: ReadonlySet<string>;
}

/** A workspace that cannot be used, as an HTTP refusal: a bad name (400), unknown in fixed mode (404), no room (503). */
export interface WorkspaceRefusal {
  status: 400 | 404 | 503;
  issues: Issue[];
  headers: Record<string, string>;
}

export type WorkspaceLookup = { ok: true; workspace: Workspace } | { ok: false; refusal: WorkspaceRefusal };

/** How often, on the sandbox's clock, idle workspaces are looked for as requests come. */
const SWEEP_EVERY_MS = 1_000;

/**
 * The workspaces of one sandbox: made on first use (or only the named ones,
 * in fixed mode), at most `max` at once, dropped after `ttlMs` without a
 * request unless named. The default workspace always exists.
 *
 * @example
 *   const found = workspaces.use("team-a", "the X-Sandbox-Workspace header");
 *   if (found.ok) await found.workspace.processMessage(inbound);
 */
export class Workspaces {
  readonly #live = new Map<string, Workspace>();
  readonly #named: ReadonlySet<string>;
  #lastSweep: number;
  #dropped = 0;
  readonly default: Workspace;

  constructor(
    readonly settings: WorkspaceSettings,
    private readonly create: (id: string) => Workspace,
    private readonly now: () => Date,
    /** The sandbox-wide bus: a workspace made, deleted or dropped for idleness is said there (not the default one). */
    private readonly events?: SandboxEvents,
  ) {
    this.#named = new Set([DEFAULT_WORKSPACE, ...settings.named]);
    this.default = create(DEFAULT_WORKSPACE);
    this.#live.set(DEFAULT_WORKSPACE, this.default);
    this.#lastSweep = now().getTime();
  }

  /** Named ones (default included): kept however idle; in fixed mode the only ones. */
  get named(): readonly string[] {
    return [...this.#named].sort();
  }

  /** Workspaces held now. */
  get size(): number {
    return this.#live.size;
  }

  /** Workspaces dropped for idleness since the start. */
  get dropped(): number {
    return this.#dropped;
  }

  isNamed(id: string): boolean {
    return this.#named.has(id);
  }

  /** Whether `id` is named or held now: using it makes nothing new. */
  exists(id: string): boolean {
    return this.#named.has(id) || this.#live.has(id);
  }

  /** Why `name` (from `via`, e.g. "the X-Sandbox-Workspace header") is no workspace name, if it is not one. */
  nameProblem(name: string, via: string): WorkspaceRefusal | undefined {
    if (isWorkspaceName(name)) return undefined;
    return refusal(
      400,
      "invalid",
      `${via} names workspace ${JSON.stringify(name)}, which is not ${WORKSPACE_NAME_RULE}, e.g. team-a (docs/shared-sandbox.md, Workspaces).`,
    );
  }

  /**
   * The workspace a request acts in, made now if new and allowed; its last
   * use becomes now. `via` says where the name came from, for refusals.
   */
  use(name: string, via: string): WorkspaceLookup {
    const bad = this.nameProblem(name, via);
    if (bad) return { ok: false, refusal: bad };
    const now = this.now().getTime();
    if (now - this.#lastSweep >= SWEEP_EVERY_MS) this.sweep();
    let workspace = this.#live.get(name);
    // Idle past its time though no sweep came yet: it is gone all the same, and starts afresh.
    if (workspace && this.#expired(workspace, now)) {
      this.#drop(workspace);
      workspace = undefined;
    }
    if (!workspace) {
      const refused = this.#cannotMake(name, via);
      if (refused) return { ok: false, refusal: refused };
      workspace = this.create(name);
      this.#live.set(name, workspace);
      this.events?.emit("sandbox:changed", { change: "workspace-created", workspace: name, workspaces: this.size });
    }
    workspace.lastUsedAt = new Date(now);
    return { ok: true, workspace };
  }

  #cannotMake(name: string, via: string): WorkspaceRefusal | undefined {
    if (this.settings.mode === "fixed" && !this.#named.has(name)) {
      return refusal(
        404,
        "not-found",
        `${via} names workspace ${name}, which this sandbox does not have: it runs with --workspaces fixed, and its workspaces are ${this.named.join(", ")}.`,
      );
    }
    // Room is kept for every named workspace, made yet or not: callers naming new workspaces (even ones
    // refused 401 for want of a token) must not lock the configured ones out.
    if (this.#named.has(name) || this.#roomForUnnamed()) return undefined;
    this.sweep();
    if (this.#roomForUnnamed()) return undefined;
    const retry = this.#secondsUntilRoom();
    return refusal(
      503,
      "throttled",
      `The sandbox holds ${this.#live.size} workspaces and keeps room for its ${this.#named.size} named ones, its most (--max-workspaces ${this.settings.max}): workspace ${name} cannot be made now. ${
        retry === undefined
          ? "Every workspace held is named in its configuration; "
          : `An idle one is dropped in ${retry} s (--workspace-ttl); `
      }the operator can free one with DELETE /__admin/workspaces/{id}.`,
      retry === undefined ? {} : { "retry-after": String(retry) },
    );
  }

  #roomForUnnamed(): boolean {
    let unnamed = 0;
    for (const id of this.#live.keys()) if (!this.#named.has(id)) unnamed++;
    return this.#named.size + unnamed < this.settings.max;
  }

  /** When the first idle workspace that can be dropped will be. */
  #secondsUntilRoom(): number | undefined {
    const now = this.now().getTime();
    let soonest: number | undefined;
    for (const workspace of this.#live.values()) {
      if (this.#named.has(workspace.id)) continue;
      const at = workspace.lastUsedAt.getTime() + this.settings.ttlMs;
      soonest = soonest === undefined ? at : Math.min(soonest, at);
    }
    return soonest === undefined ? undefined : Math.max(1, Math.ceil((soonest - now) / 1000));
  }

  #expired(workspace: Workspace, now: number): boolean {
    return !this.#named.has(workspace.id) && now - workspace.lastUsedAt.getTime() >= this.settings.ttlMs;
  }

  #drop(workspace: Workspace): void {
    this.#live.delete(workspace.id);
    workspace.discard();
    this.#dropped++;
    const idleMs = this.now().getTime() - workspace.lastUsedAt.getTime();
    this.events?.emit("sandbox:changed", {
      change: "workspace-dropped",
      workspace: workspace.id,
      workspaces: this.size,
      idleMs,
    });
  }

  /** Drops every workspace idle for --workspace-ttl or longer (not named ones); returns their ids. */
  sweep(): string[] {
    const now = this.now().getTime();
    this.#lastSweep = now;
    const idle = [...this.#live.values()].filter((w) => this.#expired(w, now));
    for (const workspace of idle) this.#drop(workspace);
    return idle.map((w) => w.id);
  }

  /**
   * Makes again the workspaces a state file kept (each from its saved state, with its last use), then drops those
   * idle past --workspace-ttl meanwhile. In fixed mode, only the named ones: the others' state stays in the file.
   */
  restore(ids: Iterable<string>): void {
    for (const id of ids) {
      if (this.#live.has(id) || !isWorkspaceName(id)) continue;
      if (this.settings.mode === "fixed" && !this.#named.has(id)) continue;
      this.#live.set(id, this.create(id));
    }
    this.sweep();
  }

  /** A workspace held now, without using it. */
  find(id: string): Workspace | undefined {
    return this.#live.get(id);
  }

  /** Every workspace held, idle ones dropped first, in the order they were made. */
  list(): Workspace[] {
    this.sweep();
    return [...this.#live.values()];
  }

  /**
   * Drops a workspace and all it holds now (DELETE /__admin/workspaces/{id}); a
   * later request naming it starts it afresh. The default workspace is never dropped.
   */
  delete(id: string): "deleted" | "unknown" | "default" {
    if (id === DEFAULT_WORKSPACE) return "default";
    const workspace = this.#live.get(id);
    if (!workspace) return "unknown";
    this.#live.delete(id);
    workspace.discard();
    this.events?.emit("sandbox:changed", { change: "workspace-deleted", workspace: id, workspaces: this.size });
    return "deleted";
  }

  /** Stops every workspace's timers (the sandbox is closing). */
  close(): void {
    for (const workspace of this.#live.values()) workspace.close();
  }
}

function refusal(
  status: WorkspaceRefusal["status"],
  code: Issue["code"],
  diagnostics: string,
  headers: Record<string, string> = {},
): WorkspaceRefusal {
  return { status, issues: [issue(code, diagnostics)], headers };
}
