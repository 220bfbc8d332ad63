import { createHash } from "node:crypto";
import { decodeEnvelope } from "../envelope/envelope.js";
import type { CallDraft, CallRecord } from "../journal/call-record.js";
import { messageFingerprint } from "../pipeline/fingerprint.js";
import type { Workspace } from "../workspace/workspace.js";
import type { CallWatch, ObservedCall } from "./step-context.js";

/** What a call's draft shows that its journal record may not (redaction hides the Authorization header). */
type DraftFacts = Omit<ObservedCall, "record">;

/** Most calls a session keeps: a busy system's traffic over a long session must not pin the heap. */
export const MAX_WATCHED_CALLS = 10_000;

interface Waiter {
  test(call: ObservedCall): boolean;
  resolve(call: ObservedCall | undefined): void;
}

/**
 * The calls of one workspace as a session sees them, from the session's start on: its journal's records, each with
 * what the draft said before redaction. Listens only while the session runs (`close`), so that a workspace without
 * a session pays nothing per message.
 */
export class SessionCallWatch implements CallWatch {
  readonly #calls: ObservedCall[] = [];
  /** Calls forgotten to keep within `max` (the oldest): positions stay those of every call seen. */
  #forgotten = 0;
  readonly #waiters = new Set<Waiter>();
  /** The facts of the draft being recorded: the journal records it within the same `call:completed`. */
  #pending: { id: string | undefined; facts: DraftFacts } | undefined;
  readonly #unsubscribe: () => void;
  #closed = false;

  constructor(
    workspace: Workspace,
    private readonly max = MAX_WATCHED_CALLS,
  ) {
    const { events } = workspace;
    const completed = (draft: CallDraft) => {
      this.#pending = { id: draft.id, facts: draftFacts(draft) };
    };
    const recorded = (record: CallRecord) => {
      const pending = this.#pending;
      this.#pending = undefined;
      const facts =
        pending && (pending.id === undefined || pending.id === record.id)
          ? pending.facts
          : { authFingerprint: null, contentFingerprint: null, retryAfterMs: null };
      this.#add({ record, ...facts });
    };
    // Before the journal's own listener: the draft's facts are taken before it records (and announces) the call.
    events.prependListener("call:completed", completed);
    events.on("call:recorded", recorded);
    this.#unsubscribe = () => {
      events.off("call:completed", completed);
      events.off("call:recorded", recorded);
    };
  }

  #add(call: ObservedCall): void {
    this.#calls.push(call);
    if (this.#calls.length > this.max) {
      const drop = this.#calls.length - this.max;
      this.#calls.splice(0, drop);
      this.#forgotten += drop;
    }
    for (const waiter of [...this.#waiters]) {
      if (waiter.test(call)) {
        this.#waiters.delete(waiter);
        waiter.resolve(call);
      }
    }
  }

  /** The calls kept, oldest first: every call since the session started, up to the last `max`. */
  all(): readonly ObservedCall[] {
    return this.#calls;
  }

  get position(): number {
    return this.#forgotten + this.#calls.length;
  }

  next(
    test: (call: ObservedCall) => boolean,
    timeoutMs: number,
    from = this.position,
  ): Promise<ObservedCall | undefined> {
    for (let i = Math.max(0, from - this.#forgotten); i < this.#calls.length; i++) {
      const call = this.#calls[i] as ObservedCall;
      if (test(call)) return Promise.resolve(call);
    }
    if (this.#closed || timeoutMs <= 0) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        test,
        resolve: (call) => {
          clearTimeout(timer);
          resolve(call);
        },
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(waiter);
        resolve(undefined);
      }, timeoutMs);
      this.#waiters.add(waiter);
    });
  }

  /** Stops listening; every wait ends (undefined) at once. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#unsubscribe();
    for (const waiter of [...this.#waiters]) waiter.resolve(undefined);
    this.#waiters.clear();
  }
}

const header = (headers: Record<string, string> | undefined, name: string): string | undefined => {
  if (!headers) return undefined;
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return value;
  return undefined;
};

/** SHA-256 (hex, first 16) of the Authorization header: tells one token from another without keeping either. */
export function authFingerprint(value: string | undefined): string | null {
  return value ? createHash("sha256").update(value).digest("hex").slice(0, 16) : null;
}

/**
 * The request Bundle's content without what a retry or a new send may change: Bundle.id, timestamp, meta (as the
 * duplicate memory compares) and the MessageHeader's id and fullUrl, so that a resend under a new id is told.
 */
export function contentFingerprint(body: string): string | null {
  if (body === "") return null;
  const decoded = decodeEnvelope(body, true);
  if (!decoded.ok) return null;
  const bundle = decoded.bundle as unknown as Record<string, unknown>;
  const entries = Array.isArray(bundle.entry) ? (bundle.entry as unknown[]) : [];
  const entry = entries.map((e) => {
    if (e === null || typeof e !== "object") return e;
    const { resource, fullUrl, ...rest } = e as { resource?: unknown; fullUrl?: unknown };
    if (
      resource !== null &&
      typeof resource === "object" &&
      (resource as { resourceType?: unknown }).resourceType === "MessageHeader"
    ) {
      const { id: _id, ...header } = resource as Record<string, unknown>;
      return { ...rest, resource: header };
    }
    return fullUrl === undefined ? { ...rest, resource } : { ...rest, fullUrl, resource };
  });
  return messageFingerprint({ ...bundle, entry });
}

/** Retry-After in ms: delta-seconds, or an HTTP date counted from when the answer ended. */
export function retryAfterMs(value: string | undefined, answeredAt: number): number | null {
  if (value === undefined) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? null : Math.max(0, date - answeredAt);
}

function draftFacts(draft: CallDraft): DraftFacts {
  const inbound = draft.direction === "inbound";
  return {
    authFingerprint: inbound ? authFingerprint(header(draft.request.headers, "authorization")) : null,
    contentFingerprint: inbound ? contentFingerprint(draft.request.body) : null,
    retryAfterMs: retryAfterMs(header(draft.response?.headers, "retry-after"), draft.at.getTime() + draft.durationMs),
  };
}
