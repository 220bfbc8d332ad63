import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Bundle, Extension, Task } from "fhir/r4.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app.js";
import type { SandboxOptions } from "../../src/config/options.js";
import { focusOf, post, responseHeader } from "../support/messages.js";
import { startReceiver } from "../support/receiver.js";
import {
  confirm,
  createOrder,
  DELIVERY_METHOD,
  deviceRequestsOf,
  ETA_EXTENSION,
  FULFILLMENT_PART,
  FULFILLMENT_STATUS,
  fromPharmacy,
  medicationRequestsOf,
  newOrder,
  orderView,
  PRICE_EXTENSION,
  patientOf,
  pharmacyIn,
  pushesSettled,
  pushInbox,
  quietLogger,
  receiveAllocation,
  subscribe,
  subscribeAll,
  taskOf,
  untilOrder,
  useFakeClock,
} from "./pharmacy-client.js";

const RXNORM = "http://www.nlm.nih.gov/research/umls/rxnorm";
const SNOMED = "http://snomed.info/sct";

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

function start(options: Partial<SandboxOptions> = {}, inbox = pushInbox()) {
  const sandbox = createApp({ pushBackoffMs: 1, ...options }, { fetch: inbox.fetch, logger: quietLogger });
  cleanups.push(sandbox.close);
  return { sandbox, app: sandbox.app, inbox };
}

function scenarioDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "orders-workflow-"));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The push's MedicationRequest / DeviceRequest, as what is ordered. */
function itemsOf(bundle: Bundle) {
  return [
    ...medicationRequestsOf(bundle).map((r) => ({
      kind: "medication",
      coding: r.medicationCodeableConcept?.coding?.[0],
      quantity: r.dispenseRequest?.quantity,
      dosage: r.dosageInstruction?.[0]?.text,
    })),
    ...deviceRequestsOf(bundle).map((r) => ({
      kind: "device",
      coding: r.codeCodeableConcept?.coding?.[0],
      quantity: undefined,
      dosage: undefined,
    })),
  ];
}

describe("POST /__admin/orders: generated orders", () => {
  it("an empty body or {} makes realistic RxNorm medication orders with quantities, or a single-device order", async () => {
    const kinds = new Set<string>();
    for (const seed of ["seed-a", "seed-b", "seed-c"]) {
      const { sandbox, app, inbox } = start({ seed });
      await subscribeAll(app, inbox, ["PH-A"]);
      for (let n = 0; n < 5; n++) {
        const order = await newOrder(app, n % 2 === 0 ? undefined : {});
        const push = await inbox.channel("PH-A").next();
        await pushesSettled(sandbox, order.id);
        const items = itemsOf(push.bundle);
        kinds.add(order.kind);
        expect(items.every((i) => i.kind === order.kind)).toBe(true);
        if (order.kind === "device") {
          expect(items).toHaveLength(1);
          expect(items[0]?.coding).toMatchObject({ system: SNOMED, code: expect.stringMatching(/^\d{6,}$/) });
          expect(items[0]?.coding?.display).toMatch(/\w{4,}/);
        } else {
          expect(items.length).toBeGreaterThanOrEqual(1);
          expect(items.length).toBeLessThanOrEqual(3);
          for (const item of items) {
            expect(item.coding).toMatchObject({ system: RXNORM, code: expect.stringMatching(/^\d+$/) });
            // an RxNorm clinical drug name: ingredient, strength, form
            expect(item.coding?.display).toMatch(
              /^[a-z][a-z ]+ \d+(\.\d+)? (MG|MCG|MG\/ML|UNT)\b.* (Tablet|Capsule|Solution|Injection|Inhaler|Suspension)/i,
            );
            expect(Number.isInteger(item.quantity?.value) && (item.quantity?.value ?? 0) > 0).toBe(true);
            expect(item.quantity?.unit).toMatch(/\w+/);
            expect(item.dosage).toMatch(/\w+/);
          }
          expect(new Set(items.map((i) => i.coding?.code)).size).toBe(items.length);
        }
        expect(order.items.map((i) => i.code)).toEqual(items.map((i) => i.coding?.code));
      }
    }
    expect([...kinds].sort()).toEqual(["device", "medication"]);
  });

  it("the same seed generates the same orders; another seed other ones", async () => {
    const generated = async (seed: string) => {
      const { app, inbox } = start({ seed });
      await subscribeAll(app, inbox, ["PH-A"]);
      const orders = [];
      for (let n = 0; n < 4; n++) orders.push((await newOrder(app)).items.map((i) => [i.code, i.quantity?.value]));
      return orders;
    };
    const first = await generated("same");
    expect(await generated("same")).toEqual(first);
    expect(await generated("other")).not.toEqual(first);
  });
});

