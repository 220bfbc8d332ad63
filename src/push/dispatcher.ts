import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import type { SandboxEvents } from "../events.js";
import { headerRecord } from "../journal/redact.js";
import type { OutboundInit } from "./outbound-fetch.js";
import { addressRefusal, hostAllowed, literalAddressRefusal, pushableScheme } from "./push-allow.js";
import { type PushTls, resetHint, tlsFailure } from "./push-tls.js";

export interface PushSettings {
  /** Per-attempt timeout. */
  timeoutMs: number;
  /** Attempts in all, the first included. */
  attempts: number;
  /** Deliveries in flight at once, across all pharmacies. */
  concurrency: number;
  /** First backoff; doubles per retry, with full jitter. */
  backoffMs: number;
  /** --push-allow entries (hosts, *.domain, *, addresses, CIDR ranges); empty allows every host. */
  allow: readonly string[];
  /**
   * Under --auth oauth2 (CONTRACT §15): refuse internal addresses (loopback, link-local, private, unique-local…)
   * that `allow` does not name, checked on the address connected to. Default false: no address check.
   */
  guardAddresses?: boolean;
  /** --push-client-cert, --push-client-certs, --push-ca: the TLS of https pushes; undefined: Node's defaults. */
  tls?: PushTls | undefined;
}

export interface PushDeps {
  /** Outbound HTTP; with guardAddresses it is given `connectTo` (OutboundInit), which the default fetch honours. */
  fetch: typeof fetch;
  /** A host name's address (default: the system resolver, as connections use). */
  lookup?: (host: string) => Promise<string>;
  events: SandboxEvents;
  now(): Date;
  monotonic(): number;
  random(): number;
}

/** A push's body is the `{"content": "<Bundle JSON>"}` envelope: JSON that holds FHIR, not a FHIR resource. */
const PUSH_CONTENT_TYPE = "application/json; charset=utf-8";

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
  /** The body's Content-Type, when it is not the envelope (an asynchronous answer's Bundle). */
  contentType?: string;
  /** An asynchronous answer: the journal id of the inbound call (answered 202) whose response message this is. */
  respondsTo?: string;
  /** The client certificate (a --push-client-certs name) its subscription asked to present; default --push-client-cert. */
  clientCertificate?: string | undefined;
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

/**
 * The most of a receiver's answer body the journal keeps; reading stops as soon as more has come (the rest is
 * never read), and what is kept ends with a marker saying how much was cut. A receiver is not trusted: its
 * answer must not fill the journal, nor tell a tenant more than whether it took the push.
 */
const MAX_ANSWER_BYTES = 4 * 1024;

/** A push refused before it could connect (not allowed, or an internal address): never retried. */
class PushRefused extends Error {}

