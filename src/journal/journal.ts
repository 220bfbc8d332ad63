import type { SandboxEvents } from "../events.js";
import { PackedTexts } from "../text/packed-texts.js";
import { DEFAULT_WORKSPACE } from "../workspace/workspace-name.js";
import { CallIds } from "./call-ids.js";
import type { CallDraft, CallRecord } from "./call-record.js";
import { keptCall } from "./kept-call.js";
import { Redaction } from "./redact.js";
import { ResourceIndex } from "./resource-index.js";

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

/** A page of the journal: a filter, a direction, where to go on from, and how many. */
export interface PageQuery extends Omit<CallFilter, "limit"> {
  /** asc: oldest first (the default); desc: newest first. */
  order?: "asc" | "desc";
  /**
   * Go on after this cursor (a `next` of an earlier page), in `order`. Without it, desc starts at the newest call
   * and asc gives the most recent `limit` calls (as `limit` always did); cursor 0 starts asc at the oldest.
   */
  cursor?: number;
  /** At most this many calls. */
  limit?: number;
  /** And only calls this predicate holds for (a compiled CallSearch). */
  where?: (call: CallRecord) => boolean;
}

export interface CallPage {
  calls: CallRecord[];
  /** The cursor of the next page in the same order, or null when no further call matches (yet). */
  next: number | null;
}

export interface JournalSettings {
  /** Where ids come from: the process-wide sequence; default a new one from 1. */
  ids?: CallIds;
  /** What of a call may be kept (--redact-header adds header names). */
  redaction?: Redaction;
  /** The workspace whose calls it records: every record names it. */
  workspace?: string;
  /** Where the bodies are kept (shared with the workspace's duplicate memory); default its own. */
  texts?: PackedTexts;
  /** Hears each call the limits made it drop (the state file forgets it too). */
  dropped?(call: CallRecord): void;
  /**
   * Writes a call to the state file before it is kept and announced; false: it could not be, and the call is
   * neither (its caller answers otherwise, and records that answer).
   */
  save?(call: CallRecord): boolean;
}

/**
 * The call journal of one workspace: a bounded, ordered record of its
 * calls. It observes `call:completed` events and announces `call:recorded`;
 * nothing on the request path calls it directly.
 */
export class Journal {
  /** Slots before #start are dropped calls, emptied so they are not kept alive until the next compaction. */
  readonly #calls: Array<CallRecord | undefined> = [];
  /** Position of each call in recording order, aligned with #calls: a page cursor that survives dropped calls. */
  readonly #seqs: number[] = [];
  #start = 0;
  #bytes = 0;
  #nextSeq = 1;
  readonly #ids: CallIds;
  readonly #workspace: string;
  readonly #texts: PackedTexts;
  readonly #redaction: Redaction;
  readonly #dropped: ((call: CallRecord) => void) | undefined;
  readonly #save: ((call: CallRecord) => boolean) | undefined;
  /** Which calls carried each RESTful fullUrl (a REST read looks there), in step with what is kept. */
  readonly resources = new ResourceIndex();