describe("POST /__admin/orders: given items, pharmacies, deadline, patient", () => {
  it("given medication items are pushed as coded MedicationRequests for an anonymous patient, with the deadline", async () => {
    useFakeClock();
    const { sandbox, app, inbox } = start();
    await subscribeAll(app, inbox, ["PH-A"]);
    const order = await newOrder(app, {
      items: [
        {
          medication: { code: "197361", display: "amlodipine 5 MG Oral Tablet" },
          quantity: 30,
          unit: "tablet",
          dosage: "1 tablet once daily",
        },
        { medication: { system: "urn:example:drugs", code: "X-1" }, quantity: 2, unit: "pack" },
      ],
      deadline: "45s",
    });
    expect(order).toMatchObject({ state: "open", kind: "medication" });
    expect(Date.parse(order.deadline) - Date.parse(order.createdAt)).toBe(45_000);
    const push = await inbox.channel("PH-A").next();
    await pushesSettled(sandbox, order.id);

    expect(responseHeader(push.bundle).eventCoding?.code).toBe("order-fulfillment-request");
    const task = taskOf(push.bundle);
    expect(task).toMatchObject({ status: "requested", intent: "order" });
    expect(task.restriction?.period?.end).toBe(order.deadline);
    expect(task.owner?.identifier?.value).toBe("PH-A");
    const requests = medicationRequestsOf(push.bundle);
    expect(
      requests.map((r) => [
        r.medicationCodeableConcept?.coding?.[0],
        r.dispenseRequest?.quantity,
        r.dosageInstruction?.[0]?.text,
      ]),
    ).toEqual([
      [
        { system: RXNORM, code: "197361", display: "amlodipine 5 MG Oral Tablet" },
        { value: 30, unit: "tablet" },
        "1 tablet once daily",
      ],
      [{ system: "urn:example:drugs", code: "X-1" }, { value: 2, unit: "pack" }, expect.any(String)],
    ]);
    expect(task.input?.map((i) => i.valueReference?.reference)).toEqual(
      requests.map((r) => `MedicationRequest/${r.id}`),
    );
    expect(task.focus?.reference).toBe(`MedicationRequest/${requests[0]?.id}`);

    const anonymous = patientOf(push.bundle);
    for (const r of requests) expect(r.subject?.reference).toBe(`Patient/${anonymous.id}`);
    expect(task.for?.reference).toBe(`Patient/${anonymous.id}`);
    expect(anonymous.id).not.toBe(order.patient.id);
    for (const field of ["name", "identifier", "address", "telecom", "contact", "photo"] as const)
      expect(anonymous[field]).toBeUndefined();
    expect(anonymous.birthDate ?? "").toMatch(/^(\d{4})?$/);
  });

  it("a given device item makes a single DeviceRequest order (SNOMED CT by default)", async () => {
    const { sandbox, app, inbox } = start();
    await subscribeAll(app, inbox, ["PH-A"]);
    const order = await newOrder(app, { items: [{ device: { code: "58938008", display: "Wheelchair" } }] });
    expect(order.kind).toBe("device");
    const push = await inbox.channel("PH-A").next();
    await pushesSettled(sandbox, order.id);
    expect(medicationRequestsOf(push.bundle)).toEqual([]);
    const [device, ...more] = deviceRequestsOf(push.bundle);
    expect(more).toEqual([]);
    expect(device?.codeCodeableConcept?.coding?.[0]).toMatchObject({
      system: SNOMED,
      code: "58938008",
      display: "Wheelchair",
    });
    expect(taskOf(push.bundle).focus?.reference).toBe(`DeviceRequest/${device?.id}`);
  });

  it("target pharmacies: only the named ones get the order, over real sockets", async () => {
    const receivers = await Promise.all([startReceiver(), startReceiver(), startReceiver()]);
    for (const r of receivers) cleanups.push(r.close);
    const sandbox = createApp({ pushBackoffMs: 1 }, { logger: quietLogger });
    cleanups.push(sandbox.close);
    const { app } = sandbox;
    const [a, b, c] = receivers as [(typeof receivers)[0], (typeof receivers)[0], (typeof receivers)[0]];
    for (const [licence, r] of [
      ["PH-A", a],
      ["PH-B", b],
      ["PH-C", c],
    ] as const)
      expect((await subscribe(app, licence, r.url)).status).toBe(200);

    const order = await newOrder(app, { pharmacies: ["PH-A", "PH-C"] });
    expect(order.pharmacies.map((p) => p.licence)).toEqual(["PH-A", "PH-C"]);
    const [toA, toC] = await Promise.all([a.next(), c.next()]);
    await pushesSettled(sandbox, order.id);
    expect(taskOf(toA.bundle).owner?.identifier?.value).toBe("PH-A");
    expect(taskOf(toC.bundle).owner?.identifier?.value).toBe("PH-C");
    expect(b.received).toEqual([]);
    const view = await orderView(app, order.id);
    expect(view.pharmacies.map((p) => [p.licence, p.state, p.delivery.status])).toEqual([
      ["PH-A", "delivered", 200],
      ["PH-C", "delivered", 200],
    ]);
  });

  it("patient key: the order is that patient's; pushes are anonymous until the allocation carries the patient and the chosen delivery", async () => {
    const key = "urn:ae:emirates-id|784-1985-1234567-3";
    const { sandbox, app, inbox } = start();
    await subscribeAll(app, inbox, ["PH-A", "PH-B"]);
    const order = await newOrder(app, { patient: key, items: [{ medication: { code: "314077" }, quantity: 30 }] });
    expect(order.patient.identifier).toContainEqual({ system: "urn:ae:emirates-id", value: "784-1985-1234567-3" });
    const known = await app.request(`/__admin/patients/${encodeURIComponent(key)}`);
    expect(known.status).toBe(200);
    expect(((await known.json()) as { patient: { id: string } }).patient.id).toBe(order.patient.id);

    const push = await inbox.channel("PH-A").next();
    await pushesSettled(sandbox, order.id);
    const anonymous = patientOf(push.bundle);
    expect(JSON.stringify(push.bundle)).not.toContain("784-1985-1234567-3");
    expect(anonymous.name).toBeUndefined();
    expect(anonymous.identifier).toBeUndefined();

    const task = taskOf(push.bundle);
    const confirmed = await confirm(app, "PH-A", task, {
      availability: "available",
      options: [
        { method: "home-delivery", etaMinutes: 90, price: 15 },
        { method: "pickup", etaMinutes: 30, price: 0 },
      ],
    });
    expect(responseHeader(confirmed.body).response?.code).toBe("ok");
    const allocation = await inbox.channel("PH-A").next();
    await pushesSettled(sandbox, order.id);

    const received = await receiveAllocation(app, "PH-A", task.id as string);
    expect(responseHeader(received.body).response?.code).toBe("ok");
    for (const [name, bundle] of [
      ["order-allocation push", allocation.bundle],
      ["receive-allocation answer", received.body],
    ] as const) {
      const patient = patientOf(bundle);
      expect(patient.id, name).toBe(order.patient.id);
      expect(patient.name?.[0]?.family ?? patient.name?.[0]?.text, name).toMatch(/\w/);
      expect(patient.identifier, name).toContainEqual({ system: "urn:ae:emirates-id", value: "784-1985-1234567-3" });
      const allocated = bundle === received.body ? (focusOf(bundle)[0] as Task) : taskOf(bundle);
      expect(allocated, name).toMatchObject({
        id: task.id,
        status: "in-progress",
        for: { reference: `Patient/${order.patient.id}` },
      });
      expect(allocated.businessStatus?.coding?.[0]?.code, name).toBe("allocated");
      for (const r of medicationRequestsOf(bundle))
        expect(r.subject?.reference, name).toBe(`Patient/${order.patient.id}`);
      const chosen = allocated.input?.find((i) =>
        i.type.coding?.some((c) => c.system === FULFILLMENT_PART && c.code === "chosen-delivery"),
      );
      expect(chosen?.valueCodeableConcept?.coding?.[0], name).toEqual({ system: DELIVERY_METHOD, code: "pickup" });
      const ext = (url: string) => chosen?.extension?.find((e: Extension) => e.url === url);
      expect(ext(ETA_EXTENSION)?.valueDuration, name).toMatchObject({ value: 30, code: "min" });
      expect(ext(PRICE_EXTENSION)?.valueMoney, name).toEqual({ value: 0, currency: "AED" });
    }
    expect(responseHeader(allocation.bundle).eventCoding?.code).toBe("order-allocation");
  });
});

