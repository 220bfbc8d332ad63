import type { CallRecord } from "./call-record.js";
import { keyOf, restKeysOf } from "./rest-keys.js";

/**
 * The calls under one key, oldest first, from `head` on. The journal drops its oldest call first, so a removal is
 * `head` moving on, not a shift of every later call: a patient named by each of 10,000 kept answers cost a copy of
 * 10,000 slots per dropped call, 15 times per profile answer. The slots before `head` are let go now and then.
 */
class Queue {
  head = 0;
  constructor(readonly items: (CallRecord | undefined)[]) {}

  get newest(): CallRecord | undefined {
    return this.items[this.items.length - 1];
  }

  get length(): number {
    return this.items.length - this.head;
  }

  remove(call: CallRecord): void {
    const { items } = this;
    if (items[this.head] === call) {
      items[this.head++] = undefined;
      if (this.head >= 16 && this.head * 2 >= items.length) {
        items.splice(0, this.head);
        this.head = 0;
      }
      return;
    }
    const at = items.indexOf(call, this.head);
    if (at >= 0) items.splice(at, 1);
  }
}

/** Most resources are carried by one call, kept without a queue. */
type Carriers = CallRecord | Queue;

/** The keys a body names, before the repeats are taken out: one array for the process (add is synchronous). */
const scratchKeys: number[] = [];
/** The keys a call is kept under, before they are copied for it. */
const scratchKept: number[] = [];

/**
 * Which of a journal's calls carried a resource under a RESTful fullUrl (`…/{type}/{id}`): a read of a resource the
 * workspace no longer holds (an OperationOutcome it sent, a resource it echoed, an order's once the order is gone)
 * parses only the bodies of those calls, newest first, and a read of an id no call carried parses none. Kept in step
 * with the journal: a call is added as it is kept (recorded, or restored from a state file), removed as the journal's
 * limits drop it, all of them when it is cleared; so it holds no more than the journal does.
 *
 * What it costs: a scan of each answer (a push: its request) for `fullUrl` as the call is kept; per resource named, a
 * map entry (its key and its call) and the key again in the call's list, to take it out when the call goes.
 *
 * @example
 *   index.add(call, call.response.body); // as the journal keeps an inbound call
 *   [...index.calls("OperationOutcome", "3f2…")]; // the calls that carried it, newest first
 */
export class ResourceIndex {
  readonly #carriers = new Map<number, Carriers>();
  /** The keys each indexed call is under. */
  readonly #keysOf = new Map<CallRecord, number | number[]>();

  /** Indexes the RESTful fullUrls of `body`, the text of the call's answer (an inbound call) or push (an outbound one). */
  add(call: CallRecord, body: string | undefined): void {
    if (!body?.includes("fullUrl")) return;
    const named = scratchKeys;
    named.length = 0;
    restKeysOf(body, named);
    const keys = scratchKept;
    keys.length = 0;
    for (const key of named) {
      const carriers = this.#carriers.get(key);
      if (carriers === undefined) this.#carriers.set(key, call);
      // A body that names a resource twice is one call under its key (the call being added is the newest: last).
      else if (carriers === call || (carriers instanceof Queue && carriers.newest === call)) continue;
      else if (carriers instanceof Queue) carriers.items.push(call);
      else this.#carriers.set(key, new Queue([carriers, call]));
      keys.push(key);
    }
    // A copy of exactly its length: an array grown by push keeps spare slots (17 for 2 keys), per call kept.
    if (keys.length > 0) this.#keysOf.set(call, keys.length === 1 ? (keys[0] as number) : keys.slice());
  }

  /** Forgets a call the journal dropped: its oldest, so first under each of its keys. */
  remove(call: CallRecord): void {
    const keys = this.#keysOf.get(call);
    if (keys === undefined) return;
    this.#keysOf.delete(call);
    for (const key of typeof keys === "number" ? [keys] : keys) {
      const carriers = this.#carriers.get(key);
      if (carriers === call) this.#carriers.delete(key);
      else if (carriers instanceof Queue) {
        carriers.remove(call);
        if (carriers.length === 1) this.#carriers.set(key, carriers.newest as CallRecord);
      }
    }
  }

  clear(): void {
    this.#carriers.clear();
    this.#keysOf.clear();
  }

  /**
   * The calls whose answer or push carried `type/id` under a RESTful fullUrl, newest first (none: nothing walked);
   * rarely one that carried another resource of the same key, which the caller's check of the entries passes over.
   */
  *calls(type: string, id: string): Generator<CallRecord> {
    const carriers = this.#carriers.get(keyOf(type, id));
    if (carriers === undefined) return;
    if (!(carriers instanceof Queue)) {
      yield carriers;
      return;
    }
    const { items, head } = carriers;
    for (let i = items.length - 1; i >= head; i--) yield items[i] as CallRecord;
  }

  /** How many keys (about one per `type/id`) and how many calls are indexed. */
  get size(): { resources: number; calls: number } {
    return { resources: this.#carriers.size, calls: this.#keysOf.size };
  }
}
