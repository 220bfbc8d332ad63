import { orderSpecSchema } from "../../orders/order-spec.js";
import type { StepKindName, StepSpecOf } from "../plan-schema.js";
import type { Evidence } from "../session-report.js";
import type { ObservedCall, StepContext, StepRun, StepVerdict } from "../step-context.js";
import {
  accepted,
  attemptAnswer,
  bundleOf,
  mentions,
  pushedTaskId,
  responseCode,
  seconds,
  short,
  verdictOf,
} from "./receiver-calls.js";
import { licenceOf, receiverMemory, type SessionOrder, type SessionPush } from "./receiver-state.js";
import { unknownOrderPush } from "./receiver-unknown-order.js";

export { registerPharmacy } from "./receiver-register.js";
export { subscribedPharmacy } from "./receiver-state.js";

/**
 * The receiver (pharmacy) role's step kinds: the sandbox drives the order flow against the pharmacy's endpoint and
 * watches what the pharmacy answers and sends. Each kind reads and writes the session memory's receiver keys: the
 * current order, the last push, the licence the pharmacy subscribed with.
 */

/** How long past its limit a push's first attempt is looked for: the attempt ends by --push-timeout (5 s by default). */
const ATTEMPT_GRACE_MS = 30_000;
/** Default acknowledgement limit (scaled): the design's 5 s, the sandbox's default --push-timeout. */
const ACK_MS = 5_000;
/** Default wait for a message (scaled). */
const WITHIN_MS = 60_000;

const pass = (message: string, evidence: Evidence[] = []): StepVerdict => ({ status: "pass", message, evidence });
const fail = (message: string, evidence: Evidence[] = []): StepVerdict => ({ status: "fail", message, evidence });
const skip = (message: string, evidence: Evidence[] = []): StepVerdict => ({ status: "skip", message, evidence });

type Spec<K extends StepKindName> = StepSpecOf<K>;

const isInbound = (call: ObservedCall, operations: readonly string[]) =>
  call.record.direction === "inbound" && operations.includes(call.record.operation ?? "");

/** The licence a subscribe call named: its Organization's identifier, else MessageHeader.sender's. */
function subscribedLicence(call: ObservedCall): string | undefined {
  const entries = (bundleOf(call.record.request.body)?.entry ?? []) as Array<{ resource?: Record<string, unknown> }>;
  const org = entries.find((e) => e.resource?.resourceType === "Organization")?.resource;
  const ids = (org?.identifier ?? []) as Array<{ value?: string }>;
  return ids.find((i) => i.value)?.value;
}

const subscriptionOff = (call: ObservedCall) =>
  ((bundleOf(call.record.request.body)?.entry ?? []) as Array<{ resource?: Record<string, unknown> }>).some(
    (e) => e.resource?.resourceType === "Subscription" && e.resource.status === "off",
  );