describe("POST /__admin/orders: refusals", () => {
  it.each([
    ["an unknown key", { colour: "red" }, /colour|unrecognized/i],
    [
      "an item with both a medication and a device",
      { items: [{ medication: { code: "861007" }, device: { code: "58938008" } }] },
      /medication or a device/,
    ],
    ["a negative quantity", { items: [{ medication: { code: "861007" }, quantity: -5 }] }, /items\.0\.quantity/],
    ["a zero quantity", { items: [{ medication: { code: "861007" }, quantity: 0 }] }, /items\.0\.quantity/],
    ["an item without a code", { items: [{ medication: { display: "aspirin" } }] }, /items\.0\.medication\.code/],
    ["no items", { items: [] }, /items/],
    [
      "two devices",
      { items: [{ device: { code: "58938008" } }, { device: { code: "70665002" } }] },
      /exactly one device/,
    ],
    [
      "a device with medications",
      { items: [{ device: { code: "58938008" } }, { medication: { code: "861007" } }] },
      /exactly one device/,
    ],
    ["a deadline that is not a duration", { deadline: "soon" }, /deadline/],
    ["a negative deadline", { deadline: -1 }, /deadline/],
    ["pharmacies not a list", { pharmacies: "PH-A" }, /pharmacies/],
    ["a body that is not JSON", "{not json", /not valid JSON/],
    ["a JSON body that is not an object", "[1, 2]", /object/i],
  ])("400 for %s, and no order is made", async (_, body, says) => {
    const { app, inbox } = start();
    await subscribeAll(app, inbox, ["PH-A"]);
    const created = await createOrder(app, body);
    expect(created.status).toBe(400);
    expect(created.body.resourceType).toBe("OperationOutcome");
    expect(created.body.issue.map((i: { diagnostics: string }) => i.diagnostics).join(" ")).toMatch(says);
    expect(((await (await app.request("/__admin/orders")).json()) as { orders: unknown[] }).orders).toEqual([]);
    expect(inbox.channel("PH-A").received).toEqual([]);
  });

  it("404 for an unknown pharmacy licence; 409 when no pharmacy is subscribed or a target unsubscribed", async () => {
    const { app, inbox } = start();
    const none = await createOrder(app, {});
    expect(none.status).toBe(409);
    expect(none.body.issue[0].diagnostics).toMatch(/No pharmacy has an active subscription/);

    await subscribeAll(app, inbox, ["PH-A", "PH-B"]);
    const unknown = await createOrder(app, { pharmacies: ["PH-A", "PH-NOPE"] });
    expect(unknown.status).toBe(404);
    expect(unknown.body.issue[0]).toMatchObject({ code: "not-found", diagnostics: expect.stringContaining("PH-NOPE") });

    expect((await subscribe(app, "PH-B", inbox.channel("PH-B").url, { status: "off" })).status).toBe(200);
    const off = await createOrder(app, { pharmacies: ["PH-B"] });
    expect(off.status).toBe(409);
    expect(off.body.issue[0].diagnostics).toMatch(/PH-B has no active subscription/);
    // an order to "everyone" goes to the still subscribed ones only
    expect((await newOrder(app)).pharmacies.map((p) => p.licence)).toEqual(["PH-A"]);
    expect(((await (await app.request("/__admin/orders")).json()) as { orders: unknown[] }).orders).toHaveLength(1);
  });
});

