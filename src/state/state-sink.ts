/** The kinds of things a workspace keeps in the state file, one row each. */
export type StateKind =
  | "workspace"
  | "patient"
  | "record"
  | "pharmacy"
  | "order"
  | "orders"
  | "scenario"
  | "hits"
  | "states"
  | "replay"
  | "call"
  /** An asynchronous answer not yet delivered (`$process-message?async=true`). */
  | "answer";

/**
 * Where the parts of a workspace say what they changed, for the state file. `value` is asked when the change is
 * written (once, however often the thing changed meanwhile), so it gives the thing as it is then. Without a state
 * file it is NO_STATE, which does nothing: parts check `active` before building anything for it.
 */
export interface StateSink {
  readonly active: boolean;
  put(kind: StateKind, key: string, value: () => unknown): void;
  remove(kind: StateKind, key: string): void;
  /** Every row of a kind goes (a reset of the rule counters, the runtime rules removed). */
  removeAll(kind: StateKind): void;
}

export const NO_STATE: StateSink = {
  active: false,
  put() {},
  remove() {},
  removeAll() {},
};