const expectSubscription = async (ctx: StepContext, spec: Spec<"expectSubscription">): Promise<StepVerdict> => {
  const memory = receiverMemory(ctx);
  const { pharmacyUrl, pharmacyLicence } = ctx.session;
  if (pharmacyUrl !== null) {
    const licence = licenceOf(ctx);
    const endpoint = licence ? ctx.workspace.pharmacies.get(licence)?.endpoint : undefined;
    if (licence && endpoint === pharmacyUrl)
      return pass(`registered at the session's start: ${pharmacyUrl} as ${licence}`);
    // A reset stops the session: what replaces the registration while it runs is the pharmacy's own subscription.
    const instead =
      endpoint !== undefined
        ? `${licence} now has the endpoint ${endpoint}: did the pharmacy subscribe again with another endpoint?`
        : `${licence} has no endpoint: did the pharmacy unsubscribe (status off)?`;
    return fail(`expected the pharmacy registered at ${pharmacyUrl} as ${licence}; ${instead}`);
  }
  // A licence the session names that holds an active subscription already (made before the session) is enough.
  const held = pharmacyLicence === null ? undefined : ctx.workspace.pharmacies.get(pharmacyLicence);
  if (held?.source === "subscription" && held.endpoint) {
    memory.licence = held.licence;
    return pass(`subscribed already, before the session: ${held.licence} with the endpoint ${held.endpoint}`);
  }
  const within = ctx.ms(spec.within, WITHIN_MS);
  // A licence the session names must be the one that subscribes; with none, whoever subscribes first is the pharmacy.
  const wanted = (call: ObservedCall) => pharmacyLicence === null || subscribedLicence(call) === pharmacyLicence;
  const seen = new Set<ObservedCall>();
  const call = await ctx.calls.next(
    (c) => {
      if (!isInbound(c, ["subscribe-order-notifications"])) return false;
      if (accepted(c) && !subscriptionOff(c) && wanted(c)) return true;
      seen.add(c);
      return false;
    },
    within,
    0,
  );
  if (call) {
    const licence = subscribedLicence(call) ?? pharmacyLicence ?? "";
    memory.licence = licence;
    const endpoint = ctx.workspace.pharmacies.get(licence)?.endpoint;
    return pass(`subscribed as ${licence}${endpoint ? ` with the endpoint ${endpoint}` : ""}`, [
      ctx.evidence(call, `subscribe-order-notifications from ${licence}, accepted`),
    ]);
  }
  const expected = `expected the pharmacy to subscribe (subscribe-order-notifications${pharmacyLicence ? ` as ${pharmacyLicence}` : ""}) within ${seconds(within)}`;
  if (seen.size === 0) return fail(`${expected}; no subscription came`);
  return fail(
    `${expected}; saw ${seen.size} that did not do it: ${[...seen]
      .map((c) => `${subscribedLicence(c) ?? "no licence"} ${subscriptionOff(c) ? "unsubscribing" : verdictOf(c)}`)
      .join("; ")}`,
    [...seen].map((c) => ctx.evidence(c, `subscribe-order-notifications: ${verdictOf(c)}`)),
  );
};

const pushOrder = async (ctx: StepContext, spec: Spec<"pushOrder">): Promise<StepVerdict> => {
  const memory = receiverMemory(ctx);
  const licence = licenceOf(ctx);
  if (!licence) return skip("not run: no pharmacy subscribed to push to");
  const pharmacy = ctx.workspace.pharmacies.get(licence);
  if (!pharmacy?.endpoint) {
    return fail(`expected to push an order to pharmacy ${licence}; it has no active subscription in the workspace`);
  }
  const items = spec.items === undefined ? undefined : orderSpecSchema.shape.items.safeParse(spec.items);
  if (items && !items.success) {
    return fail(`the plan's items are not what POST /__admin/orders takes: ${items.error.issues[0]?.message ?? ""}`);
  }
  const from = ctx.calls.position;
  const created = ctx.workspace.orders.create({
    pharmacies: [licence],
    deadlineMs: ctx.ms(spec.deadline, WITHIN_MS),
    ...(items?.data ? { items: items.data } : {}),
  });
  if (!created.ok) {
    return fail(
      `expected to create an order for ${licence}; the sandbox refused it: ${created.issues.map((i) => i.diagnostics).join("; ")}`,
    );
  }
  const order = created.value;
  const request = order.pharmacies[0];
  const taskId = request?.task.id as string;
  memory.order = {
    id: order.id,
    taskId,
    requestIds: order.requests.map((r) => r.id as string),
    deadline: order.deadline,
    from,
  };
  memory.push = { event: "order-fulfillment-request", orderId: order.id, taskId, messageId: null, from, again: false };
  return pass(
    `order ${order.id} pushed to ${pharmacy.endpoint} (Task/${taskId}); to confirm before ${order.deadline.toISOString()}, ${seconds(order.deadline.getTime() - order.createdAt.getTime())} from now`,
  );
};