describe("GET /__admin/orders and /__admin/orders/{id}", () => {
  it("lists orders oldest first and shows each pharmacy's state, delivery and confirmation; 404 for an unknown id", async () => {
    const inbox = pushInbox((push) => (push.target.includes("ph-down") ? 500 : 200));
    const { sandbox, app } = start({ pushAttempts: 1 }, inbox);
    await subscribeAll(app, inbox, ["PH-A", "PH-B", "PH-DOWN"]);
    const first = await newOrder(app, {
      items: [
        { medication: { code: "861007" }, quantity: 60 },
        { medication: { code: "314077" }, quantity: 30 },
      ],
    });
    const second = await newOrder(app, { pharmacies: ["PH-A"] });
    expect([first.id, second.id]).toEqual(["1", "2"]);
    await pushesSettled(sandbox, first.id);
    await pushesSettled(sandbox, second.id);

    const list = (await (await app.request("/__admin/orders")).json()) as {
      orders: Array<{ id: string; state: string }>;
    };
    expect(list.orders.map((o) => [o.id, o.state])).toEqual([
      ["1", "open"],
      ["2", "open"],
    ]);

    const task = taskOf((await inbox.channel("PH-A").next()).bundle);
    const partial: Task = {
      resourceType: "Task",
      id: task.id as string,
      status: "accepted",
      intent: "order",
      businessStatus: { coding: [{ system: FULFILLMENT_STATUS, code: "partial" }] },
      output: [
        {
          type: { coding: [{ system: FULFILLMENT_PART, code: "delivery-option" }] },
          valueCodeableConcept: { coding: [{ system: DELIVERY_METHOD, code: "home-delivery" }] },
          extension: [
            {
              url: ETA_EXTENSION,
              valueDuration: { value: 2, unit: "h", system: "http://unitsofmeasure.org", code: "h" },
            },
            { url: PRICE_EXTENSION, valueMoney: { value: 12.5, currency: "AED" } },
          ],
        },
        {
          type: { coding: [{ system: FULFILLMENT_PART, code: "delivery-option" }] },
          valueCodeableConcept: { coding: [{ system: DELIVERY_METHOD, code: "pickup" }] },
        },
        {
          type: { coding: [{ system: FULFILLMENT_PART, code: "available-item" }] },
          valueReference: { reference: `MedicationRequest/${first.items[1]?.requestId}` },
        },
      ],
    };
    const confirmed = await post(app, fromPharmacy("confirm-drugs-availability", "PH-A", [partial]));
    expect(responseHeader(confirmed.body).response?.code).toBe("ok");

    const view = await orderView(app, first.id);
    expect(view).toMatchObject({ id: "1", state: "open", kind: "medication", allocatedTo: null });
    expect(view.items.map((i) => [i.resourceType, i.code, i.quantity?.value])).toEqual([
      ["MedicationRequest", "861007", 60],
      ["MedicationRequest", "314077", 30],
    ]);
    const a = pharmacyIn(view, "PH-A");
    expect(a).toMatchObject({ state: "confirmed", taskId: task.id, taskStatus: "accepted", businessStatus: "partial" });
    expect(a.delivery).toMatchObject({ attempts: 1, status: 200, error: null });
    expect(Date.parse(a.delivery.deliveredAt ?? "")).not.toBeNaN();
    expect(a.confirmation).toMatchObject({
      availability: "partial",
      availableItems: [first.items[1]?.requestId],
    });
    // an ETA in hours is read as minutes; an option without ETA or price has neither
    expect(a.confirmation?.options).toEqual([
      { method: "home-delivery", etaMinutes: 120, price: 12.5 },
      { method: "pickup" },
    ]);
    expect(Date.parse(a.confirmation?.at ?? "")).not.toBeNaN();
    expect(pharmacyIn(view, "PH-B")).toMatchObject({ state: "delivered", taskStatus: "requested", confirmation: null });
    expect(pharmacyIn(view, "PH-DOWN")).toMatchObject({
      state: "delivery-failed",
      delivery: { attempts: 1, status: 500, error: expect.stringContaining("500"), deliveredAt: null },
    });

    for (const id of ["99", "abc"]) {
      const missing = await app.request(`/__admin/orders/${id}`);
      expect(missing.status).toBe(404);
      expect(((await missing.json()) as { resourceType: string }).resourceType).toBe("OperationOutcome");
    }
  });
});

