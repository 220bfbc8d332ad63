import type { Bundle, Patient, Resource, Subscription, Task } from "fhir/r4.js";
import type { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type SandboxApp } from "../../src/app.js";
import type { SandboxOptions } from "../../src/config/options.js";
import { orderView } from "../../src/orders/order-view.js";
import { admin, listCalls } from "../admin/admin-client.js";
import { expectRefusal } from "../routing/response-checks.js";
import { example, focusOf, messageBundle, post, responseHeader } from "../support/messages.js";
import { type Answer, refusedUrl, startReceiver } from "../support/receiver.js";
import { within } from "../support/within.js";
import { pharmacyOrganization, subscribe as subscribePharmacy } from "./pharmacy-client.js";

type OrderView = ReturnType<typeof orderView>;

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A sandbox with fast retries (real timers: the receivers are real sockets). */
function sandbox(options: Partial<SandboxOptions> = {}): SandboxApp {
  const s = createApp({ pushBackoffMs: 2, ...options });
  closers.push(s.close);
  return s;
}

async function receiver(answer?: Answer) {
  const r = await startReceiver(answer);
  closers.push(r.close);
  return r;
}

/** Subscribes a pharmacy (test/orders/pharmacy-client.ts) and returns the active Subscription. */
async function subscribe(
  app: Hono,
  licence: string,
  endpoint: string,
  options: { header?: string[]; status?: Subscription["status"] } = {},
): Promise<Subscription> {
  const reply = await subscribePharmacy(app, licence, endpoint, {
    ...(options.header ? { headers: options.header } : {}),
    ...(options.status ? { status: options.status } : {}),
  });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  expect(responseHeader(reply.body).response?.code).toBe("ok");
  return focusOf(reply.body)[0] as Subscription;
}

async function createOrder(app: Hono, body: unknown = {}): Promise<OrderView> {
  const reply = await admin(app, "POST", "/orders", { body });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body as OrderView;
}

async function getOrder(app: Hono, id: string): Promise<OrderView> {
  const reply = await admin(app, "GET", `/orders/${id}`);
  expect(reply.status).toBe(200);
  return reply.body as OrderView;
}

const requestOf = (view: OrderView, licence: string) => {
  const request = view.pharmacies.find((p) => p.licence === licence);
  if (!request) throw new Error(`order ${view.id} has no request for ${licence}`);
  return request;
};

/** Resolves once no target pharmacy of the order is still `sent` (every first delivery has ended). */
function deliveriesEnded(s: SandboxApp, id: string): Promise<OrderView> {
  return orderWhere(s, id, "every delivery ended", (v) => v.pharmacies.every((p) => p.state !== "sent"));
}

/** Resolves with the admin view of order `id` as soon as `holds` is true of it (checked now and on every order:updated). */
async function orderWhere(
  s: SandboxApp,
  id: string,
  what: string,
  holds: (v: OrderView) => boolean,
): Promise<OrderView> {
  const matched = new Promise<void>((resolve) => {
    const check = () => {
      const order = s.orders.get(id);
      if (!order || !holds(orderView(order))) return;
      s.events.off("order:updated", check);
      resolve();
    };
    s.events.on("order:updated", check);
    check();
  });
  await within(matched, `order ${id}: ${what}`);
  return getOrder(s.app, id);
}

/** A message from a pharmacy: its Organization is MessageHeader.sender. */
function fromPharmacy(event: string, licence: string, resources: Resource[]): Bundle {
  const org = pharmacyOrganization(licence);
  return messageBundle(event, [...resources, org], {
    focus: resources.map((_, i) => i),
    header: { sender: { reference: `Organization/${org.id}` } },
  });
}