/** The first attempt of a push, once recorded (from its position on); undefined when it is not within `timeoutMs`. */
async function firstAttempt(ctx: StepContext, push: SessionPush, timeoutMs: number) {
  const licence = licenceOf(ctx);
  const call = await ctx.calls.next(
    (c) =>
      c.record.direction === "outbound" &&
      c.record.operation === push.event &&
      c.record.attempt === 1 &&
      (licence === null || c.record.pharmacy === licence) &&
      (push.messageId !== null ? c.record.messageId === push.messageId : pushedTaskId(c) === push.taskId),
    timeoutMs,
    push.from,
  );
  if (call && push.messageId === null) push.messageId = call.record.messageId;
  return call;
}

const pushName = (push: SessionPush) =>
  `the ${push.again ? "repeated " : ""}${push.event} push of order ${push.orderId} (MessageHeader ${short(push.messageId)})`;

const allocate = async (ctx: StepContext): Promise<StepVerdict> => {
  const memory = receiverMemory(ctx);
  const current = memory.order;
  const licence = licenceOf(ctx);
  if (!current || !licence) return skip("not run: no order was pushed");
  let order = ctx.workspace.orders.get(current.id);
  const unconfirmed = () =>
    order?.state === "open" && !order.pharmacies.find((p) => p.licence === licence)?.confirmation;
  if (unconfirmed()) {
    // Not confirmed yet, the deadline ahead: the confirmation may still come (a plan need not wait for it first).
    const left = current.deadline.getTime() - ctx.sandbox.now().getTime();
    await ctx.calls.next(
      (c) => isInbound(c, ["confirm-drugs-availability"]) && accepted(c) && mentions(c, [current.taskId]),
      left,
      current.from,
    );
    order = ctx.workspace.orders.get(current.id);
  }
  if (!order) return fail(`expected order ${current.id} in the workspace; it is gone (was the workspace reset?)`);
  const request = order.pharmacies.find((p) => p.licence === licence);
  if (!(order.state === "allocated" && order.allocatedTo === licence) && order.state !== "dispensed") {
    const confirmed = request?.confirmation;
    // Allocation needs an available or partial confirmation in time: without one there is nothing to check here.
    if (order.state !== "open" || !confirmed || confirmed.availability === "unavailable") {
      memory.unallocated = order.id;
      return skip(
        `not run: order ${order.id} is ${order.state}${order.allocatedTo ? ` (allocated to ${order.allocatedTo})` : ""} and the pharmacy ${confirmed ? `confirmed it ${confirmed.availability}` : "did not confirm it before its deadline"}: there is nothing to allocate to it`,
      );
    }
    const done = ctx.workspace.orders.allocate(order.id, licence);
    if (!done.ok) {
      return fail(
        `expected to allocate order ${order.id} to ${licence}; the sandbox refused: ${done.issues.map((i) => i.diagnostics).join("; ")}`,
      );
    }
  }
  // Allocated now or already (first-confirmed allocates on the confirmation): its push is the order's only one.
  memory.push = {
    event: "order-allocation",
    orderId: order.id,
    taskId: current.taskId,
    messageId: null,
    from: current.from,
    again: false,
  };
  return pass(`order ${order.id} allocated to ${licence}: the order-allocation push goes to its endpoint`);
};

