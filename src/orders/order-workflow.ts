import type { Resource, Task } from "fhir/r4.js";
import { allocate, receiveAllocation, sendAllocation } from "./allocate.js";
import { cancel } from "./cancel.js";
import { confirm } from "./confirm.js";
import { createOrder, sendFulfillmentRequest } from "./create-order.js";
import { deadlinePassed } from "./deadline.js";
import { dispense } from "./dispense.js";
import type { Order } from "./order.js";
import { guarded, OrderBook, type OrderContext, type WorkflowDeps, type WorkflowResult } from "./order-book.js";
import type { OrderSpec } from "./order-spec.js";

/**
 * The drug-order flow (CONTRACT §8): orders fan out to pharmacies as
 * order-fulfillment-request pushes; confirmations, allocation, the
 * allocation push and the dispense summary move each order and each
 * pharmacy's request along their state machines. Refusals name the state.
 * Each step is its own module around the shared OrderBook; this is the
 * one handle the handlers, the admin API and scheduled pushes hold.
 */
export class OrderWorkflow {
  readonly #ctx: OrderContext;
  /** Orders read back at a start, whose due work (resumeDue) waits for the sandbox to serve. */
  #due: Order[] = [];

  constructor(deps: WorkflowDeps) {
    this.#ctx = { deps, book: new OrderBook(deps.maxOrders, deps.sink) };
  }

  /**
   * The orders a state file kept, instead of those held, with their deadline timers. After a failed write (a step
   * back) a deadline that passed meanwhile fires now. At a start (`resume`), what was due when the sandbox stopped
   * waits for resumeDue: a deadline that passed, a fulfillment request or an allocation whose delivery had not ended.
   */
  restore(orders: readonly Order[], sequence: number, resume: boolean): void {
    const ctx = this.#ctx;
    ctx.book.restore(orders, sequence);
    this.#due = resume ? [...orders] : [];
    const now = ctx.deps.now().getTime();
    for (const order of orders) {
      // Only an order still waiting for its deadline (under manual allocation one past it waits for the admin).
      if (order.state !== "open" || order.history.some((h) => h.event.startsWith("deadline passed"))) continue;
      const wait = order.deadline.getTime() - now;
      if (resume && wait <= 0) continue;
      ctx.book.setTimer(
        order.id,
        Math.max(0, wait),
        guarded(ctx, `order ${order.id}: the confirmation deadline`, () => deadlinePassed(ctx, order)),
      );
    }
  }

  /**
   * What the restored orders had due when the sandbox stopped, done once it serves (their pushes name its URL):
   * a deadline that passed meanwhile fires, a fulfillment request or an allocation not delivered yet is sent again.
   */
  resumeDue(): void {
    const ctx = this.#ctx;
    const due = this.#due;
    this.#due = [];
    for (const order of due) {
      // Cleared meanwhile (a reset): nothing of it is due any more.
      if (ctx.book.get(order.id) !== order) continue;
      if (order.state === "allocated") {
        const chosen = order.pharmacies.find((p) => p.licence === order.allocatedTo);
        if (chosen?.state === "allocated" && chosen.allocationDelivery === null) sendAllocation(ctx, order, chosen);
      }
      if (order.state !== "open") continue;
      for (const request of order.pharmacies) {
        if (request.state === "sent" && request.delivery.attempts === 0) sendFulfillmentRequest(ctx, order, request);
      }
      const passed = order.deadline.getTime() <= ctx.deps.now().getTime();
      if (passed && !order.history.some((h) => h.event.startsWith("deadline passed"))) {
        guarded(ctx, `order ${order.id}: the confirmation deadline`, () => deadlinePassed(ctx, order))();
      }
    }
  }

  get(id: string): Order | undefined {
    return this.#ctx.book.get(id);
  }

  list(): Order[] {
    return this.#ctx.book.list();
  }

  get count(): number {
    return this.#ctx.book.size;
  }

  /** Orders held and their limit, for health and the memory estimate. */
  get held(): { orders: number; live: number; requests: number; evicted: number; max: number } {
    const { book } = this.#ctx;
    return { orders: book.size, live: book.live, requests: book.requests, evicted: book.evicted, max: book.max };
  }

  /** Forgets every order and stops its timers (POST /__admin/reset). */
  clear(): void {
    this.#ctx.book.clear();
  }

  /** Creates an order and pushes it to each target pharmacy; deliveries run in the background. */
  create(spec: OrderSpec = {}): WorkflowResult<Order> {
    return createOrder(this.#ctx, spec);
  }

  /** confirm-drugs-availability: records availability and delivery options; may allocate at once. */
  confirm(licence: string, sent: Task, path: string): WorkflowResult<{ task: Task; resources: Resource[] }> {
    return confirm(this.#ctx, licence, sent, path);
  }

  /** Allocates an open order to a pharmacy that confirmed (manual policy: POST /__admin/orders/{id}/allocate). */
  allocate(orderId: string, licence: string): WorkflowResult<Order> {
    return allocate(this.#ctx, orderId, licence);
  }

  /** receive-allocation: the allocated pharmacy gets the allocation; others learn they were not allocated. */
  receiveAllocation(
    licence: string,
    taskId: string | undefined,
    path: string,
  ): WorkflowResult<{ task: Task; resources: Resource[] }> {
    return receiveAllocation(this.#ctx, licence, taskId, path);
  }

  /** send-dispense-summary: the allocated pharmacy's dispenses (or a device order's completed Task). */
  dispense(
    licence: string,
    focus: Array<{ resource: Resource; path: string }>,
  ): WorkflowResult<{ focus: Resource[]; resources: Resource[] }> {
    return dispense(this.#ctx, licence, focus);
  }

  cancel(orderId: string): WorkflowResult<Order> {
    return cancel(this.#ctx, orderId);
  }
}
