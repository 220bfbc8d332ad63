import { clearTimeout as realClearTimeout, setTimeout as realSetTimeout } from "node:timers";
import type {
  Bundle,
  DeviceRequest,
  FhirResource,
  MedicationDispense,
  MedicationRequest,
  OperationOutcome,
  Organization,
  Patient,
  Resource,
  Subscription,
  Task,
  TaskOutput,
} from "fhir/r4.js";
import type { Hono } from "hono";
import { expect, vi } from "vitest";
import { createApp, type Logger, type SandboxApp } from "../../src/app.js";
import type { SandboxOptions } from "../../src/config/options.js";
import type { Order } from "../../src/orders/order.js";
import { messageBundle, post, type Reply, responseHeader } from "../support/messages.js";

/**
 * A pharmacy integration as a test drives it: subscribe, read pushes,
 * confirm, receive the allocation, dispense. Messages are built as a
 * pharmacy would (test/support/messages.ts), with MessageHeader.sender →
 * the pharmacy's Organization entry, whose identifier value is its licence.
 */

export const LICENCE_SYSTEM = "urn:ae:pharmacy-licence";
export const FULFILLMENT_STATUS = "urn:uae-fhir-sandbox:fulfillment-status";
export const FULFILLMENT_PART = "urn:uae-fhir-sandbox:fulfillment-part";
export const DELIVERY_METHOD = "urn:uae-fhir-sandbox:delivery-method";
/** The sandbox's extensions, by their canonical URLs (written out: a test states what the sandbox must send). */
export const ETA_EXTENSION = "https://uae-fhir-sandbox.example/fhir/StructureDefinition/estimated-time";
export const PRICE_EXTENSION = "https://uae-fhir-sandbox.example/fhir/StructureDefinition/price";

export const pharmacyOrganization = (licence: string): Organization => ({
  resourceType: "Organization",
  id: `org-${licence}`,
  identifier: [{ system: LICENCE_SYSTEM, value: licence }],
  name: `Pharmacy ${licence}`,
});

/** A message from a pharmacy: `resources` are the focus, its Organization is MessageHeader.sender. */
export function fromPharmacy(event: string, licence: string, resources: FhirResource[]): Bundle {
  const org = pharmacyOrganization(licence);
  return messageBundle(event, [...resources, org], {
    focus: resources.map((_, i) => i),
    header: { sender: { reference: `Organization/${org.id}` } },
  });
}

/** subscribe-order-notifications with a rest-hook Subscription to `endpoint`, as a message. */
export function subscriptionMessage(
  licence: string,
  endpoint: string,
  options: { headers?: string[]; status?: Subscription["status"] } = {},
): Bundle {
  const subscription: Subscription = {
    resourceType: "Subscription",
    status: options.status ?? "requested",
    reason: "Drug order fulfillment requests",
    criteria: "Task?code=fulfill",
    channel: {
      type: "rest-hook",
      endpoint,
      payload: "application/fhir+json",
      ...(options.headers ? { header: options.headers } : {}),
    },
  };
  return messageBundle("subscribe-order-notifications", [subscription, pharmacyOrganization(licence)]);
}

/** subscribe-order-notifications with a rest-hook Subscription to `endpoint`. */
export function subscribe(
  app: Hono,
  licence: string,
  endpoint: string,
  options: { headers?: string[]; status?: Subscription["status"] } = {},
): Promise<Reply> {
  return post(app, subscriptionMessage(licence, endpoint, options));
}

/** Subscribes each pharmacy to its channel of `inbox`; fails the test unless each is active. */
export async function subscribeAll(app: Hono, inbox: PushInbox, licences: readonly string[]): Promise<void> {
  for (const licence of licences) {
    const reply = await subscribe(app, licence, inbox.channel(licence).url);
    expect(reply.status, `subscribe ${licence}`).toBe(200);
    expect(responseHeader(reply.body).response?.code).toBe("ok");
  }
}

export interface OptionSpec {
  method: "home-delivery" | "pickup";
  etaMinutes?: number;
  price?: number;
}

export interface ConfirmationSpec {
  availability: "available" | "partial" | "unavailable";
  options?: OptionSpec[];
  /** For a partial confirmation: ids of the requests the pharmacy can supply. */
  items?: string[];
}