  constructor(
    readonly limits: JournalLimits,
    private readonly events: SandboxEvents,
    settings: JournalSettings = {},
  ) {
    const {
      ids = new CallIds(),
      redaction = new Redaction(),
      workspace = DEFAULT_WORKSPACE,
      texts = new PackedTexts(),
    } = settings;
    this.#ids = ids;
    this.#workspace = workspace;
    this.#texts = texts;
    this.#redaction = redaction;
    this.#dropped = settings.dropped;
    this.#save = settings.save;
    events.on("call:completed", (draft) => this.#record(draft));
  }

  #record(draft: CallDraft): void {
    // Redacted as it is kept: every view of the journal (admin API, verify, exports, the file) reads this record.
    // Bodies are packed with other calls' bodies (PackedTexts): about a fifth of the memory of keeping them as strings.
    const id = draft.id ?? this.#ids.next();
    const record = keptCall(draft, { id, workspace: this.#workspace }, this.#texts, this.#redaction);
    if (this.#save && !this.#save(record)) return;
    this.resources.add(record, carried(draft));
    this.#keep(record);
    this.events.emit("call:recorded", record);
  }

  /**
   * Calls a state file kept (as `draft`s with their ids, redacted already), oldest first, instead of those held;
   * not announced: they are no news. Each keeps its page cursor (`seq`, when the file has it), and numbering goes
   * on from `nextSeq` (or after the last), so that a cursor a client took before a restart goes on after it.
   */
  restore(calls: Iterable<{ draft: CallDraft & { id: string }; seq: number | undefined }>, nextSeq = 1): void {
    this.#calls.length = 0;
    this.#seqs.length = 0;
    this.#start = 0;
    this.#bytes = 0;
    this.#nextSeq = 1;
    this.resources.clear();
    for (const { draft, seq } of calls) {
      const record = keptCall(draft, { id: draft.id, workspace: this.#workspace }, this.#texts, this.#redaction);
      this.resources.add(record, carried(draft));
      // Cursors only grow (pages search them): a file's own order is theirs.
      this.#keep(record, Math.max(seq ?? 0, this.#nextSeq));
    }
    this.#nextSeq = Math.max(this.#nextSeq, nextSeq);
  }

  /** The page cursor the next call recorded gets: the call recorded last has the one before. */
  get nextSeq(): number {
    return this.#nextSeq;
  }

  #keep(record: CallRecord, seq = this.#nextSeq): void {
    this.#calls.push(record);
    this.#seqs.push(seq);
    this.#nextSeq = seq + 1;
    this.#bytes += record.size;
    while (this.#live() > this.limits.maxCalls || (this.#bytes > this.limits.maxBytes && this.#live() > 1)) {
      const dropped = this.#calls[this.#start];
      this.#calls[this.#start] = undefined;
      this.#start++;
      this.#bytes -= dropped?.size ?? 0;
      if (dropped) {
        this.resources.remove(dropped);
        this.#dropped?.(dropped);
      }
    }
    // Compact now and then so dropped calls do not pin memory.
    if (this.#start > 1024 && this.#start * 2 > this.#calls.length) {
      this.#calls.splice(0, this.#start);
      this.#seqs.splice(0, this.#start);
      this.#start = 0;
    }
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
    return this.#ids.next();
  }

  /** The highest id handed out so far (by any journal sharing the sequence), to calls recorded or still in flight. */
  get highestIdIssued(): number {
    return this.#ids.highestIssued;
  }

  #live(): number {
    return this.#calls.length - this.#start;
  }

  get size(): number {
    return this.#live();
  }

  /** Deflated bytes of the packed blocks its bodies went into (shared with the duplicate memory), so far. */
  get packedBytes(): number {
    return this.#texts.packedBytes;
  }

  /** Body bytes held (UTF-8), against limits.maxBytes. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Calls matching the filter, oldest first. */
  list(filter: CallFilter = {}): CallRecord[] {
    const out: CallRecord[] = [];
    for (let i = this.#start; i < this.#calls.length; i++) {
      const call = this.#calls[i] as CallRecord;
      if (matches(call, filter)) out.push(call);
    }
    return filter.limit !== undefined ? out.slice(Math.max(0, out.length - filter.limit)) : out;
  }

  /**
   * One page of the calls matching the query, and the cursor of the next.
   * Walks only as far as the page reaches, so a first page of a full journal
   * costs what the page holds.
   *
   * @example
   *   journal.page({ order: "desc", limit: 50 }); // the 50 newest, newest first, and a cursor to older ones
   *   journal.page({ cursor: 0, limit: 50 }); // the 50 oldest; then journal.page({ cursor: next, limit: 50 })
   */
  page(query: PageQuery = {}): CallPage {
    const { order = "asc", cursor, limit = Number.POSITIVE_INFINITY } = query;
    const calls: CallRecord[] = [];
    const end = this.#calls.length;
    if (order === "asc" && cursor === undefined) {
      // As `limit` always meant: the most recent matches, oldest first; nothing newer yet.
      for (let i = end - 1; i >= this.#start && calls.length < limit; i--) {
        const call = this.#calls[i] as CallRecord;
        if (matches(call, query)) calls.push(call);
      }
      return { calls: calls.reverse(), next: null };
    }
    const step = order === "asc" ? 1 : -1;
    let i =
      order === "asc" ? this.#firstAfter(cursor ?? 0) : this.#firstAfter((cursor ?? Number.MAX_SAFE_INTEGER) - 1) - 1;
    let last = -1;
    for (; i >= this.#start && i < end; i += step) {
      const call = this.#calls[i] as CallRecord;
      if (!matches(call, query)) continue;
      if (calls.length === limit) return { calls, next: this.#seqs[last] as number };
      calls.push(call);
      last = i;
    }
    return { calls, next: null };
  }

  /** Index of the first live call recorded after sequence number `seq` (binary search: #seqs only grows). */
  #firstAfter(seq: number): number {
    let lo = this.#start;
    let hi = this.#calls.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.#seqs[mid] as number) <= seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  get(id: string): CallRecord | undefined {
    for (let i = this.#start; i < this.#calls.length; i++) {
      const call = this.#calls[i] as CallRecord;
      if (call.id === id) return call;
    }
    return undefined;
  }

  clear(): void {
    this.#calls.length = 0;
    this.#seqs.length = 0;
    this.#start = 0;
    this.#bytes = 0;
    this.resources.clear();
    this.events.emit("journal:cleared");
  }
}

/** The body whose fullUrls a REST read may follow: an inbound call's answer, an outbound call's push. */
const carried = (draft: CallDraft): string | undefined =>
  draft.direction === "inbound" ? draft.response?.body : draft.request.body;

function matches(call: CallRecord, filter: Omit<PageQuery, "order" | "cursor" | "limit">): boolean {
  return (
    (filter.operation === undefined || call.operation === filter.operation) &&
    (filter.direction === undefined || call.direction === filter.direction) &&
    (filter.messageId === undefined || call.messageId === filter.messageId) &&
    (filter.since === undefined || call.at >= filter.since) &&
    (filter.where === undefined || filter.where(call))
  );
}