const pushAgain = async (ctx: StepContext): Promise<StepVerdict> => {
  const memory = receiverMemory(ctx);
  const push = memory.push;
  const licence = licenceOf(ctx);
  if (!push || !licence) return skip("not run: no push to deliver again");
  const first = await firstAttempt(ctx, push, ctx.ms(undefined, ACK_MS) + ATTEMPT_GRACE_MS);
  if (!first) return fail(`expected ${pushName(push)} to have been sent, to send it again; it was not`);
  const pharmacy = ctx.workspace.pharmacies.get(licence);
  if (!pharmacy?.endpoint) return fail(`expected pharmacy ${licence} to be subscribed, to push again; it is not`);
  const from = ctx.calls.position;
  // The journal holds the push's body as it went (a push carries no Subscription, which alone it redacts).
  void ctx.sandbox.deliver({
    target: pharmacy.endpoint,
    pharmacy: licence,
    headers: pharmacy.headers,
    body: first.record.request.body,
    event: push.event,
    messageId: first.record.messageId as string,
    events: ctx.workspace.events,
    clientCertificate: pharmacy.clientCertificate,
  });
  memory.push = { ...push, messageId: first.record.messageId, from, again: true };
  return pass(`delivered ${pushName(push)} again: the same Bundle and MessageHeader id, to ${pharmacy.endpoint}`, [
    ctx.evidence(first, `the first delivery, answered ${attemptAnswer(first)}`),
  ]);
};

const pushUnknownOrder = async (ctx: StepContext, spec: Spec<"pushUnknownOrder">): Promise<StepVerdict> => {
  const memory = receiverMemory(ctx);
  const licence = licenceOf(ctx);
  if (!licence) return skip("not run: no pharmacy subscribed to push to");
  const pharmacy = ctx.workspace.pharmacies.get(licence);
  if (!pharmacy?.endpoint) return fail(`expected pharmacy ${licence} to be subscribed, to push to; it is not`);
  const event = spec.event ?? "order-allocation";
  const made = unknownOrderPush(ctx, licence, pharmacy.endpoint, event);
  const from = ctx.calls.position;
  void ctx.sandbox.deliver({
    target: pharmacy.endpoint,
    pharmacy: licence,
    headers: pharmacy.headers,
    body: made.body,
    event,
    messageId: made.messageId,
    events: ctx.workspace.events,
    clientCertificate: pharmacy.clientCertificate,
  });
  const unknown: SessionOrder = {
    id: made.orderId,
    taskId: made.taskId,
    requestIds: made.requestIds,
    deadline: made.deadline,
    from,
  };
  memory.unknownOrder = unknown;
  memory.push = { event, orderId: made.orderId, taskId: made.taskId, messageId: made.messageId, from, again: false };
  return pass(
    `pushed an ${event} about order ${made.orderId} (Task/${made.taskId}), which the pharmacy was never sent, to ${pharmacy.endpoint}`,
  );
};

const expectAck = async (ctx: StepContext, spec: Spec<"expectAck">): Promise<StepVerdict> => {
  const push = receiverMemory(ctx).push;
  if (!push) return skip("not run: no push to check");
  const limit = ctx.ms(spec.within, ACK_MS);
  const call = await firstAttempt(ctx, push, limit + ATTEMPT_GRACE_MS);
  const expected = `expected ${pushName(push)} to be answered 2xx within ${seconds(limit)}`;
  if (!call) return fail(`${expected}; no delivery attempt was recorded`);
  const status = call.record.response?.status;
  const evidence = [ctx.evidence(call, `first attempt: ${attemptAnswer(call)}`)];
  if (status === undefined) return fail(`${expected}; the first attempt got ${attemptAnswer(call)}`, evidence);
  if (status < 200 || status > 299) return fail(`${expected}; it answered ${attemptAnswer(call)}`, evidence);
  if (call.record.durationMs > limit)
    return fail(`${expected}; it answered ${attemptAnswer(call)}: too late`, evidence);
  return pass(`answered ${attemptAnswer(call)}`, evidence);
};