/** The pushed Task answered as a confirmation: status, businessStatus and outputs as the pharmacy guide says. */
export function confirmationTask(task: Task, spec: ConfirmationSpec): Task {
  const output: TaskOutput[] = [
    ...(spec.options ?? []).map(
      (o): TaskOutput => ({
        ...(o.etaMinutes !== undefined || o.price !== undefined
          ? {
              extension: [
                ...(o.etaMinutes !== undefined
                  ? [
                      {
                        url: ETA_EXTENSION,
                        valueDuration: {
                          value: o.etaMinutes,
                          unit: "min",
                          system: "http://unitsofmeasure.org",
                          code: "min",
                        },
                      },
                    ]
                  : []),
                ...(o.price !== undefined
                  ? [{ url: PRICE_EXTENSION, valueMoney: { value: o.price, currency: "AED" } }]
                  : []),
              ],
            }
          : {}),
        type: { coding: [{ system: FULFILLMENT_PART, code: "delivery-option" }] },
        valueCodeableConcept: { coding: [{ system: DELIVERY_METHOD, code: o.method }] },
      }),
    ),
    ...(spec.items ?? []).map(
      (id): TaskOutput => ({
        type: { coding: [{ system: FULFILLMENT_PART, code: "available-item" }] },
        valueReference: { reference: `MedicationRequest/${id}` },
      }),
    ),
  ];
  const { output: _sent, ...rest } = task;
  return {
    ...rest,
    status: spec.availability === "unavailable" ? "rejected" : "accepted",
    businessStatus: { coding: [{ system: FULFILLMENT_STATUS, code: spec.availability }] },
    ...(output.length > 0 ? { output } : {}),
  };
}

export function confirm(app: Hono, licence: string, task: Task, spec: ConfirmationSpec): Promise<Reply> {
  return post(app, fromPharmacy("confirm-drugs-availability", licence, [confirmationTask(task, spec)]));
}

/** receive-allocation for a fulfillment Task (only its id matters). */
export function receiveAllocation(app: Hono, licence: string, taskId: string): Promise<Reply> {
  const task: Task = { resourceType: "Task", id: taskId, status: "requested", intent: "order" };
  return post(app, fromPharmacy("receive-allocation", licence, [task]));
}

/** A MedicationDispense per request: the ordered quantity (or `quantity`), handed over now. */
export function dispensesFor(
  requests: readonly MedicationRequest[],
  options: { quantity?: number; whenHandedOver?: string | null } = {},
): MedicationDispense[] {
  return requests.map((r) => ({
    resourceType: "MedicationDispense",
    status: "completed",
    ...(r.medicationCodeableConcept ? { medicationCodeableConcept: r.medicationCodeableConcept } : {}),
    authorizingPrescription: [{ reference: `MedicationRequest/${r.id}` }],
    quantity: {
      ...r.dispenseRequest?.quantity,
      ...(options.quantity !== undefined ? { value: options.quantity } : {}),
    },
    ...(options.whenHandedOver === null ? {} : { whenHandedOver: options.whenHandedOver ?? new Date().toISOString() }),
  }));
}

export function dispense(app: Hono, licence: string, resources: FhirResource[]): Promise<Reply> {
  return post(app, fromPharmacy("send-dispense-summary", licence, resources));
}

/** What GET /__admin/orders/{id} shows (the fields tests read). */
export interface OrderView {
  id: string;
  state: string;
  kind: "medication" | "device";
  createdAt: string;
  deadline: string;
  allocatedTo: string | null;
  patient: { id: string; identifier: Array<{ system?: string; value?: string }> };
  items: Array<{
    requestId: string;
    resourceType: string;
    code: string | null;
    display: string | null;
    quantity: { value?: number; unit?: string } | null;
  }>;
  pharmacies: Array<{
    licence: string;
    state: string;
    taskId: string;
    taskStatus: string;
    businessStatus: string | null;
    delivery: { attempts: number; status: number | null; error: string | null; deliveredAt: string | null };
    allocationDelivery: {
      attempts: number;
      status: number | null;
      error: string | null;
      deliveredAt: string | null;
    } | null;
    confirmation: {
      availability: string;
      availableItems: string[];
      options: Array<{ method: string; etaMinutes?: number; price?: number }>;
      at: string;
    } | null;
  }>;
  history: Array<{ at: string; event: string }>;
}

/** POST /__admin/orders; `body` undefined sends no body. */
// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary admin JSON
export async function createOrder(app: Hono, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await app.request("/__admin/orders", {
    method: "POST",
    ...(body === undefined
      ? {}
      : {
          headers: { "content-type": "application/json" },
          body: typeof body === "string" ? body : JSON.stringify(body),
        }),
  });
  return { status: res.status, body: await res.json() };
}