describe("fixture pharmacies get orders without subscribing", () => {
  const fixture = (licence: string) => `fixtures:
  pharmacies:
    - licence: ${licence}
      name: Fixture ${licence}
      endpoint: http://${licence.toLowerCase()}.pharmacy.test/hook
      headers: { X-Api-Key: key-${licence} }
`;

  it("from a scenarios folder: pushed to, with its headers, and it may confirm", async () => {
    const inbox = pushInbox();
    const { sandbox, app } = start({ scenarios: scenarioDir({ "pharmacies.yaml": fixture("FX-1") }) }, inbox);
    const order = await newOrder(app);
    expect(order.pharmacies.map((p) => p.licence)).toEqual(["FX-1"]);
    const push = await inbox.channel("FX-1").next();
    await pushesSettled(sandbox, order.id);
    expect(push.headers["x-api-key"]).toBe("key-FX-1");
    const reply = await confirm(app, "FX-1", taskOf(push.bundle), { availability: "available" });
    expect(responseHeader(reply.body).response?.code).toBe("ok");
    expect((await orderView(app, order.id)).allocatedTo).toBe("FX-1");
  });

  it("from POST /__admin/scenarios", async () => {
    const { sandbox, app, inbox } = start();
    const added = await app.request("/__admin/scenarios", {
      method: "POST",
      headers: { "content-type": "application/yaml" },
      body: fixture("FX-2"),
    });
    expect(added.status).toBe(201);
    const order = await newOrder(app, { pharmacies: ["FX-2"] });
    const push = await inbox.channel("FX-2").next();
    await pushesSettled(sandbox, order.id);
    expect(taskOf(push.bundle).owner?.identifier?.value).toBe("FX-2");
    expect(pharmacyIn(await orderView(app, order.id), "FX-2").state).toBe("delivered");
  });
});

