import type { Bundle, Resource, Task } from "fhir/r4.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { SandboxOptions } from "../../src/config/options.js";
import { type Reply, responseHeader } from "../support/messages.js";
import { unresolvedReferences } from "../support/references.js";
import { emittedProblems } from "../support/validator.js";
import {
  confirm,
  dispense,
  dispensesFor,
  placeOrder,
  pushesSettled,
  receiveAllocation,
  sandboxWith,
  subscribe,
  useFakeClock,
} from "./pharmacy-client.js";

const closers: Array<() => unknown> = [];
afterEach(() => {
  vi.useRealTimers();
  for (const close of closers.splice(0)) close();
});

const open = (options: Partial<SandboxOptions>, licences: readonly string[]) => sandboxWith(closers, options, licences);

/** Collects what the sandbox said, each to be validated, with what the test expected of it. */
class Said {
  readonly items: Array<{ label: string; resource: Resource }> = [];

  answer(label: string, reply: Reply, expected: "ok" | "fatal-error" | 400): void {
    if (expected === 400) {
      expect(reply.status, label).toBe(400);
      expect(reply.body.resourceType, label).toBe("OperationOutcome");
    } else {
      expect(responseHeader(reply.body).response?.code, label).toBe(expected);
    }
    this.items.push({ label, resource: reply.body as Resource });
  }

  push(label: string, bundle: Bundle, event: string): void {
    expect(responseHeader(bundle).eventCoding?.code, label).toBe(event);
    this.items.push({ label, resource: bundle });
  }

  expectValid(): void {
    const problems = this.items.flatMap(({ label, resource }) =>
      emittedProblems(resource).map((p) => `${label}: ${p}`),
    );
    expect(problems).toEqual([]);
    // Pharmacy messages hold no references outside themselves: every reference in an answer or push must resolve.
    const unresolved = this.items.flatMap(({ label, resource }) =>
      unresolvedReferences(resource).map((u) => `${label}: ${u.path} → ${u.reference}`),
    );
    expect(unresolved).toEqual([]);
  }
}