const expectRefused = async (ctx: StepContext, spec: Spec<"expectRefused">): Promise<StepVerdict> => {
  const push = receiverMemory(ctx).push;
  if (!push) return skip("not run: no push to check");
  const within = ctx.ms(spec.within, ACK_MS);
  const call = await firstAttempt(ctx, push, within + ATTEMPT_GRACE_MS);
  const expected = `expected the pharmacy to refuse ${pushName(push)} (a 4xx, or a fatal-error response message)`;
  if (!call) return fail(`${expected}; no delivery attempt was recorded`);
  const evidence = [ctx.evidence(call, `first attempt: ${attemptAnswer(call)}`)];
  const status = call.record.response?.status;
  if (status === undefined) return fail(`${expected}; it gave ${attemptAnswer(call)}`, evidence);
  if (status >= 400 && status <= 499) return pass(`refused: ${attemptAnswer(call)}`, evidence);
  const code = responseCode(call);
  if (status >= 200 && status <= 299 && code === "fatal-error") {
    return pass(`refused: ${attemptAnswer(call)} with a fatal-error response message`, evidence);
  }
  const took = status >= 200 && status <= 299 ? ": it took a push about an order it never got" : "";
  return fail(`${expected}; it answered ${attemptAnswer(call)}${code ? ` (${code})` : ""}${took}`, evidence);
};

/** The order a step is about, and the ids a message about it names. */
function aboutOf(ctx: StepContext, about: "task" | "order" | "unknown-order") {
  const memory = receiverMemory(ctx);
  const order = about === "unknown-order" ? memory.unknownOrder : memory.order;
  if (!order) return undefined;
  const ids = about === "task" ? [order.taskId] : [order.taskId, ...order.requestIds];
  const what = about === "task" ? `Task/${order.taskId} (order ${order.id})` : `order ${order.id}`;
  return { order, ids, what };
}

/** Operations a pharmacy can send about an order only once it was allocated to it. */
const AFTER_ALLOCATION = new Set(["receive-allocation", "send-dispense-summary"]);

const expectMessage = async (ctx: StepContext, spec: Spec<"expectMessage">): Promise<StepVerdict> => {
  const about = aboutOf(ctx, spec.about ?? "task");
  if (!about) return skip("not run: no order was pushed");
  const { order, ids, what } = about;
  const licence = licenceOf(ctx);
  const held = spec.about === "unknown-order" ? undefined : ctx.workspace.orders.get(order.id);
  if (held && AFTER_ALLOCATION.has(spec.operation) && held.allocatedTo !== licence) {
    // Not allocated to it, and it cannot be any more: over, or still open (the deadline timer not run yet) but past
    // its deadline without its confirmation, or the allocate step found nothing to allocate.
    const unconfirmedPastDeadline =
      held.state === "open" &&
      ctx.sandbox.now().getTime() >= held.deadline.getTime() &&
      !held.pharmacies.find((p) => p.licence === licence)?.confirmation;
    if (held.state !== "open" || unconfirmedPastDeadline || receiverMemory(ctx).unallocated === held.id) {
      const state =
        held.state === "open" ? "not allocated to it: it did not confirm it before its deadline" : held.state;
      return skip(
        `not run: order ${held.id} is ${state}${held.allocatedTo ? ` (allocated to ${held.allocatedTo})` : ""}: it was never allocated to the pharmacy, so no ${spec.operation} can be expected`,
      );
    }
  }
  const within = ctx.ms(spec.within, WITHIN_MS);
  const deadline = order.deadline.getTime();
  const until = Date.now() + within;
  const expected = `expected a ${spec.operation} about ${what}, accepted by the sandbox${spec.beforeDeadline ? ` before the order's deadline (${order.deadline.toISOString()})` : ""}, within ${seconds(within)}`;
  const seen = new Set<ObservedCall>();
  const refused: ObservedCall[] = [];
  for (;;) {
    const call = await ctx.calls.next(
      (c) => !seen.has(c) && isInbound(c, [spec.operation]) && mentions(c, ids),
      Math.max(0, until - Date.now()),
      order.from,
    );
    if (!call) break;
    seen.add(call);
    const sentAt = call.record.at.getTime();
    const late = spec.beforeDeadline === true && sentAt > deadline;
    const evidence = [
      ...refused.map((c) => ctx.evidence(c, `${spec.operation}: ${verdictOf(c)}`)),
      ctx.evidence(
        call,
        `${spec.operation}${late ? `, ${seconds(sentAt - deadline)} after the deadline` : ""}: ${verdictOf(call)}`,
      ),
    ];
    if (late) {
      return fail(
        `${expected}; it came ${seconds(sentAt - deadline)} after the deadline and the sandbox ${accepted(call) ? "still accepted it" : `refused it as the exchange does: ${verdictOf(call)}`}`,
        evidence,
      );
    }
    if (accepted(call)) {
      const early = spec.beforeDeadline ? `, ${seconds(deadline - sentAt)} before the deadline` : "";
      return pass(
        `${spec.operation} ${short(call.record.messageId)} accepted${early}${refused.length > 0 ? ` (after ${refused.length} refused)` : ""}`,
        evidence,
      );
    }
    refused.push(call);
  }
  if (refused.length === 0) return fail(`${expected}; none came`);
  return fail(
    `${expected}; saw ${refused.length}, each refused by the sandbox: ${refused.map(verdictOf).join("; ")}`,
    refused.map((c) => ctx.evidence(c, `${spec.operation}: ${verdictOf(c)}`)),
  );
};