describe("POST /__admin/orders/{id}/cancel", () => {
  it("cancels an open order: its Tasks are cancelled and the deadline no longer expires anything", async () => {
    useFakeClock();
    const { sandbox, app, inbox } = start();
    await subscribeAll(app, inbox, ["PH-A", "PH-B"]);
    const order = await newOrder(app, { deadline: "10s" });
    const task = taskOf((await inbox.channel("PH-A").next()).bundle);
    await pushesSettled(sandbox, order.id);
    expect(
      responseHeader((await confirm(app, "PH-A", task, { availability: "unavailable" })).body).response?.code,
    ).toBe("ok");

    const cancelled = await app.request(`/__admin/orders/${order.id}/cancel`, { method: "POST" });
    expect(cancelled.status).toBe(200);
    expect(((await cancelled.json()) as { state: string }).state).toBe("cancelled");
    vi.advanceTimersByTime(60_000);
    const view = await orderView(app, order.id);
    expect(view.state).toBe("cancelled");
    expect(view.pharmacies.map((p) => [p.licence, p.state, p.taskStatus, p.businessStatus])).toEqual([
      ["PH-A", "confirmed", "cancelled", "cancelled"],
      ["PH-B", "delivered", "cancelled", "cancelled"],
    ]);

    const again = await app.request(`/__admin/orders/${order.id}/cancel`, { method: "POST" });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { issue: Array<{ diagnostics: string }> }).issue[0]?.diagnostics).toMatch(
      /cancelled/,
    );
    expect((await app.request("/__admin/orders/42/cancel", { method: "POST" })).status).toBe(404);
  });

  it("cancels an allocated order, not a dispensed or expired one", async () => {
    useFakeClock();
    const { sandbox, app, inbox } = start();
    await subscribeAll(app, inbox, ["PH-A"]);
    const allocated = await newOrder(app);
    const task = taskOf((await inbox.channel("PH-A").next()).bundle);
    await pushesSettled(sandbox, allocated.id);
    await confirm(app, "PH-A", task, { availability: "available" });
    await pushesSettled(sandbox, allocated.id);
    expect((await orderView(app, allocated.id)).state).toBe("allocated");
    expect((await app.request(`/__admin/orders/${allocated.id}/cancel`, { method: "POST" })).status).toBe(200);
    expect(pharmacyIn(await orderView(app, allocated.id), "PH-A")).toMatchObject({
      taskStatus: "cancelled",
      businessStatus: "cancelled",
    });

    const expired = await newOrder(app, { deadline: "1s" });
    await pushesSettled(sandbox, expired.id);
    vi.advanceTimersByTime(1000);
    expect((await orderView(app, expired.id)).state).toBe("expired");
    const refused = await app.request(`/__admin/orders/${expired.id}/cancel`, { method: "POST" });
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { issue: Array<{ diagnostics: string }> }).issue[0]?.diagnostics).toMatch(
      /expired/,
    );
  });
});

