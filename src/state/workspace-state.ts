import type { StateChange, StateFile } from "./state-file.js";
import { StateWriteError } from "./state-file.js";
import type { StateKind, StateSink } from "./state-sink.js";

interface Pending {
  clear: boolean;
  clearKinds: Set<string>;
  rows: Map<string, { kind: string; key: string; value: (() => unknown) | undefined }>;
}

export interface WorkspaceStateHooks {
  /** Sandbox-wide values written with every change (the call-id counter). */
  meta(): Record<string, string>;
  /** A change made outside a message (a timer, a push's answer, the admin API) could not be written. */
  failed(error: StateWriteError): void;
}

/**
 * One workspace's side of the state file: what its parts changed, gathered and written in one transaction. A
 * message's changes are written with its journal call (`deferred`, then `flush` when the call is recorded), before
 * its answer goes out; an admin change when it ends (`within`); a change made outside both (a timer, a push's
 * answer) at the end of the task that made it.
 *
 * @example
 *   const { value, error } = state.within(() => scenarios.add(text)); // error: nothing of it was written
 */
export class WorkspaceState implements StateSink {
  readonly active = true;
  #pending: Pending | undefined;
  #inUnit = false;
  #muted = 0;
  #dropped = 0;

  constructor(
    private readonly file: StateFile,
    readonly workspace: string,
    private readonly hooks: WorkspaceStateHooks,
  ) {}

  put(kind: StateKind, key: string, value: () => unknown): void {
    if (this.#muted > 0) return;
    this.#open().rows.set(`${kind}\0${key}`, { kind, key, value });
  }

  remove(kind: StateKind, key: string): void {
    if (this.#muted > 0) return;
    this.#open().rows.set(`${kind}\0${key}`, { kind, key, value: undefined });
  }

  removeAll(kind: StateKind): void {
    if (this.#muted > 0) return;
    const pending = this.#open();
    pending.clearKinds.add(kind);
    for (const [id, row] of pending.rows) if (row.kind === kind) pending.rows.delete(id);
  }

  /** Everything of the workspace goes from the file (a reset: what follows is its new state). */
  removeEverything(): void {
    if (this.#muted > 0) return;
    const pending = this.#open();
    pending.clear = true;
    pending.clearKinds.clear();
    pending.rows.clear();
  }

  /** Runs `fn` without writing what it changes: the state is being read back from the file. */
  muted<T>(fn: () => T): T {
    this.#muted++;
    try {
      return fn();
    } finally {
      this.#muted--;
    }
  }

  /**
   * Runs `fn` (a message's processing, a reset) and writes what it changed, with anything still unwritten, in one
   * transaction; `error` when that failed (nothing of it is in the file).
   */
  within<T>(fn: () => T): { value: T; error: StateWriteError | undefined } {
    const outer = this.#inUnit;
    this.#inUnit = true;
    let value: T;
    try {
      value = fn();
    } finally {
      this.#inUnit = outer;
    }
    return { value, error: outer ? undefined : this.flush() };
  }

  /**
   * Runs `fn` (a message's processing) and leaves what it changed pending, to be written with the message's journal
   * call (`flush` when the call is recorded): the message and its call go in one transaction.
   */
  deferred<T>(fn: () => T): T {
    const outer = this.#inUnit;
    this.#inUnit = true;
    try {
      return fn();
    } finally {
      this.#inUnit = outer;
    }
  }

  /**
   * How many times pending changes were dropped because they could not be written. A deferred change made while it
   * was lower is gone (with the workspace's step back to the file): its message must not be answered as saved.
   */
  get drops(): number {
    return this.#dropped;
  }

  /** Writes what is pending now; the error when it could not be (the change is dropped: memory goes back to the file). */
  flush(): StateWriteError | undefined {
    const pending = this.#pending;
    if (!pending) return undefined;
    this.#pending = undefined;
    try {
      this.file.commit(this.workspace, serialized(pending), this.hooks.meta());
      return undefined;
    } catch (error) {
      this.#dropped++;
      return error instanceof StateWriteError ? error : new StateWriteError(String(error), this.file.path);
    }
  }

  #open(): Pending {
    if (this.#pending) return this.#pending;
    const pending: Pending = { clear: false, clearKinds: new Set(), rows: new Map() };
    this.#pending = pending;
    // Outside a message: written once the task that changed it ends (a timer's or a push's work changes several).
    if (!this.#inUnit) {
      queueMicrotask(() => {
        if (this.#pending !== pending || this.#inUnit) return;
        const error = this.flush();
        if (error) this.hooks.failed(error);
      });
    }
    return pending;
  }
}

function serialized(pending: Pending): StateChange {
  const rows = new Map<string, { kind: string; key: string; value: string | undefined }>();
  let recordsOnly = !pending.clear && pending.clearKinds.size === 0;
  for (const [id, row] of pending.rows) {
    if (row.kind !== "call") recordsOnly = false;
    rows.set(id, {
      kind: row.kind,
      key: row.key,
      value: row.value === undefined ? undefined : JSON.stringify(row.value()),
    });
  }
  return { clear: pending.clear, clearKinds: pending.clearKinds, rows, endsFailure: !recordsOnly };
}
