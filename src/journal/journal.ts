import type { SandboxEvents } from "../events.js";
import type { CallDraft, CallRecord } from "./call-record.js";
import { Redaction } from "./redact.js";

export interface JournalLimits {
  /** Most calls kept; the oldest go first. */
  maxCalls: number;
  /** Most body bytes kept (UTF-8); the oldest calls go first. */
  maxBytes: number;
}

export interface CallFilter {
  operation?: string;
  direction?: "inbound" | "outbound";
  /** Calls that started at or after this instant. */
  since?: Date;
  messageId?: string;
  /** Only the most recent N matches (still oldest first). */
  limit?: number;
}

/**
 * The call journal: a bounded, ordered record of every call. It observes
 * `call:completed` events and announces `call:recorded`; nothing on the
 * request path calls it directly.
 */
export class Journal {
  /** Slots before #start are dropped calls, emptied so they are not kept alive until the next compaction. */
  readonly #calls: Array<CallRecord | undefined> = [];
  #start = 0;
  #bytes = 0;
  #nextId = 1;

  constructor(
    readonly limits: JournalLimits,
    private readonly events: SandboxEvents,
    /** First id to hand out: continues a journal file's numbering. */
    firstId = 1,
    /** What of a call may be kept (--redact-header adds header names). */
    redaction = new Redaction(),
  ) {
    this.#nextId = firstId;
    // Redacted before it is stored: every view of the journal (admin API, verify, exports, the file) reads this record.
    events.on("call:completed", (draft) => this.#record(redaction.call(draft)));
  }

  #record(draft: Omit<CallDraft, "secretHeaders">): void {
    // Kept as JS strings on purpose: the GC compacts them, where many mid-sized off-heap buffers fragment the process's memory.
    const size = Buffer.byteLength(draft.request.body) + (draft.response ? Buffer.byteLength(draft.response.body) : 0);
    const record: CallRecord = { ...draft, id: draft.id ?? String(this.#nextId++), size };
    this.#calls.push(record);
    this.#bytes += size;
    while (this.#live() > this.limits.maxCalls || (this.#bytes > this.limits.maxBytes && this.#live() > 1)) {
      const dropped = this.#calls[this.#start];
      this.#calls[this.#start] = undefined;
      this.#start++;
      this.#bytes -= dropped?.size ?? 0;
    }
    // Compact now and then so dropped calls do not pin memory.
    if (this.#start > 1024 && this.#start * 2 > this.#calls.length) {
      this.#calls.splice(0, this.#start);
      this.#start = 0;
    }
    this.events.emit("call:recorded", record);
  }

  /**
   * The next call id, handed out now for a call recorded when it completes:
   * an inbound message learns its id up front (a later reuse of its
   * MessageHeader id names it).
   *
   * @example
   *   const id = journal.reserveId(); // "7"; emit call:completed with { id, ... } later
   */
  reserveId(): string {
    return String(this.#nextId++);
  }

  /** The highest id handed out so far, to calls recorded or still in flight (0 before the first). */
  get highestIdIssued(): number {
    return this.#nextId - 1;
  }

  #live(): number {
    return this.#calls.length - this.#start;
  }

  get size(): number {
    return this.#live();
  }

  /** Calls matching the filter, oldest first. */
  list(filter: CallFilter = {}): CallRecord[] {
    const out: CallRecord[] = [];
    for (let i = this.#start; i < this.#calls.length; i++) {
      const call = this.#calls[i] as CallRecord;
      if (filter.operation !== undefined && call.operation !== filter.operation) continue;
      if (filter.direction !== undefined && call.direction !== filter.direction) continue;
      if (filter.messageId !== undefined && call.messageId !== filter.messageId) continue;
      if (filter.since !== undefined && call.at < filter.since) continue;
      out.push(call);
    }
    return filter.limit !== undefined ? out.slice(Math.max(0, out.length - filter.limit)) : out;
  }

  get(id: string): CallRecord | undefined {
    return this.list().find((c) => c.id === id);
  }

  clear(): void {
    this.#calls.length = 0;
    this.#start = 0;
    this.#bytes = 0;
  }
}