describe("a bad receiver never delays other pharmacies or the inbound API (CONTRACT §8)", () => {
  it("delivers to pharmacy B and answers view-patient-profile while pharmacy A's receiver hangs", async () => {
    const a = await receiver(() => "hang");
    const b = await receiver();
    const s = sandbox({ pushTimeoutMs: 30_000, pushAttempts: 1 });
    await subscribe(s.app, "PH-A", a.url);
    await subscribe(s.app, "PH-B", b.url);

    const order = await createOrder(s.app);
    await within(a.next(), "push to A");
    await within(b.next(), "push to B");
    const bDelivered = await orderWhere(s, order.id, "B delivered", (v) => requestOf(v, "PH-B").state === "delivered");

    expect(requestOf(bDelivered, "PH-A").state).toBe("sent");
    const outbound = await listCalls(s.app, "direction=outbound");
    expect(outbound.map((c) => [c.target, c.response?.status])).toEqual([[b.url, 200]]);
    const profile = await post(
      s.app,
      messageBundle("view-patient-profile", [example<Patient>("patient-example.json")]),
    );
    expect(profile.status).toBe(200);
    expect(responseHeader(profile.body).response?.code).toBe("ok");
    // A's request is still held open while all of the above happened.
    expect(a.stats.open).toBe(1);
    expect(requestOf(await getOrder(s.app, order.id), "PH-A").state).toBe("sent");

    // When A's receiver goes away its delivery ends as failed instead of staying in flight.
    await a.close();
    const ended = await deliveriesEnded(s, order.id);
    expect(requestOf(ended, "PH-A")).toMatchObject({
      state: "delivery-failed",
      delivery: { attempts: 1, status: null },
    });
    expect(requestOf(ended, "PH-B").state).toBe("delivered");
  });

  it("marks a pharmacy whose connection is refused delivery-failed after every attempt, while another is delivered", async () => {
    const refused = await refusedUrl();
    const b = await receiver();
    const s = sandbox({ pushAttempts: 3 });
    await subscribe(s.app, "PH-A", refused);
    await subscribe(s.app, "PH-B", b.url);

    const order = await createOrder(s.app);
    const ended = await deliveriesEnded(s, order.id);

    expect(requestOf(ended, "PH-A")).toMatchObject({
      state: "delivery-failed",
      delivery: { attempts: 3, status: null, error: expect.stringMatching(/^ECONNREFUSED/), deliveredAt: null },
    });
    expect(requestOf(ended, "PH-B")).toMatchObject({
      state: "delivered",
      delivery: { attempts: 1, status: 200, error: null, deliveredAt: expect.any(String) },
    });
    expect(b.received).toHaveLength(1);
    const outbound = await listCalls(s.app, "direction=outbound");
    expect(outbound.filter((c) => c.target === refused).map((c) => [c.attempt, c.response])).toEqual([
      [1, null],
      [2, null],
      [3, null],
    ]);
    for (const call of outbound.filter((c) => c.target === refused)) expect(call.error).toMatch(/ECONNREFUSED/);
    expect(outbound.filter((c) => c.target === b.url).map((c) => c.attempt)).toEqual([1]);
  });

  it.each([
    { answers: [500, 200], state: "delivered", attempts: 2, status: 200, error: null },
    { answers: [503], state: "delivery-failed", attempts: 3, status: 503, error: "answered 503" },
    { answers: [404], state: "delivery-failed", attempts: 1, status: 404, error: "answered 404" },
    { answers: [400], state: "delivery-failed", attempts: 1, status: 400, error: "answered 400" },
  ])("receiver answering $answers → $state after $attempts attempt(s)", async (c) => {
    const r = await receiver((_, n) => ({ status: c.answers[Math.min(n, c.answers.length) - 1] as number }));
    const s = sandbox({ pushAttempts: 3 });
    await subscribe(s.app, "PH-A", r.url);

    const order = await createOrder(s.app);
    const ended = await deliveriesEnded(s, order.id);

    expect(requestOf(ended, "PH-A")).toMatchObject({
      state: c.state,
      delivery: { attempts: c.attempts, status: c.status, error: c.error },
    });
    expect(r.received).toHaveLength(c.attempts);
    const outbound = await listCalls(s.app, "direction=outbound");
    expect(outbound.map((call) => [call.attempt, call.response?.status])).toEqual(
      Array.from({ length: c.attempts }, (_, i) => [i + 1, c.answers[Math.min(i, c.answers.length - 1)]]),
    );
  });
});