describe("everything the order flow sends and answers is valid FHIR R4 (independent validator)", () => {
  // Budget: 5.9 s in a serial run at a load average of 12, the validator's indexing included (2026-11-27).
  it("a medication order: subscriptions, fulfillment requests, confirmations, allocation, receive-allocation, dispense — ok and refused", async () => {
    const said = new Said();
    const p = await open({}, []);
    for (const licence of ["PH-A", "PH-B", "PH-C"]) {
      said.answer(
        `subscribe ${licence}`,
        await subscribe(p.app, licence, p.inbox.channel(licence).url, { headers: [`X-Api-Key: key-${licence}`] }),
        "ok",
      );
    }
    said.answer(
      "unsubscribe PH-C",
      await subscribe(p.app, "PH-C", p.inbox.channel("PH-C").url, { status: "off" }),
      "ok",
    );
    said.answer(
      "subscribe, bad header",
      await subscribe(p.app, "PH-D", p.inbox.channel("PH-D").url, { headers: ["nonsense"] }),
      400,
    );

    const placed = await placeOrder(p, {
      items: [
        { medication: { code: "861007" }, quantity: 60 },
        { medication: { code: "314077" }, quantity: 30 },
      ],
      patient: "urn:ae:emirates-id|784-1990-7654321-6",
    });
    for (const licence of ["PH-A", "PH-B"])
      said.push(`fulfillment request to ${licence}`, placed.push(licence).bundle, "order-fulfillment-request");
    const [first, second] = placed.requests;

    said.answer(
      "confirm partial",
      await confirm(p.app, "PH-A", placed.task("PH-A"), {
        availability: "partial",
        items: [first?.id as string],
        options: [
          { method: "home-delivery", etaMinutes: 90, price: 20 },
          { method: "pickup", etaMinutes: 15 },
        ],
      }),
      "ok",
    );
    said.answer(
      "confirm twice",
      await confirm(p.app, "PH-A", placed.task("PH-A"), { availability: "available" }),
      "fatal-error",
    );
    said.answer(
      "confirm another's Task",
      await confirm(p.app, "PH-A", placed.task("PH-B"), { availability: "available" }),
      "fatal-error",
    );
    said.answer(
      "receive-allocation while open",
      await receiveAllocation(p.app, "PH-A", placed.task("PH-A").id as string),
      "fatal-error",
    );
    said.answer(
      "dispense before allocation",
      await dispense(p.app, "PH-B", dispensesFor(placed.requests)),
      "fatal-error",
    );
    said.answer(
      "confirm available (allocates)",
      await confirm(p.app, "PH-B", placed.task("PH-B"), {
        availability: "available",
        options: [{ method: "home-delivery", etaMinutes: 45, price: 10 }],
      }),
      "ok",
    );
    said.push("order-allocation to PH-B", (await p.inbox.channel("PH-B").next()).bundle, "order-allocation");
    await pushesSettled(p.sandbox, placed.order.id);

    said.answer(
      "receive-allocation, allocated",
      await receiveAllocation(p.app, "PH-B", placed.task("PH-B").id as string),
      "ok",
    );
    said.answer(
      "receive-allocation, not allocated",
      await receiveAllocation(p.app, "PH-A", placed.task("PH-A").id as string),
      "ok",
    );
    said.answer(
      "receive-allocation, unknown Task",
      await receiveAllocation(p.app, "PH-B", "no-such-task"),
      "fatal-error",
    );
    said.answer(
      "receive-allocation, unsubscribed",
      await receiveAllocation(p.app, "PH-C", placed.task("PH-B").id as string),
      "fatal-error",
    );
    said.answer(
      "confirm after allocation",
      await confirm(p.app, "PH-A", placed.task("PH-A"), { availability: "available" }),
      "fatal-error",
    );
    said.answer(
      "dispense by another pharmacy",
      await dispense(p.app, "PH-A", dispensesFor(placed.requests)),
      "fatal-error",
    );
    said.answer(
      "dispense too much",
      await dispense(p.app, "PH-B", dispensesFor([first as never], { quantity: 1000 })),
      "fatal-error",
    );
    said.answer(
      "dispense without whenHandedOver",
      await dispense(p.app, "PH-B", dispensesFor(placed.requests, { whenHandedOver: null })),
      400,
    );
    said.answer(
      "dispense",
      await dispense(p.app, "PH-B", [
        ...dispensesFor([first as never]),
        ...dispensesFor([second as never], { quantity: 10 }),
      ]),
      "ok",
    );
    said.answer("dispense twice", await dispense(p.app, "PH-B", dispensesFor(placed.requests)), "fatal-error");
    said.answer(
      "receive-allocation, dispensed",
      await receiveAllocation(p.app, "PH-B", placed.task("PH-B").id as string),
      "ok",
    );

    expect(said.items.length).toBeGreaterThanOrEqual(25);
    said.expectValid();
  }, 20_000);

  it("a device order with --business-errors http and --allocation manual: requests, expired and allocated Tasks, dispense by Task", async () => {
    useFakeClock();
    const said = new Said();
    const p = await open({ businessErrors: "http", allocation: "manual" }, ["PH-A", "PH-B"]);
    const placed = await placeOrder(p, {
      items: [{ device: { code: "70665002", display: "Blood pressure cuff" } }],
      deadline: "20s",
    });
    for (const licence of ["PH-A", "PH-B"])
      said.push(`device request to ${licence}`, placed.push(licence).bundle, "order-fulfillment-request");

    said.answer(
      "confirm device",
      await confirm(p.app, "PH-A", placed.task("PH-A"), {
        availability: "available",
        options: [{ method: "pickup", etaMinutes: 60, price: 0 }],
      }),
      "ok",
    );
    vi.advanceTimersByTime(20_000);
    const late = await confirm(p.app, "PH-B", placed.task("PH-B"), { availability: "available" });
    expect(late.status).toBe(422);
    said.answer("confirm after the deadline (422)", late, "fatal-error");
    const allocated = await p.app.request(`/__admin/orders/${placed.order.id}/allocate`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ licence: "PH-A" }),
    });
    expect(allocated.status).toBe(200);
    said.push("device order-allocation", (await p.inbox.channel("PH-A").next()).bundle, "order-allocation");
    await pushesSettled(p.sandbox, placed.order.id);

    const expired = await receiveAllocation(p.app, "PH-B", placed.task("PH-B").id as string);
    said.answer("receive-allocation of an expired request", expired, "ok");
    const expiredTask = (expired.body as Bundle).entry?.find((e) => e.resource?.resourceType === "Task")
      ?.resource as Task;
    expect([expiredTask.status, expiredTask.businessStatus?.coding?.[0]?.code]).toEqual(["failed", "expired"]);
    said.answer(
      "receive-allocation, device",
      await receiveAllocation(p.app, "PH-A", placed.task("PH-A").id as string),
      "ok",
    );
    said.answer(
      "dispense device by Task",
      await dispense(p.app, "PH-A", [{ ...placed.task("PH-A"), status: "completed" }]),
      "ok",
    );
    const twice = await dispense(p.app, "PH-A", [{ ...placed.task("PH-A"), status: "completed" }]);
    expect(twice.status).toBe(422);
    said.answer("dispense device twice (422)", twice, "fatal-error");

    said.expectValid();
  });
});