const wait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Delivers pushes: a bounded number at a time across the whole process
 * (every workspace's pushes share the bound), each attempt with a timeout,
 * retried with exponential backoff and jitter on connection errors,
 * timeouts and 5xx (also 408 and 429), never on other answers; redirects are
 * not followed. Under --auth oauth2 the address connected to is checked
 * (`guardAddresses`): a refused one fails the push at once, not retried; so does a TLS failure (the receiver's
 * certificate not verified, or the sandbox's refused), which no retry mends. Every attempt is announced as an outbound call, the push's
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
    const refused = this.refusal(push.target) ?? this.#certificateRefusal(push);
    if (refused) {
      this.#record(push, 1, this.deps.now(), 0, null, refused);
      return { delivered: false, attempts: 1, status: null, error: refused };
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

  /** Why a target is refused before any connection (its scheme, its host, an internal literal address), or null. */
  refusal(target: string): string | null {
    const { allow, guardAddresses } = this.settings;
    if (!pushableScheme(target) || !hostAllowed(target, allow)) {
      return `target ${target} is not allowed (http/https only; --push-allow ${allow.join(",") || "*"})`;
    }
    const literal = guardAddresses ? literalAddressRefusal(target, allow) : null;
    return literal ? `target ${target} is refused: ${literal}` : null;
  }

  /** Why a push's certificate cannot be presented (a name the sandbox no longer has, e.g. after a restart), or null. */
  #certificateRefusal(push: Push): string | null {
    if (push.clientCertificate === undefined) return null;
    const { tls } = this.settings;
    const problem = tls
      ? tls.nameProblem(push.clientCertificate)
      : `the sandbox has no client certificate named ${JSON.stringify(push.clientCertificate)}: it was started without --push-client-certs`;
    return problem ? `target ${push.target} is refused: ${problem}` : null;
  }

  /** The address a guarded push connects to: the host resolved, then checked; a refusal rejects. */
  async #connectTo(host: string): Promise<string> {
    const address = isIP(host) ? host : await (this.deps.lookup ?? defaultLookup)(host);
    const refusal = addressRefusal(address, host, this.settings.allow);
    if (refusal) throw new PushRefused(refusal);
    return address;
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
      const init: OutboundInit = {
        method: "POST",
        headers: { "content-type": push.contentType ?? PUSH_CONTENT_TYPE, ...push.headers },
        body: push.body,
        redirect: "manual",
        signal: controller.signal,
        ...(this.settings.guardAddresses ? { connectTo: (host: string) => this.#connectTo(host) } : {}),
        ...this.#tlsOf(push),
      };
      const res = await this.deps.fetch(push.target, init);
      const text = await answerPrefix(res);
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
      const tls = tlsFailure(error);
      if (error instanceof PushRefused || tls) {
        const message = tls ?? `target ${push.target} is refused: ${(error as Error).message}`;
        this.#record(push, attempt, at, this.deps.monotonic() - started, null, message);
        return { delivered: false, retry: false, status: null, error: message };
      }
      const message = controller.signal.aborted
        ? `no answer within ${this.settings.timeoutMs} ms`
        : `${describeNetworkError(error)}${resetHint(error, /^https:/i.test(push.target))}`;
      this.#record(push, attempt, at, this.deps.monotonic() - started, null, message);
      return { delivered: false, retry: true, status: null, error: message };
    }
  }

  /** The TLS context of an https push: its certificate and the CAs to verify the receiver with (none for http). */
  #tlsOf(push: Push): Pick<OutboundInit, "secureContext"> {
    if (!push.target.toLowerCase().startsWith("https:")) return {};
    const context = this.settings.tls?.contextFor(push.clientCertificate);
    return context && !(context instanceof Error) ? { secureContext: context } : {};
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
          Object.entries({ "content-type": push.contentType ?? PUSH_CONTENT_TYPE, ...push.headers }),
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
      ...(push.respondsTo !== undefined ? { respondsTo: push.respondsTo } : {}),
    });
  }
}

const defaultLookup = async (host: string): Promise<string> => (await lookup(host)).address;

/**
 * The first MAX_ANSWER_BYTES of an answer body as text (a character cut in two left out), with a marker of how
 * much was cut when there was more; the body is cancelled as soon as more has come, so a receiver answering a
 * gigabyte costs one chunk, not a gigabyte.
 */
async function answerPrefix(res: Response): Promise<string> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(chunks).toString("utf8");
    chunks.push(value);
    size += value.byteLength;
    if (size > MAX_ANSWER_BYTES) break;
  }
  await reader.cancel().catch(() => undefined);
  const kept = new TextDecoder().decode(Buffer.concat(chunks).subarray(0, MAX_ANSWER_BYTES), { stream: true });
  const declared = Number(res.headers.get("content-length") ?? Number.NaN);
  const total = Number.isFinite(declared) ? `${declared} bytes` : `more than ${MAX_ANSWER_BYTES} bytes`;
  return `${kept}…[cut: the answer was ${total}; the journal keeps the first ${MAX_ANSWER_BYTES}]`;
}

function describeNetworkError(error: unknown): string {
  // node:http's errors carry their code themselves (connect ECONNREFUSED …).
  const own = (error as { code?: unknown; message?: string }).code;
  if (typeof own === "string" && own !== "ABORT_ERR") return `${own}: ${(error as Error).message}`;
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.code) return `${cause.code}${cause.message ? `: ${cause.message}` : ""}`;
  // fetch's own message is only "fetch failed": the reason is in its cause.
  const message = (error as Error).message ?? String(error);
  return cause?.message ? `${message}: ${cause.message}` : message;
}