describe("subscriptions: headers, re-subscribing, unsubscribing (CONTRACT §8)", () => {
  it("sends Subscription.channel.header with every push, but the journal and the pharmacy list redact every value", async () => {
    const r = await receiver();
    const s = sandbox();
    await subscribe(s.app, "PH-A", r.url, {
      header: ["X-Api-Key: k", "Authorization: Bearer t", "X-Pharmacy-Branch: Marina"],
    });

    const order = await createOrder(s.app);
    const push = await within(r.next(), "push to A");
    await orderWhere(s, order.id, "A delivered", (v) => requestOf(v, "PH-A").state === "delivered");

    expect(push.headers).toMatchObject({ "x-api-key": "k", authorization: "Bearer t", "x-pharmacy-branch": "Marina" });
    const [call, ...more] = await listCalls(s.app, "direction=outbound");
    expect(more).toEqual([]);
    expect(call.request.headers).toMatchObject({
      "x-api-key": "[redacted]",
      authorization: "[redacted]",
      "x-pharmacy-branch": "[redacted]",
    });
    expect(JSON.stringify(call)).not.toMatch(/Bearer t|Marina/);
    const listed = await admin(s.app, "GET", "/pharmacies");
    expect(listed.body.pharmacies).toEqual([
      expect.objectContaining({
        licence: "PH-A",
        active: true,
        endpoint: r.url,
        headers: { "x-api-key": "[redacted]", authorization: "[redacted]", "x-pharmacy-branch": "[redacted]" },
      }),
    ]);
    expect(JSON.stringify(listed.body)).not.toMatch(/Bearer t|Marina/);
  });

  it("re-subscribing replaces the endpoint: the next order goes to the new receiver only", async () => {
    const old = await receiver();
    const fresh = await receiver();
    const s = sandbox();
    const first = await subscribe(s.app, "PH-A", old.url);
    const second = await subscribe(s.app, "PH-A", fresh.url);

    const order = await createOrder(s.app);
    await within(fresh.next(), "push to the new endpoint");
    const ended = await deliveriesEnded(s, order.id);

    expect(second.id).toBe(first.id);
    expect(ended.pharmacies.map((p) => [p.licence, p.state])).toEqual([["PH-A", "delivered"]]);
    expect(old.received).toHaveLength(0);
    expect(fresh.received).toHaveLength(1);
    const listed = await admin(s.app, "GET", "/pharmacies");
    expect(listed.body.pharmacies.map((p: { licence: string; endpoint: string }) => [p.licence, p.endpoint])).toEqual([
      ["PH-A", fresh.url],
    ]);
  });

  it("a Subscription with status off unsubscribes: no push to it, and its confirm is refused for no active subscription", async () => {
    const a = await receiver();
    const b = await receiver();
    const s = sandbox();
    await subscribe(s.app, "PH-A", a.url);
    await subscribe(s.app, "PH-B", b.url);
    const off = await subscribe(s.app, "PH-A", a.url, { status: "off" });
    expect(off.status).toBe("off");

    const order = await createOrder(s.app);
    const pushB = await within(b.next(), "push to B");
    const ended = await deliveriesEnded(s, order.id);

    expect(ended.pharmacies.map((p) => [p.licence, p.state])).toEqual([["PH-B", "delivered"]]);
    expect(a.received).toHaveLength(0);
    const listed = await admin(s.app, "GET", "/pharmacies");
    expect(
      listed.body.pharmacies.map((p: { licence: string; active: boolean; endpoint: string | null }) => [
        p.licence,
        p.active,
        p.endpoint,
      ]),
    ).toEqual([
      ["PH-A", false, null],
      ["PH-B", true, b.url],
    ]);

    const task = focusOf(pushB.bundle)[0] as Task;
    const confirmation: Task = {
      ...task,
      status: "accepted",
      businessStatus: { coding: [{ system: "urn:uae-fhir-sandbox:fulfillment-status", code: "available" }] },
    };
    const refused = await post(s.app, fromPharmacy("confirm-drugs-availability", "PH-A", [confirmation]));
    expect(refused.status).toBe(200);
    const outcome = expectRefusal(refused.body);
    expect(outcome.issue.map((i) => i.diagnostics).join(" ")).toMatch(/PH-A has no active subscription/);
    expect(requestOf(await getOrder(s.app, order.id), "PH-B").state).toBe("delivered");
  });
});
