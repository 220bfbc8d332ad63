import type { YamlProblem } from "../config/yaml-file.js";
import type { SandboxChange, SandboxEvents } from "../events.js";
import type { CallRecord } from "../journal/call-record.js";
import { callSummary } from "../journal/call-summary.js";
import type { Order } from "../orders/order.js";
import { orderView } from "../orders/order-view.js";
import { jsonText } from "../text/json-text.js";

export interface LiveEventSettings {
  /** Most bytes held for one client that reads slower than events come; past it they are dropped for `overflow`. */
  maxQueuedBytes: number;
  /** A comment line this often, so that proxies keep the stream and a gone client is noticed. */
  heartbeatMs: number;
  /** How soon a client should reconnect after the stream breaks (the SSE `retry` field). */
  retryMs: number;
}

export const DEFAULT_LIVE_SETTINGS: LiveEventSettings = {
  maxQueuedBytes: 1024 * 1024,
  heartbeatMs: 15_000,
  retryMs: 1_000,
};

const frame = (event: string, data: unknown, id?: string) =>
  `${id === undefined ? "" : `id: ${id}\n`}event: ${event}\ndata: ${jsonText(data)}\n\n`;

/**
 * The sandbox's events as server-sent event streams (GET /__admin/events):
 * `call` (a call summary), `calls-cleared`, `order` (the order as
 * GET /__admin/orders/{id} shows it), `scenarios` (a reload and its problems),
 * `scenario-states` (states put back in Started by hand: how many, of which scenario and key).
 * Each stream holds at most `maxQueuedBytes` a client has not read: past
 * that, what is held is dropped and an `overflow` event tells the client to
 * fetch again. A stream stops listening when its client goes or on close().
 */
export class LiveEvents {
  readonly #open = new Set<() => void>();

  constructor(
    private readonly events: SandboxEvents,
    private readonly settings: LiveEventSettings = DEFAULT_LIVE_SETTINGS,
  ) {}

  /** Streams open now. */
  get open(): number {
    return this.#open.size;
  }

  /** Ends every open stream (the sandbox is closing): clients see the end, not a cut connection. */
  close(): void {
    for (const end of [...this.#open]) end();
  }

  /** A stream of `events` (a workspace's bus; default the one given at construction). */
  stream(events: SandboxEvents = this.events): ReadableStream<Uint8Array> {
    const { settings } = this;
    const encoder = new TextEncoder();
    let queue: Uint8Array[] = [];
    let queued = 0;
    /** Events dropped since the client last read: told as one `overflow` event before what follows. */
    let dropped = 0;
    let ended = false;
    let wake: (() => void) | undefined;
    let heartbeat: NodeJS.Timeout | undefined;

    const enqueue = (text: string) => {
      if (ended) return;
      const bytes = encoder.encode(text);
      if (queued + bytes.length > settings.maxQueuedBytes) {
        // A client this far behind fetches again instead: drop what it has not read (keep the newest), tell it so.
        dropped += queue.length;
        queue = [];
        queued = 0;
      }
      queue.push(bytes);
      queued += bytes.length;
      wake?.();
    };
    const onCall = (call: CallRecord) => enqueue(frame("call", callSummary(call), call.id));
    const onCleared = () => enqueue(frame("calls-cleared", {}));
    const onOrder = (order: Order) => enqueue(frame("order", orderView(order)));
    const onScenarios = (result: { ok: boolean; problems: YamlProblem[] }) => enqueue(frame("scenarios", result));
    const onChange = (change: SandboxChange) => {
      if (change.change === "states-reset")
        enqueue(frame("scenario-states", { reset: change.states, scenario: change.scenario, key: change.key }));
    };
    const end = () => {
      if (ended) return;
      ended = true;
      events.off("call:recorded", onCall);
      events.off("journal:cleared", onCleared);
      events.off("order:updated", onOrder);
      events.off("scenarios:loaded", onScenarios);
      events.off("sandbox:changed", onChange);
      clearInterval(heartbeat);
      this.#open.delete(end);
      wake?.();
    };

    return new ReadableStream<Uint8Array>(
      {
        start: () => {
          this.#open.add(end);
          events.on("call:recorded", onCall);
          events.on("journal:cleared", onCleared);
          events.on("order:updated", onOrder);
          events.on("scenarios:loaded", onScenarios);
          events.on("sandbox:changed", onChange);
          heartbeat = setInterval(() => enqueue(": keep-alive\n\n"), settings.heartbeatMs);
          heartbeat.unref();
          enqueue(`retry: ${settings.retryMs}\n${frame("ready", {})}`);
        },
        // Pulled only as the client reads (highWaterMark 0): what it has not read waits in the bounded queue.
        pull: async (controller) => {
          while (queue.length === 0 && !ended) await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
          if (dropped > 0) {
            controller.enqueue(encoder.encode(frame("overflow", { dropped })));
            dropped = 0;
          }
          if (queue.length > 0) {
            const chunk = concat(queue, queued);
            queue = [];
            queued = 0;
            controller.enqueue(chunk);
          }
          if (ended && queue.length === 0) controller.close();
        },
        cancel: end,
      },
      { highWaterMark: 0 },
    );
  }
}

function concat(chunks: Uint8Array[], length: number): Uint8Array {
  if (chunks.length === 1) return chunks[0] as Uint8Array;
  const out = new Uint8Array(length);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}