/** POST /__admin/orders that must succeed: the created order. */
export async function newOrder(app: Hono, body?: unknown): Promise<OrderView> {
  const created = await createOrder(app, body);
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body as OrderView;
}

/** GET /__admin/orders/{id}, which must exist. */
export async function orderView(app: Hono, id: string): Promise<OrderView> {
  const res = await app.request(`/__admin/orders/${id}`);
  expect(res.status).toBe(200);
  return (await res.json()) as OrderView;
}

export const pharmacyIn = (view: OrderView, licence: string) => {
  const found = view.pharmacies.find((p) => p.licence === licence);
  if (!found) throw new Error(`order ${view.id} was not sent to ${licence}`);
  return found;
};

/** The fulfillment Task a push is about (its MessageHeader focus). */
export function taskOf(bundle: Bundle): Task {
  const focus = responseHeader(bundle).focus?.[0]?.reference;
  const task = bundle.entry?.find((e) => e.fullUrl === focus)?.resource;
  if (task?.resourceType !== "Task") throw new Error("the message's focus is not a Task");
  return task as Task;
}

export const resourcesOf = <T extends Resource>(bundle: Bundle, type: T["resourceType"]): T[] =>
  (bundle.entry ?? []).map((e) => e.resource).filter((r): r is T => r?.resourceType === type);

export const medicationRequestsOf = (bundle: Bundle) => resourcesOf<MedicationRequest>(bundle, "MedicationRequest");
export const deviceRequestsOf = (bundle: Bundle) => resourcesOf<DeviceRequest>(bundle, "DeviceRequest");

export function patientOf(bundle: Bundle): Patient {
  const [patient, ...more] = resourcesOf<Patient>(bundle, "Patient");
  if (!patient || more.length > 0) throw new Error("expected exactly one Patient entry");
  return patient;
}

/** The OperationOutcome of a response message (refusal) or a bare one (not processed). */
export function outcomeOf(body: Bundle | OperationOutcome): OperationOutcome {
  if (body.resourceType === "OperationOutcome") return body;
  const outcome = resourcesOf<OperationOutcome>(body, "OperationOutcome")[0];
  if (!outcome) throw new Error("the message carries no OperationOutcome");
  return outcome;
}

export const diagnosticsOf = (body: Bundle | OperationOutcome) =>
  (outcomeOf(body).issue ?? []).map((i) => i.diagnostics ?? "").join(" | ");

/** A push as a pharmacy channel got it. */
export interface Delivered {
  target: string;
  headers: Record<string, string>;
  bundle: Bundle;
}

export interface Channel {
  url: string;
  received: Delivered[];
  /** The next push not yet taken (already received, or the next to arrive). */
  next(): Promise<Delivered>;
}

export interface PushInbox {
  /** The sandbox's outbound `fetch` dep: answers in-process, no sockets (works under fake timers). */
  fetch: typeof fetch;
  /** The channel of one pharmacy, at http://<name>.pharmacy.test/hook. */
  channel(name: string): Channel;
}

/**
 * In-process push receivers: pass `inbox.fetch` as createApp's `fetch` dep
 * and subscribe pharmacies to `inbox.channel(licence).url`. Each push is
 * answered with `answer(push)` (default 200) at once.
 */
export function pushInbox(answer: (push: Delivered) => number = () => 200): PushInbox {
  const channels = new Map<string, Channel & { waiting: Array<(d: Delivered) => void> }>();
  const at = (url: string) => {
    let found = channels.get(url);
    if (!found) {
      const received: Delivered[] = [];
      const waiting: Array<(d: Delivered) => void> = [];
      let seen = 0;
      found = {
        url,
        received,
        waiting,
        next() {
          const index = seen++;
          const ready = received[index];
          if (ready) return Promise.resolve(ready);
          return new Promise((resolve, reject) => {
            const timer = realSetTimeout(
              () => reject(new Error(`no push #${index + 1} reached ${url} within 4 s`)),
              4000,
            );
            waiting.push((d) => {
              realClearTimeout(timer);
              resolve(d);
            });
          });
        },
      };
      channels.set(url, found);
    }
    return found;
  };
  const inboxFetch: typeof fetch = async (input, init) => {
    const target = String(input);
    const to = at(target);
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    const bundle = JSON.parse((JSON.parse(String(init?.body)) as { content: string }).content) as Bundle;
    const push: Delivered = { target, headers, bundle };
    to.received.push(push);
    to.waiting.shift()?.(push);
    return new Response("{}", { status: answer(push), headers: { "content-type": "application/json" } });
  };
  return { fetch: inboxFetch, channel: (name) => at(`http://${name.toLowerCase()}.pharmacy.test/hook`) };
}

