import type { Task } from "fhir/r4.js";
import { type LimitRefusal, overLimit } from "../config/state-limits.js";
import type { SandboxEvents } from "../events.js";
import { type Issue, issue } from "../fhir/outcome.js";
import type { SandboxLogger } from "../log/logger.js";
import type { PushDispatcher } from "../push/dispatcher.js";
import { NO_STATE, type StateSink } from "../state/state-sink.js";
import type { SandboxStore } from "../store/sandbox-store.js";
import type { Order, OrderState, PharmacyRequest } from "./order.js";
import type { PharmacyRegistry } from "./pharmacy-registry.js";

export type AllocationPolicy = "first-confirmed" | "best-at-deadline" | "manual";

export interface WorkflowDeps {
  seed: string;
  emiratesIdSystem: string;
  confirmDeadlineMs: number;
  allocation: AllocationPolicy;
  now(): Date;
  newId(): string;
  store: SandboxStore;
  pharmacies: PharmacyRegistry;
  dispatcher: PushDispatcher;
  events: SandboxEvents;
  /** Where failed pushes and failures of background work (after a push, at a deadline) go. */
  logger: SandboxLogger;
  /**
   * Where pharmacies reach this workspace's message paths: the sandbox's URL as they see it, the workspace's
   * prefix and the base path. Pushes name their source and fullUrls under it, so answers lead back here.
   */
  sandboxUrl(): string;
  /** Most orders held (--max-orders); default no limit. */
  maxOrders?: number;
  /** Where the book says what changed, for the state file (--state-file). */
  sink?: StateSink;
}

export type WorkflowResult<T> = { ok: true; value: T } | { ok: false; issues: Issue[] };

export const fail = <T>(...issues: Issue[]): WorkflowResult<T> => ({ ok: false, issues });

/** Orders that can no longer change: the first to go when the book is full. */
const FINISHED: ReadonlySet<OrderState> = new Set(["dispensed", "expired", "cancelled"]);

/**
 * The orders of one sandbox and what finds them: by id, by a pharmacy's
 * fulfillment Task, by MedicationRequest; their confirmation-deadline timers
 * and their numbering. The steps of the flow (create-order, confirm,
 * allocate, deadline, dispense, cancel) share it. It holds at most `max`
 * orders: a new one past it takes the place of the oldest finished one, or is
 * refused while every order held is still open or allocated.
 */
export class OrderBook {
  /** In the order they were made: the first finished one found is the oldest. */
  readonly #orders = new Map<string, Order>();
  readonly #byTask = new Map<string, { order: Order; request: PharmacyRequest }>();
  readonly #byRequest = new Map<string, Order>();
  readonly #timers = new Map<string, ReturnType<typeof setTimeout>>();
  #sequence = 0;
  #evicted = 0;

  constructor(
    readonly max: number = Number.POSITIVE_INFINITY,
    private readonly sink: StateSink = NO_STATE,
  ) {}

