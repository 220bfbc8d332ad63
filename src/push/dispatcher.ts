import type { SandboxEvents } from "../events.js";
import { readCapped } from "../http/read-body.js";
import { headerRecord } from "../journal/redact.js";
import { hostAllowed, pushableScheme } from "./push-allow.js";

export interface PushSettings {
  /** Per-attempt timeout. */
  timeoutMs: number;
  /** Attempts in all, the first included. */
  attempts: number;
  /** Deliveries in flight at once, across all pharmacies. */
  concurrency: number;
  /** First backoff; doubles per retry, with full jitter. */
  backoffMs: number;
  /** --push-allow host patterns; empty allows all. */
  allow: readonly string[];
}

export interface PushDeps {
  fetch: typeof fetch;
  events: SandboxEvents;
  now(): Date;
  monotonic(): number;
  random(): number;
}

export interface Push {
  target: string;
  /** The pharmacy's licence, when the push is for a known pharmacy. */
  pharmacy?: string;
  /** The pharmacy's headers (Subscription.channel.header): sent as they are, recorded redacted. */
  headers: Record<string, string>;
  /** The envelope text: {"content": "<bundle string>"}. */
  body: string;
  /** The event it carries (journal operation). */
  event: string;
  messageId: string;
  /** Where its attempts are announced: the pushing workspace's events (default the dispatcher's). */
  events?: SandboxEvents;
}

/** Deliveries under way (GET /__admin/health). */
export interface PushStats {
  /** Pushes not yet finished: attempting, waiting for a slot, or backing off before a retry. */
  pending: number;
  /** Attempts in flight now. */
  inFlight: number;
  /** Attempts waiting for one of the `concurrency` slots. */
  queued: number;
  concurrency: number;
}

export interface PushResult {
  delivered: boolean;
  attempts: number;
  status: number | null;
  error: string | null;
}

/** Largest answer body read back from a receiver; the rest is dropped. */
const MAX_ANSWER_BYTES = 64 * 1024;

const wait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Delivers pushes: a bounded number at a time across the whole process
 * (every workspace's pushes share the bound), each attempt with a timeout,
 * retried with exponential backoff and jitter on connection errors,
 * timeouts and 5xx (also 408 and 429), never on other answers; redirects are
 * not followed. Every attempt is announced as an outbound call, the push's
 * headers marked secret for the journal to redact. `deliver`
 * never rejects, so a bad receiver cannot break the caller.
 */
export class PushDispatcher {
  #active = 0;
  #pending = 0;
  readonly #queue: Array<() => void> = [];

  constructor(
    readonly settings: PushSettings,
    private readonly deps: PushDeps,
  ) {}

  stats(): PushStats {
    return {
      pending: this.#pending,
      inFlight: this.#active,
      queued: this.#queue.length,
      concurrency: this.settings.concurrency,
    };
  }

  async deliver(push: Push): Promise<PushResult> {
    this.#pending++;
    try {
      return await this.#deliver(push);
    } finally {
      this.#pending--;
    }
  }

  async #deliver(push: Push): Promise<PushResult> {
    if (!pushableScheme(push.target) || !hostAllowed(push.target, this.settings.allow)) {
      const error = `target ${push.target} is not allowed (http/https only; --push-allow ${this.settings.allow.join(",") || "*"})`;
      this.#record(push, 1, this.deps.now(), 0, null, error);
      return { delivered: false, attempts: 1, status: null, error };
    }
    let last: PushResult = { delivered: false, attempts: 0, status: null, error: null };
    for (let attempt = 1; attempt <= this.settings.attempts; attempt++) {
      if (attempt > 1) {
        const ceiling = this.settings.backoffMs * 2 ** (attempt - 2);
        await wait(Math.round(ceiling / 2 + this.deps.random() * (ceiling / 2)));
      }
      const outcome = await this.#slot(() => this.#attempt(push, attempt));
      last = { delivered: outcome.delivered, attempts: attempt, status: outcome.status, error: outcome.error };
      if (outcome.delivered || !outcome.retry) break;
    }
    return last;
  }

  /** Runs `job` when fewer than `concurrency` deliveries are in flight. */
  async #slot<T>(job: () => Promise<T>): Promise<T> {
    if (this.#active >= this.settings.concurrency) await new Promise<void>((resolve) => this.#queue.push(resolve));
    this.#active++;
    try {
      return await job();
    } finally {
      this.#active--;
      this.#queue.shift()?.();
    }
  }

  async #attempt(push: Push, attempt: number) {
    const at = this.deps.now();
    const started = this.deps.monotonic();
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.settings.timeoutMs);
    try {
      const res = await this.deps.fetch(push.target, {
        method: "POST",
        headers: { "content-type": "application/fhir+json; charset=utf-8", ...push.headers },
        body: push.body,
        redirect: "manual",
        signal: controller.signal,
      });
      const { text } = await readCapped(res.body, MAX_ANSWER_BYTES);
      clearTimeout(timer);
      const delivered = res.status >= 200 && res.status < 300;
      const retry = res.status >= 500 || res.status === 408 || res.status === 429;
      this.#record(
        push,
        attempt,
        at,
        this.deps.monotonic() - started,
        { status: res.status, headers: res.headers, body: text },
        null,
      );
      return { delivered, retry, status: res.status, error: delivered ? null : `answered ${res.status}` };
    } catch (error) {
      clearTimeout(timer);
      const message = controller.signal.aborted
        ? `no answer within ${this.settings.timeoutMs} ms`
        : describeNetworkError(error);
      this.#record(push, attempt, at, this.deps.monotonic() - started, null, message);
      return { delivered: false, retry: true, status: null, error: message };
    }
  }

  #record(
    push: Push,
    attempt: number,
    at: Date,
    durationMs: number,
    response: { status: number; headers: Headers; body: string } | null,
    error: string | null,
  ): void {
    // An unparseable target (a fixture endpoint such as "http://[bad") is refused, not thrown: deliver never rejects.
    let path = push.target;
    try {
      path = new URL(push.target).pathname;
    } catch {}
    (push.events ?? this.deps.events).emit("call:completed", {
      direction: "outbound",
      at,
      durationMs: Math.round(durationMs * 1000) / 1000,
      operation: push.event,
      messageId: push.messageId,
      rule: null,
      request: {
        method: "POST",
        url: push.target,
        path,
        headers: headerRecord(
          Object.entries({ "content-type": "application/fhir+json; charset=utf-8", ...push.headers }),
        ),
        body: push.body,
      },
      // The Subscription's headers are the pharmacy's credentials, whatever their names: never kept.
      secretHeaders: Object.keys(push.headers),
      response: response
        ? { status: response.status, headers: headerRecord(response.headers), body: response.body }
        : null,
      ...(error ? { error } : {}),
      ...(push.pharmacy !== undefined ? { pharmacy: push.pharmacy } : {}),
      target: push.target,
      attempt,
    });
  }
}

function describeNetworkError(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.code) return `${cause.code}${cause.message ? `: ${cause.message}` : ""}`;
  // fetch's own message is only "fetch failed": the reason is in its cause.
  const message = (error as Error).message ?? String(error);
  return cause?.message ? `${message}: ${cause.message}` : message;
}