/**
 * Resolves once order `id` satisfies `ready` (checked now and on each
 * "order:updated"); rejects after `timeoutMs` of real time, also under fake timers.
 */
export function untilOrder(
  sandbox: SandboxApp,
  id: string,
  ready: (order: Order) => boolean,
  what: string,
  timeoutMs = 4000,
): Promise<Order> {
  const check = () => {
    const order = sandbox.orders.get(id);
    return order && ready(order) ? order : undefined;
  };
  const now = check();
  if (now) return Promise.resolve(now);
  return new Promise((resolve, reject) => {
    const listener = () => {
      const order = check();
      if (!order) return;
      stop();
      resolve(order);
    };
    const timer = realSetTimeout(() => {
      stop();
      reject(new Error(`order ${id} did not get ${what} within ${timeoutMs} ms`));
    }, timeoutMs);
    const stop = () => {
      realClearTimeout(timer);
      sandbox.events.off("order:updated", listener);
    };
    sandbox.events.on("order:updated", listener);
  });
}

/** Every push of the order has an answer (fulfillment requests and, once allocated, the allocation). */
export const settled = (order: Order) =>
  order.pharmacies.every((p) => p.state !== "sent") &&
  (order.allocatedTo === null ||
    order.pharmacies.every((p) => p.licence !== order.allocatedTo || p.allocationDelivery !== null));

/** Waits until every push of the order was answered. */
export const pushesSettled = (sandbox: SandboxApp, id: string) =>
  untilOrder(sandbox, id, settled, "every push answered");

export const quietLogger: Logger = { info: () => undefined, error: () => undefined };

/**
 * Fake timers for deadlines and scheduled pushes: setTimeout and Date only, so
 * promises and in-process requests still run. Call before createApp.
 */
export function useFakeClock(): void {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
}

/** A sandbox whose pushes land in an in-process inbox, with `licences` subscribed to it. */
export interface PharmacySandbox {
  sandbox: SandboxApp;
  app: Hono;
  inbox: PushInbox;
}

export async function withPharmacies(
  create: (inbox: PushInbox) => SandboxApp,
  licences: readonly string[],
  inbox = pushInbox(),
): Promise<PharmacySandbox> {
  const sandbox = create(inbox);
  await subscribeAll(sandbox.app, inbox, licences);
  return { sandbox, app: sandbox.app, inbox };
}

export interface PlacedOrder {
  order: OrderView;
  /** A target pharmacy's order-fulfillment-request push. */
  push(licence: string): Delivered;
  /** A target pharmacy's fulfillment Task, as pushed. */
  task(licence: string): Task;
  /** The MedicationRequests as pushed (the same for every pharmacy). */
  requests: MedicationRequest[];
}

/** POST /__admin/orders, then waits for every target pharmacy's fulfillment request. */
export async function placeOrder({ sandbox, app, inbox }: PharmacySandbox, body?: unknown): Promise<PlacedOrder> {
  const order = await newOrder(app, body);
  const pushes = new Map<string, Delivered>();
  for (const { licence } of order.pharmacies) pushes.set(licence, await inbox.channel(licence).next());
  await pushesSettled(sandbox, order.id);
  const push = (licence: string) => {
    const found = pushes.get(licence);
    if (!found) throw new Error(`order ${order.id} was not pushed to ${licence}`);
    return found;
  };
  const first = [...pushes.values()][0];
  return {
    order,
    push,
    task: (licence) => taskOf(push(licence).bundle),
    requests: first ? medicationRequestsOf(first.bundle) : [],
  };
}

/** Two medication items, for orders where availability per item matters. */
export const TWO_ITEMS = {
  items: [
    { medication: { code: "861007" }, quantity: 60 },
    { medication: { code: "314077" }, quantity: 30 },
  ],
};

/**
 * A sandbox whose pushes go to an in-process inbox, with these pharmacies
 * subscribed; its close() is added to `closers` for the test's afterEach.
 */
export function sandboxWith(
  closers: Array<() => unknown>,
  options: Partial<SandboxOptions>,
  licences: readonly string[],
): Promise<PharmacySandbox> {
  return withPharmacies((inbox) => {
    const sandbox = createApp({ pushBackoffMs: 1, ...options }, { fetch: inbox.fetch, logger: quietLogger });
    closers.push(sandbox.close);
    return sandbox;
  }, licences);
}
