/**
 * A limit on failed attempts (wrong client credentials, wrong admin tokens):
 * at most `max` failures per key in a sliding window of `windowMs`; a key at
 * the limit is refused until its oldest failure leaves the window. Memory is
 * bounded: at most `max` times per key and `maxKeys` keys (past it, keys whose
 * failures have all left the window go first, then the least recently failed).
 * Time is the injected monotonic clock, so tests move it by hand.
 *
 * @example
 *   const limit = new FailureLimit({ max: 10, windowMs: 60_000, maxKeys: 10_000 }, performance.now.bind(performance));
 *   if (limit.retryAfterMs(key) > 0) return tooMany();
 *   if (!ok) limit.fail(key);
 */
export interface FailureLimitSettings {
  max: number;
  windowMs: number;
  maxKeys: number;
}

/** Ten failures a minute per key, as login throttles commonly allow; ten thousand keys, a few hundred KiB. */
export const DEFAULT_FAILURE_LIMIT: FailureLimitSettings = { max: 10, windowMs: 60_000, maxKeys: 10_000 };

export class FailureLimit {
  /** Per key, the times of its failures in the window, oldest first; the Map's order is that of the last failure. */
  readonly #failures = new Map<string, number[]>();

  constructor(
    readonly settings: FailureLimitSettings,
    private readonly monotonic: () => number,
  ) {}

  /** Milliseconds until `key` may try again; 0 when it may now. */
  retryAfterMs(key: string): number {
    const times = this.#recent(key);
    if (times === undefined || times.length < this.settings.max) return 0;
    return Math.max(1, (times[0] as number) + this.settings.windowMs - this.monotonic());
  }

  /** Counts a failure of `key`. */
  fail(key: string): void {
    const times = this.#recent(key) ?? [];
    times.push(this.monotonic());
    // No more than the limit is ever needed: the oldest beyond it cannot decide anything.
    if (times.length > this.settings.max) times.shift();
    this.#failures.delete(key);
    if (this.#failures.size >= this.settings.maxKeys) this.#makeRoom();
    this.#failures.set(key, times);
  }

  /** Keys held now (for tests and health). */
  get size(): number {
    return this.#failures.size;
  }

  /** The key's failures still in the window, or undefined (and forgotten) when none is. */
  #recent(key: string): number[] | undefined {
    const times = this.#failures.get(key);
    if (times === undefined) return undefined;
    const since = this.monotonic() - this.settings.windowMs;
    while (times.length > 0 && (times[0] as number) <= since) times.shift();
    if (times.length > 0) return times;
    this.#failures.delete(key);
    return undefined;
  }

  #makeRoom(): void {
    const since = this.monotonic() - this.settings.windowMs;
    for (const [key, times] of this.#failures) {
      if ((times[times.length - 1] as number) <= since) this.#failures.delete(key);
    }
    // Still full: the least recently failed key goes (insertion order is the order of last failure).
    if (this.#failures.size >= this.settings.maxKeys) {
      this.#failures.delete(this.#failures.keys().next().value as string);
    }
  }
}

/** Retry-After (RFC 9110 §10.2.3) in whole seconds, at least 1. */
export const retryAfterSeconds = (ms: number): string => String(Math.max(1, Math.ceil(ms / 1000)));