const expectNoMessage = async (ctx: StepContext, spec: Spec<"expectNoMessage">): Promise<StepVerdict> => {
  const about = aboutOf(ctx, spec.about ?? "task");
  if (!about) return skip("not run: no order was pushed");
  const { order, ids, what } = about;
  const operations = typeof spec.operation === "string" ? [spec.operation] : spec.operation;
  const windowMs = ctx.ms(spec.for, 0);
  const first = (spec.after ?? "step") === "first";
  // "first": the one message of it an earlier step found (or would have) is allowed, from the order's push on.
  const from = first ? order.from : ctx.calls.position;
  const started = Date.now();
  const until = started + windowMs;
  const seen: ObservedCall[] = [];
  const allowed = first ? 1 : 0;
  while (seen.length <= allowed) {
    const call = await ctx.calls.next(
      (c) => !seen.includes(c) && isInbound(c, operations) && mentions(c, ids),
      Math.max(0, until - Date.now()),
      from,
    );
    if (!call) break;
    seen.push(call);
  }
  const names = operations.join(" or ");
  const expected = `expected no ${first ? "second " : ""}${names} about ${what} for ${seconds(windowMs)}`;
  if (seen.length <= allowed) {
    return pass(
      first && seen[0] ? `only the one ${seen[0].record.operation} ${short(seen[0].record.messageId)}` : `none came`,
      seen.map((c) => ctx.evidence(c, `the one ${c.record.operation}: ${verdictOf(c)}`)),
    );
  }
  const extra = seen[allowed] as ObservedCall;
  return fail(
    `${expected}; it sent ${first ? "another" : "one"}: ${extra.record.operation} ${short(extra.record.messageId)} ${seconds(Math.max(0, extra.record.at.getTime() - started))} into the window, ${verdictOf(extra)}`,
    seen.map((c, i) =>
      ctx.evidence(c, `${i < allowed ? "the first" : "unexpected"} ${c.record.operation}: ${verdictOf(c)}`),
    ),
  );
};

/** The receiver role's kinds, by name (kinds/index.ts joins them with the sender's). */
export const receiverKinds: Partial<Record<StepKindName, StepRun>> = {
  expectSubscription: expectSubscription as StepRun,
  pushOrder: pushOrder as StepRun,
  allocate: allocate as StepRun,
  pushAgain: pushAgain as StepRun,
  pushUnknownOrder: pushUnknownOrder as StepRun,
  expectAck: expectAck as StepRun,
  expectRefused: expectRefused as StepRun,
  expectMessage: expectMessage as StepRun,
  expectNoMessage: expectNoMessage as StepRun,
};
