import type { Bundle, MedicationRequest, Organization, Patient, Subscription, Task } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { focusOf, messageBundle, post, responseHeader } from "../support/messages.js";
import { startReceiver } from "../support/receiver.js";

const pharmacy = (licence: string): Organization => ({
  resourceType: "Organization",
  id: `org-${licence}`,
  identifier: [{ system: "urn:ae:pharmacy-licence", value: licence }],
  name: `Pharmacy ${licence}`,
});

/** A message from a pharmacy: its Organization as MessageHeader.sender. */
function fromPharmacy(
  event: string,
  licence: string,
  resources: Array<
    Bundle["entry"] extends Array<infer E> | undefined ? (E extends { resource?: infer R } ? R : never) : never
  >,
) {
  const org = pharmacy(licence);
  const bundle = messageBundle(event, [...resources, org] as never[], {
    focus: resources.map((_, i) => i),
    header: { sender: { reference: `Organization/${org.id}` } },
  });
  return bundle;
}

/** Waits until the journal has recorded `count` calls of an operation (POST /__admin/calls/wait). */
async function recorded(app: ReturnType<typeof createApp>["app"], operation: string, count: number) {
  const res = await app.request("/__admin/calls/wait", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ operation, atLeast: count, timeoutMs: 5000 }),
  });
  expect(((await res.json()) as { ok: boolean }).ok).toBe(true);
}

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

describe("the pharmacy push flow end to end (CONTRACT §8)", () => {
  it("subscribe ×2 → order fans out → confirm → allocation pushed → receive-allocation → dispense → dispensed", async () => {
    const a = await startReceiver();
    const b = await startReceiver();
    const sandbox = createApp({ pushBackoffMs: 10 });
    closers.push(a.close, b.close, sandbox.close);
    const { app } = sandbox;

    for (const [licence, receiver, key] of [
      ["PH-A", a, "key-a"],
      ["PH-B", b, "key-b"],
    ] as const) {
      const subscription: Subscription = {
        resourceType: "Subscription",
        status: "requested",
        reason: "Drug order fulfillment requests",
        criteria: "Task?code=fulfill",
        channel: {
          type: "rest-hook",
          endpoint: receiver.url,
          payload: "application/fhir+json",
          header: [`X-Api-Key: ${key}`],
        },
      };
      const reply = await post(app, messageBundle("subscribe-order-notifications", [subscription, pharmacy(licence)]));
      expect(reply.status).toBe(200);
      expect(focusOf(reply.body)[0]).toMatchObject({ resourceType: "Subscription", status: "active" });
    }

    const created = await app.request("/__admin/orders", { method: "POST" });
    expect(created.status).toBe(201);
    const order = (await created.json()) as { id: string; pharmacies: Array<{ licence: string }> };
    expect(order.pharmacies.map((p) => p.licence).sort()).toEqual(["PH-A", "PH-B"]);

    const [pushA, pushB] = await Promise.all([a.next(), b.next()]);
    await recorded(app, "order-fulfillment-request", 2);
    expect(pushA.headers["x-api-key"]).toBe("key-a");
    expect(pushB.headers["x-api-key"]).toBe("key-b");
    expect(pushA.headers["content-type"]).toBe("application/json; charset=utf-8");
    const header = responseHeader(pushA.bundle);
    expect(header.eventCoding?.code).toBe("order-fulfillment-request");
    const task = focusOf(pushA.bundle)[0] as Task;
    expect(task).toMatchObject({ resourceType: "Task", status: "requested" });
    expect(Date.parse(task.restriction?.period?.end ?? "")).toBeGreaterThan(Date.now());
    const anonymous = (pushA.bundle as Bundle).entry?.find((e) => e.resource?.resourceType === "Patient")
      ?.resource as Patient;
    expect(anonymous.name).toBeUndefined();
    expect(anonymous.identifier).toBeUndefined();
    expect(anonymous.address).toBeUndefined();
    expect(anonymous.telecom).toBeUndefined();

    const confirmation: Task = {
      ...task,
      status: "accepted",
      businessStatus: { coding: [{ system: "urn:uae-fhir-sandbox:fulfillment-status", code: "available" }] },
      output: [
        {
          type: { coding: [{ system: "urn:uae-fhir-sandbox:fulfillment-part", code: "delivery-option" }] },
          valueCodeableConcept: { coding: [{ system: "urn:uae-fhir-sandbox:delivery-method", code: "home-delivery" }] },
        },
      ],
    };
    const confirmed = await post(app, fromPharmacy("confirm-drugs-availability", "PH-A", [confirmation]));
    expect(responseHeader(confirmed.body).response?.code).toBe("ok");

    const allocationPush = await a.next();
    await recorded(app, "order-allocation", 1);
    expect(responseHeader(allocationPush.bundle).eventCoding?.code).toBe("order-allocation");
    const allocated = focusOf(allocationPush.bundle)[0] as Task;
    expect(allocated).toMatchObject({ id: task.id, status: "in-progress" });
    const identified = (allocationPush.bundle as Bundle).entry?.find((e) => e.resource?.resourceType === "Patient")
      ?.resource as Patient;
    expect(identified.name?.length).toBeGreaterThan(0);

    const received = await post(app, fromPharmacy("receive-allocation", "PH-A", [{ ...task }]));
    expect(responseHeader(received.body).response?.code).toBe("ok");
    expect(focusOf(received.body)[0]).toMatchObject({ id: task.id, status: "in-progress" });

    const requests = (pushA.bundle as Bundle).entry
      ?.map((e) => e.resource)
      .filter((r): r is MedicationRequest => r?.resourceType === "MedicationRequest") as MedicationRequest[];
    const dispenses = requests.map((r) => ({
      resourceType: "MedicationDispense" as const,
      status: "completed" as const,
      medicationCodeableConcept: r.medicationCodeableConcept,
      authorizingPrescription: [{ reference: `MedicationRequest/${r.id}` }],
      quantity: r.dispenseRequest?.quantity,
      whenHandedOver: new Date().toISOString(),
    }));
    const dispensed = await post(app, fromPharmacy("send-dispense-summary", "PH-A", dispenses));
    expect(responseHeader(dispensed.body).response?.code).toBe("ok");

    const final = (await (await app.request(`/__admin/orders/${order.id}`)).json()) as {
      state: string;
      pharmacies: Array<{ licence: string; state: string }>;
    };
    expect(final.state).toBe("dispensed");
    expect(final.pharmacies.find((p) => p.licence === "PH-A")?.state).toBe("dispensed");
    expect(final.pharmacies.find((p) => p.licence === "PH-B")?.state).toBe("not-allocated");

    const calls = (
      (await (await app.request("/__admin/calls")).json()) as { calls: Array<{ direction: string; operation: string }> }
    ).calls;
    expect(calls.map((c) => `${c.direction} ${c.operation}`)).toEqual([
      "inbound subscribe-order-notifications",
      "inbound subscribe-order-notifications",
      "outbound order-fulfillment-request",
      "outbound order-fulfillment-request",
      "inbound confirm-drugs-availability",
      "outbound order-allocation",
      "inbound receive-allocation",
      "inbound send-dispense-summary",
    ]);
  });
});
