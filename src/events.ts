import { EventEmitter } from "node:events";
import type { YamlProblem } from "./config/yaml-file.js";
import type { CallDraft, CallRecord } from "./journal/call-record.js";
import type { Order } from "./orders/order.js";

/** Lifecycle events of the sandbox; observers (the journal, waiters) subscribe, the request path only emits. */
export interface SandboxEventMap {
  /** An inbound call was answered, or an outbound delivery attempt ended. */
  "call:completed": [CallDraft];
  /** The journal stored a call. */
  "call:recorded": [CallRecord];
  /** The journal was emptied (DELETE /__admin/calls, a reset). */
  "journal:cleared": [];
  /** An order changed state (created, delivered, confirmed, allocated, dispensed, expired, cancelled). */
  "order:updated": [Order];
  /** An admin API request was answered (emitted only while someone listens: the request log at debug level). */
  "admin:answered": [{ method: string; path: string; status: number; durationMs: number }];
  /** The scenarios folder was loaded or reloaded; on problems the previous set keeps serving. */
  "scenarios:loaded": [{ ok: boolean; problems: YamlProblem[] }];
}

export class SandboxEvents extends EventEmitter<SandboxEventMap> {
  constructor() {
    super();
    // Waiters (long-polls) subscribe one each; there is no fixed bound on them.
    this.setMaxListeners(0);
  }
}