describe("the confirmation deadline (fake timers)", () => {
  it("unconfirmed pharmacies expire (Task failed, businessStatus expired); without a full confirmation the order expires", async () => {
    useFakeClock();
    const { sandbox, app, inbox } = start();
    await subscribeAll(app, inbox, ["PH-A", "PH-B", "PH-C"]);
    const order = await newOrder(app, {
      deadline: "30s",
      items: [{ medication: { code: "861007" } }, { medication: { code: "314077" } }],
    });
    const task = taskOf((await inbox.channel("PH-A").next()).bundle);
    await pushesSettled(sandbox, order.id);
    const partial = await confirm(app, "PH-A", task, {
      availability: "partial",
      items: [order.items[0]?.requestId as string],
    });
    expect(responseHeader(partial.body).response?.code).toBe("ok");

    vi.advanceTimersByTime(29_999);
    expect((await orderView(app, order.id)).state).toBe("open");
    vi.advanceTimersByTime(1);
    const view = await orderView(app, order.id);
    expect(view.state).toBe("expired");
    expect(view.allocatedTo).toBeNull();
    expect(view.pharmacies.map((p) => [p.licence, p.state, p.taskStatus, p.businessStatus])).toEqual([
      ["PH-A", "confirmed", "accepted", "partial"],
      ["PH-B", "expired", "failed", "expired"],
      ["PH-C", "expired", "failed", "expired"],
    ]);
    expect(view.history.at(-1)?.event).toMatch(/expired/);
    // no allocation was pushed to anyone
    for (const licence of ["PH-A", "PH-B", "PH-C"]) expect(inbox.channel(licence).received).toHaveLength(1);
  });

  it("the default deadline is --confirm-deadline", async () => {
    useFakeClock();
    const { sandbox, app, inbox } = start({ confirmDeadlineMs: 5000 });
    await subscribeAll(app, inbox, ["PH-A"]);
    const order = await newOrder(app);
    expect(Date.parse(order.deadline) - Date.parse(order.createdAt)).toBe(5000);
    await pushesSettled(sandbox, order.id);
    vi.advanceTimersByTime(4999);
    expect((await orderView(app, order.id)).state).toBe("open");
    vi.advanceTimersByTime(1);
    await untilOrder(sandbox, order.id, (o) => o.state === "expired", "expired");
    expect(pharmacyIn(await orderView(app, order.id), "PH-A")).toMatchObject({
      state: "expired",
      taskStatus: "failed",
      businessStatus: "expired",
    });
  });
});

describe("POST /__admin/reset", () => {
  it("forgets orders and stops their timers", async () => {
    useFakeClock();
    const { sandbox: again, app, inbox } = start();
    await subscribeAll(app, inbox, ["PH-A"]);
    const order = await newOrder(app, { deadline: "10s" });
    await pushesSettled(again, order.id);
    expect(vi.getTimerCount()).toBe(1);

    expect((await app.request("/__admin/reset", { method: "POST" })).status).toBe(200);
    expect(vi.getTimerCount()).toBe(0);
    let updates = 0;
    again.events.on("order:updated", () => updates++);
    vi.advanceTimersByTime(60_000);
    expect(updates).toBe(0);
    expect(((await (await app.request("/__admin/orders")).json()) as { orders: unknown[] }).orders).toEqual([]);
    expect((await app.request(`/__admin/orders/${order.id}`)).status).toBe(404);
    // subscriptions went too; after subscribing again, ids start over
    expect((await createOrder(app, {})).status).toBe(409);
    await subscribeAll(app, inbox, ["PH-A"]);
    expect((await newOrder(app)).id).toBe("1");
  });
});
