import type { CallRecord } from "./call-record.js";

/**
 * The value of each `fullUrl` member in a body, as written: the message Bundle itself, or one carried as the JSON
 * string of the `{"content": …}` envelope (its quotes escaped). A value with an escape in it is cut there: ids and
 * type names have none, so the URL of a resource is never cut.
 */
const FULL_URL = /fullUrl\\?"\s*:\s*\\?"([^"\\]*)/g;

/** A RESTful fullUrl's last two segments, `…/{type}/{id}`, as the read routes accept them (R4 id: 1–64 characters). */
const REST_TAIL = /\/([A-Z][A-Za-z]{1,63})\/([A-Za-z0-9\-.]{1,64})$/;

/** The key of `type/id` in the index. */
const keyOf = (type: string, id: string): string => `${type}/${id}`;

/**
 * A copy of a key that holds nothing of the body it was found in: a regex capture is a slice of the body, which would
 * keep the whole body alive (unpacked) as long as the key is kept.
 */
const detached = (key: string): string => Buffer.from(key, "latin1").toString("latin1");

/** The calls that carried one `type/id`, oldest first. */
interface Slot {
  key: string;
  calls: CallRecord[];
}

/**
 * Which of a journal's calls carried a resource under a RESTful fullUrl (`…/{type}/{id}`): a read of a resource the
 * workspace no longer holds (an OperationOutcome it sent, a resource it echoed, an order's once the order is gone)
 * parses only the bodies of those calls, newest first, and a read of an id no call carried parses none. Kept in step
 * with the journal: a call is added as it is kept (recorded, or restored from a state file), removed as the journal's
 * limits drop it, all of them when it is cleared; so it holds no more than the journal does.
 *
 * What it costs: the scan of each answer (a push: its request) for `fullUrl` as the call is kept, and per call one
 * array of the slots it is in; per `type/id`, a slot (its key and the array of its calls).
 *
 * @example
 *   index.add(call, call.response.body); // as the journal keeps an inbound call
 *   index.calls("OperationOutcome", "3f2…"); // the calls that carried it, newest first
 */
export class ResourceIndex {
  readonly #slots = new Map<string, Slot>();
  /** The slots each indexed call is in, to take it out when the journal drops it. */
  readonly #ofCall = new Map<CallRecord, Slot[]>();

  /** Indexes the RESTful fullUrls of `body`, the text of the call's answer (an inbound call) or push (an outbound one). */
  add(call: CallRecord, body: string | undefined): void {
    if (!body?.includes("fullUrl")) return;
    const slots: Slot[] = [];
    for (const match of body.matchAll(FULL_URL)) {
      const tail = REST_TAIL.exec(match[1] as string);
      if (!tail) continue;
      const key = keyOf(tail[1] as string, tail[2] as string);
      let slot = this.#slots.get(key);
      if (!slot) {
        // Most resources are carried by one call: an array of one (a push to an empty one reserves 17 places).
        slot = { key: detached(key), calls: [call] };
        this.#slots.set(slot.key, slot);
      } else if (slot.calls.at(-1) === call) {
        // A body that names a resource twice is one call of its slot.
        continue;
      } else slot.calls.push(call);
      slots.push(slot);
    }
    // Kept at its size (slice), not with the room the pushes reserved.
    if (slots.length > 0) this.#ofCall.set(call, slots.slice());
  }

  /** Forgets a call the journal dropped: its oldest, so first in each of its slots. */
  remove(call: CallRecord): void {
    const slots = this.#ofCall.get(call);
    if (!slots) return;
    this.#ofCall.delete(call);
    for (const slot of slots) {
      const at = slot.calls[0] === call ? 0 : slot.calls.indexOf(call);
      if (at >= 0) slot.calls.splice(at, 1);
      if (slot.calls.length === 0) this.#slots.delete(slot.key);
    }
  }

  clear(): void {
    this.#slots.clear();
    this.#ofCall.clear();
  }

  /** The calls whose answer or push carried `type/id` under a RESTful fullUrl, newest first (none: nothing walked). */
  *calls(type: string, id: string): Generator<CallRecord> {
    const calls = this.#slots.get(keyOf(type, id))?.calls ?? [];
    for (let i = calls.length - 1; i >= 0; i--) yield calls[i] as CallRecord;
  }

  /** How many `type/id` and how many calls are indexed (for tests and the docs' figures). */
  get size(): { resources: number; calls: number } {
    return { resources: this.#slots.size, calls: this.#ofCall.size };
  }
}