  /** Says the order changed, for the state file: written as it is when the change is. */
  saved(order: Order): void {
    if (this.sink.active && this.#orders.get(order.id) === order) this.sink.put("order", order.id, () => order);
  }

  /** The orders and numbering a state file kept, instead of those held (no timers: the workflow sets them). */
  restore(orders: readonly Order[], sequence: number): void {
    this.clear();
    for (const order of orders) this.#index(order);
    this.#sequence = sequence;
  }

  get(id: string): Order | undefined {
    return this.#orders.get(id);
  }

  list(): Order[] {
    return [...this.#orders.values()];
  }

  get size(): number {
    return this.#orders.size;
  }

  /** The number of the next order: 1, 2, … (again from 1 after clear). */
  nextNumber(): number {
    const n = ++this.#sequence;
    if (this.sink.active) this.sink.put("orders", "sequence", () => this.#sequence);
    return n;
  }

  /** Orders not finished: open or allocated. */
  get live(): number {
    let n = 0;
    for (const order of this.#orders.values()) if (!FINISHED.has(order.state)) n++;
    return n;
  }

  /** Finished orders forgotten to make room since the start (or the last clear). */
  get evicted(): number {
    return this.#evicted;
  }

  /** Fulfillment requests held: one per pharmacy an order went to (what an order's memory grows with). */
  get requests(): number {
    return this.#byTask.size;
  }

  /** Why a new order cannot be kept now, if it cannot: the book is full of orders still open or allocated. */
  noRoom(): LimitRefusal | undefined {
    if (this.#orders.size < this.max || this.#oldestFinished() !== undefined) return undefined;
    return overLimit(
      "orders",
      { held: this.#orders.size, adding: 1, max: this.max, unit: "orders, none of them finished," },
      "Finished orders (dispensed, expired, cancelled) make room by themselves: cancel open or allocated ones (POST /__admin/orders/{id}/cancel), let their confirmation deadline pass, or reset the workspace (POST /__admin/reset).",
    );
  }

  #oldestFinished(): Order | undefined {
    for (const order of this.#orders.values()) if (FINISHED.has(order.state)) return order;
    return undefined;
  }

  /** Forgets an order: a late message naming its Task is then answered as for a Task the sandbox never sent. */
  #forget(order: Order): void {
    this.clearTimer(order.id);
    this.#orders.delete(order.id);
    for (const r of order.requests) this.#byRequest.delete(r.id as string);
    for (const request of order.pharmacies) this.#byTask.delete(request.task.id as string);
    this.#evicted++;
    if (this.sink.active) this.sink.remove("order", order.id);
  }

  /**
   * Keeps a new order, findable by its fulfillment Tasks and its requests; when full, the oldest finished order
   * goes first (noRoom said there is one).
   */
  add(order: Order): void {
    if (this.#orders.size >= this.max) {
      const oldest = this.#oldestFinished();
      if (oldest) this.#forget(oldest);
    }
    this.#index(order);
    this.saved(order);
  }

  #index(order: Order): void {
    this.#orders.set(order.id, order);
    for (const r of order.requests) this.#byRequest.set(r.id as string, order);
    for (const request of order.pharmacies) this.#byTask.set(request.task.id as string, { order, request });
  }

  /** The order and pharmacy request a fulfillment Task id belongs to. */
  byTask(taskId: string): { order: Order; request: PharmacyRequest } | undefined {
    return this.#byTask.get(taskId);
  }

  /** The order a MedicationRequest / DeviceRequest id belongs to. */
  byRequest(requestId: string): Order | undefined {
    return this.#byRequest.get(requestId);
  }

  /** Runs `fn` after `ms` for an order (its confirmation deadline); one timer per order. */
  setTimer(orderId: string, ms: number, fn: () => void): void {
    this.#timers.set(orderId, setTimeout(fn, ms));
  }

  /** Stops an order's timer, if it has one (it was allocated or cancelled before its deadline, or the timer fired). */
  clearTimer(orderId: string): void {
    clearTimeout(this.#timers.get(orderId));
    this.#timers.delete(orderId);
  }

  /** Forgets every order and stops its timers (POST /__admin/reset). */
  clear(): void {
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    this.#orders.clear();
    this.#byTask.clear();
    this.#byRequest.clear();
    this.#sequence = 0;
    this.#evicted = 0;
    this.sink.removeAll("order");
    this.sink.removeAll("orders");
  }
}

/** What every step of the order flow works with: the dependencies and the orders. */
export interface OrderContext {
  deps: WorkflowDeps;
  book: OrderBook;
}

/** Records a change in the order's history and announces it. */
export function changed(ctx: OrderContext, order: Order, event: string): void {
  order.history.push({ at: ctx.deps.now(), event });
  ctx.book.saved(order);
  ctx.deps.events.emit("order:updated", order);
}

/** Work nobody awaits (a push and what follows its answer): a failure is logged, never an unhandled rejection. */
export function inBackground(ctx: OrderContext, what: string, work: () => Promise<void>): void {
  work().catch((error: unknown) => ctx.deps.logger.error(`${what} failed`, error));
}

/** A timer's callback: a failure is logged instead of ending the process as an uncaught exception. */
export function guarded(ctx: OrderContext, what: string, work: () => void): () => void {
  return () => {
    try {
      work();
    } catch (error) {
      ctx.deps.logger.error(`${what} failed`, error);
    }
  };
}

/** A pharmacy's fulfillment Task changes: a new version, stamped now. */
export function touch(ctx: OrderContext, request: PharmacyRequest, change: Partial<Task>): void {
  const version = Number(request.task.meta?.versionId ?? "1") + 1;
  const now = ctx.deps.now().toISOString();
  request.task = {
    ...request.task,
    ...change,
    lastModified: now,
    meta: { versionId: String(version), lastUpdated: now },
  };
}

/** The order and request of a fulfillment Task a pharmacy names, if it was sent to that pharmacy. */
export function findRequest(
  ctx: OrderContext,
  taskId: string | undefined,
  licence: string,
  path: string,
): WorkflowResult<{ order: Order; request: PharmacyRequest }> {
  const found = taskId ? ctx.book.byTask(taskId) : undefined;
  if (!found) {
    return fail(
      issue(
        "not-found",
        `Task/${taskId} is not a fulfillment request the sandbox sent; use the id of the Task in the order-fulfillment-request you received.`,
        `${path}.id`,
      ),
    );
  }
  if (found.request.licence !== licence) {
    return fail(
      issue(
        "business-rule",
        // Refusals name the order's state (CONTRACT §8), this one too.
        `Task/${taskId} (order ${found.order.id}, ${found.order.state}) was sent to pharmacy ${found.request.licence}, not to ${licence}.`,
        `${path}.id`,
      ),
    );
  }
  return { ok: true, value: found };
}
