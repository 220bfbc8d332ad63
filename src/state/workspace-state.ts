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

/** Messages processed whose calls are not recorded yet, at most: past it the oldest one's changes are written alone. */
const MAX_PARKED = 1_000;

/**
 * One workspace's side of the state file: what its parts changed, gathered and written in one transaction. A
 * message's changes wait, when its processing ends, for its call's journal record, and both are written together
 * (`recorded`) before the answer goes out: one transaction per message. A change made outside a message (a timer, a
 * push's answer) is written at the end of the task that made it.
 *
 * @example
 *   state.within(() => pipeline(inbound), callId); // its changes wait for the call
 *   const error = state.recorded(callId, () => savedCall(record)); // error: nothing of the message was written
 */
export class WorkspaceState implements StateSink {
  readonly active = true;
  #pending: Pending | undefined;
  readonly #parked = new Map<string, Pending>();
  /** Messages whose changes a step back to the file undid before their calls were recorded: why, by call. */
  readonly #lost = new Map<string, StateWriteError>();
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
    this.#parked.clear();
    this.#lost.clear();
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
   * Runs `fn` (a message's processing, a reset) and what it changed synchronously is one unit: with `call`, kept
   * for that call's journal record (`recorded`); without, written now, with anything still unwritten (`error` when
   * that failed: nothing of it is in the file).
   */
  within<T>(fn: () => T, call?: string): { value: T; error: StateWriteError | undefined } {
    const outer = this.#inUnit;
    // Changes made before, in this task (a push's answer), are written on their own, not with the message.
    if (!outer && this.#pending) this.#report(this.flush());
    this.#inUnit = true;
    let value: T;
    try {
      value = fn();
    } finally {
      this.#inUnit = outer;
    }
    if (outer) return { value, error: undefined };
    if (call === undefined) return { value, error: this.flush() };
    const pending = this.#pending;
    this.#pending = undefined;
    if (pending) this.#park(call, pending);
    return { value, error: undefined };
  }

  /** Whether a message's changes wait for this call's record (or were undone while they waited). */
  holds(call: string): boolean {
    return this.#parked.has(call) || this.#lost.has(call);
  }

  /** Whether a step back to the file undid this message's changes while it waited for its call's record. */
  undone(call: string): boolean {
    return this.#lost.has(call);
  }

  /**
   * A write failed and the workspace goes back to what the file holds: the changes of messages still waiting for
   * their calls' records go too, so those messages are not saved either (`recorded` says so), and nothing pending is
   * written.
   */
  abandon(cause: StateWriteError): void {
    for (const call of this.#parked.keys()) {
      this.#lost.set(
        call,
        new StateWriteError(
          `another write failed while this message was under way, and the workspace went back to the file without its changes: ${cause.message}`,
          cause.path,
        ),
      );
    }
    this.#parked.clear();
    this.#pending = undefined;
  }

  /**
   * The journal recorded a call: its record is written with the changes of its message (if any), and whatever else
   * is pending now (the calls the journal dropped to make room), in one transaction.
   */
  recorded(call: string, record: (() => unknown) | undefined): StateWriteError | undefined {
    if (this.#ended) return undefined;
    const lost = this.#lost.get(call);
    if (lost) {
      this.#lost.delete(call);
      return lost;
    }
    const units: Pending[] = [];
    const parked = this.#parked.get(call);
    if (parked) {
      this.#parked.delete(call);
      units.push(parked);
    }
    const now = this.#pending ?? { clear: false, clearKinds: new Set<string>(), rows: new Map() };
    this.#pending = undefined;
    // No record: a call its journal does not keep (an anonymous caller's); its message's changes go alone.
    if (record) now.rows.set(`call\0${call}`, { kind: "call", key: call, value: record });
    units.push(now);
    return this.#commit(units);
  }

  /** Writes what is pending now; the error when it could not be (the change is dropped: memory goes back to the file). */
  flush(): StateWriteError | undefined {
    const pending = this.#pending;
    if (!pending) return undefined;
    this.#pending = undefined;
    return this.#commit([pending]);
  }

  #commit(units: readonly Pending[]): StateWriteError | undefined {
    if (this.#ended) return undefined;
    try {
      this.file.commit(this.workspace, units.map(serialized), this.hooks.meta());
      return undefined;
    } catch (error) {
      return error instanceof StateWriteError ? error : new StateWriteError(String(error), this.file.path);
    }
  }

  #park(call: string, pending: Pending): void {
    this.#parked.set(call, pending);
    // A call that is never recorded (a caller of processMessage that is no HTTP edge) must not hold its changes back.
    if (this.#parked.size > MAX_PARKED) {
      const [oldest, unit] = this.#parked.entries().next().value as [string, Pending];
      this.#parked.delete(oldest);
      this.#report(this.#commit([unit]));
    }
  }

  #report(error: StateWriteError | undefined): void {
    if (error) this.hooks.failed(error);
  }

  #open(): Pending {
    if (this.#pending) return this.#pending;
    const pending: Pending = { clear: false, clearKinds: new Set(), rows: new Map() };
    this.#pending = pending;
    // Outside a message: written once the task that changed it ends (a timer's or a push's work changes several).
    if (!this.#inUnit) {
      queueMicrotask(() => {
        if (this.#pending !== pending || this.#inUnit) return;
        this.#report(this.flush());
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
