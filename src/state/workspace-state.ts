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
 * message's changes are written when its processing ends (`within`), before its answer goes out; a change made
 * outside a message (a timer, a push's answer) is written at the end of the task that made it.
 *
 * @example
 *   const { value: answer, error } = state.within(() => pipeline(inbound)); // error: nothing of it was written
 */
export class WorkspaceState implements StateSink {
  readonly active = true;
  #pending: Pending | undefined;
  #inUnit = false;
  #muted = 0;
  #ended = false;

  constructor(
    private readonly file: StateFile,
    readonly workspace: string,
    private readonly hooks: WorkspaceStateHooks,
  ) {}

  put(kind: StateKind, key: string, value: () => unknown): void {
    if (this.#muted > 0 || this.#ended) return;
    this.#open().rows.set(`${kind}\0${key}`, { kind, key, value });
  }

  remove(kind: StateKind, key: string): void {
    if (this.#muted > 0 || this.#ended) return;
    this.#open().rows.set(`${kind}\0${key}`, { kind, key, value: undefined });
  }

  removeAll(kind: StateKind): void {
    if (this.#muted > 0 || this.#ended) return;
    const pending = this.#open();
    pending.clearKinds.add(kind);
    for (const [id, row] of pending.rows) if (row.kind === kind) pending.rows.delete(id);
  }

  /** Everything of the workspace goes from the file (a reset: what follows is its new state). */
  removeEverything(): void {
    if (this.#muted > 0 || this.#ended) return;
    const pending = this.#open();
    pending.clear = true;
    pending.clearKinds.clear();
    pending.rows.clear();
  }

  /**
   * The workspace is gone (deleted, dropped for idleness) and its rows with it: what its parts still do after (a
   * push that ends, and its journal record) is written nowhere, or a restart would bring a part of it back.
   */
  end(): void {
    this.#ended = true;
    this.#pending = undefined;
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

  /** Writes what is pending now; the error when it could not be (the change is dropped: memory goes back to the file). */
  flush(): StateWriteError | undefined {
    const pending = this.#pending;
    if (!pending) return undefined;
    this.#pending = undefined;
    try {
      this.file.commit(this.workspace, serialized(pending), this.hooks.meta());
      return undefined;
    } catch (error) {
      return error instanceof StateWriteError ? error : new StateWriteError(String(error));
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
  for (const [id, row] of pending.rows) {
    rows.set(id, {
      kind: row.kind,
      key: row.key,
      value: row.value === undefined ? undefined : JSON.stringify(row.value()),
    });
  }
  return { clear: pending.clear, clearKinds: pending.clearKinds, rows };
}
