/**
 * A bounded table of values to share, by key, that keeps the ones in use:
 * at most `maxEntries`, whatever it is sent, without a recency list to
 * update on every lookup. Two generations: new entries go into the young
 * one; when it holds half the budget it becomes the old one and the old one
 * is dropped; an entry found in the old one moves back to the young. So an
 * entry used again before two generations pass stays, and a flood of unique
 * keys (which no table could share anyway) only pushes the others out.
 *
 * @example
 *   const strings = new InternTable<string>(4_096);
 *   const one = strings.get(text) ?? strings.set(text, text);
 */
export class InternTable<T> {
  #young = new Map<string, T>();
  #old = new Map<string, T>();

  constructor(readonly maxEntries: number) {}

  /** The value kept under `key`, if any (it counts as in use). */
  get(key: string): T | undefined {
    const young = this.#young.get(key);
    if (young !== undefined) return young;
    const old = this.#old.get(key);
    return old === undefined ? undefined : this.set(key, old);
  }

  /** Keeps `value` under `key` (in place of any other), and returns it. */
  set(key: string, value: T): T {
    this.#old.delete(key);
    this.#young.set(key, value);
    if (this.#young.size >= this.maxEntries / 2) {
      this.#old = this.#young;
      this.#young = new Map();
    }
    return value;
  }

  /** Entries held. */
  get size(): number {
    return this.#young.size + this.#old.size;
  }
}
