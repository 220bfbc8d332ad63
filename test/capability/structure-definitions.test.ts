import type { Bundle, Extension, StructureDefinition, Task } from "fhir/r4.js";
import type { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { createApp, type Logger } from "../../src/app.js";
import {
  DELIVERY_METHOD,
  FULFILLMENT_PART,
  FULFILLMENT_STATUS,
  fromPharmacy,
  newOrder,
  orderView,
  pharmacyIn,
  pushInbox,
  subscribeAll,
  taskOf,
} from "../orders/pharmacy-client.js";
import { post, responseHeader } from "../support/messages.js";
import { emittedProblems } from "../support/validator.js";

const ETA = "https://uae-fhir-sandbox.example/fhir/StructureDefinition/estimated-time";
const PRICE = "https://uae-fhir-sandbox.example/fhir/StructureDefinition/price";
const quietLogger: Logger = { info: () => undefined, error: () => undefined };

function sandbox(options: Parameters<typeof createApp>[0] = {}): Hono {
  return createApp({ watch: false, ...options }, { logger: quietLogger }).app;
}

async function get(app: Hono, path: string) {
  const res = await app.request(path);
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary FHIR JSON
  return { res, body: (await res.json()) as any };
}

const DELIVERY_OPTION = [
  { type: "element", expression: "Task.input" },
  { type: "element", expression: "Task.output" },
];
const PUSH_CERTIFICATE = "https://uae-fhir-sandbox.example/fhir/StructureDefinition/push-client-certificate";

const EXPECTED = [
  { id: "estimated-time", url: ETA, valueType: "Duration", context: DELIVERY_OPTION },
  { id: "price", url: PRICE, valueType: "Money", context: DELIVERY_OPTION },
  // A pharmacy's subscription names the client certificate its HTTPS pushes present.
  {
    id: "push-client-certificate",
    url: PUSH_CERTIFICATE,
    valueType: "string",
    context: [{ type: "element", expression: "Subscription.channel" }],
  },
];

describe("GET /uae-fhir/r4/StructureDefinition/{id}: the sandbox's extensions (CONTRACT §12)", () => {
  it.each(EXPECTED)("$id: a valid R4 extension definition fixing url and value[x] ($valueType)", async (expected) => {
    const { res, body } = await get(sandbox(), `/uae-fhir/r4/StructureDefinition/${expected.id}`);
    const sd = body as StructureDefinition;

    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    expect(sd).toMatchObject({
      resourceType: "StructureDefinition",
      id: expected.id,
      url: expected.url,
      status: "active",
      fhirVersion: "4.0.1",
      kind: "complex-type",
      abstract: false,
      type: "Extension",
      baseDefinition: "http://hl7.org/fhir/StructureDefinition/Extension",
      derivation: "constraint",
      context: expected.context,
    });
    expect(sd.name).toMatch(/^[A-Z]([A-Za-z0-9_]){0,254}$/);
    expect(sd.date).toMatch(/^\d{4}-\d{2}-\d{2}/);
    expect(sd.description).toMatch(/\S/);
    const elements = sd.differential?.element ?? [];
    expect(elements[0]?.path).toBe("Extension");
    expect(elements.find((e) => e.path === "Extension.url")?.fixedUri).toBe(expected.url);
    const value = elements.find((e) => e.path === "Extension.value[x]");
    expect(value?.type).toEqual([{ code: expected.valueType }]);
    expect(value?.min).toBe(1);
    expect(elements.find((e) => e.path === "Extension.extension")?.max).toBe("0");
    expect(emittedProblems(sd)).toEqual([]);
  });

  it("GET .../StructureDefinition is a searchset of all three", async () => {
    const { res, body } = await get(sandbox(), "/uae-fhir/r4/StructureDefinition");
    const bundle = body as Bundle;

    expect(res.status).toBe(200);
    expect(bundle).toMatchObject({ resourceType: "Bundle", type: "searchset", total: 3 });
    expect(bundle.entry?.map((e) => [e.fullUrl, e.search?.mode])).toEqual([
      ["http://localhost/uae-fhir/r4/StructureDefinition/estimated-time", "match"],
      ["http://localhost/uae-fhir/r4/StructureDefinition/price", "match"],
      ["http://localhost/uae-fhir/r4/StructureDefinition/push-client-certificate", "match"],
    ]);
    expect(emittedProblems(bundle)).toEqual([]);
  });

  it("GET .../StructureDefinition?url= resolves an extension's canonical URL", async () => {
    const { body } = await get(sandbox(), `/uae-fhir/r4/StructureDefinition?url=${encodeURIComponent(ETA)}`);

    expect(body).toMatchObject({ type: "searchset", total: 1 });
    expect(body.entry[0].resource.url).toBe(ETA);
  });

  it("is served under --base-path and at /fhir too; an unknown id is a 404 not-found", async () => {
    const based = sandbox({ basePath: "/sandbox" });
    expect((await get(based, "/sandbox/uae-fhir/r4/StructureDefinition/price")).body.url).toBe(PRICE);
    expect((await get(based, "/sandbox/fhir/StructureDefinition/price")).body.url).toBe(PRICE);

    const { res, body } = await get(sandbox(), "/uae-fhir/r4/StructureDefinition/eta");
    expect(res.status).toBe(404);
    expect(body.resourceType).toBe("OperationOutcome");
    expect(body.issue[0].code).toBe("not-found");
  });
});

describe("the pushes and confirmations use the extensions' canonical URLs", () => {
  it("the allocation push carries the chosen option's ETA and price under the new URLs", async () => {
    const inbox = pushInbox();
    const sandboxApp = createApp({ watch: false, pushBackoffMs: 1 }, { fetch: inbox.fetch, logger: quietLogger });
    const { app } = sandboxApp;
    try {
      await subscribeAll(app, inbox, ["PH-A"]);
      const order = await newOrder(app, { pharmacies: ["PH-A"] });
      const task = taskOf((await inbox.channel("PH-A").next()).bundle);

      const confirmation: Task = {
        ...task,
        status: "accepted",
        businessStatus: { coding: [{ system: FULFILLMENT_STATUS, code: "available" }] },
        output: [
          {
            extension: [
              { url: ETA, valueDuration: { value: 45, unit: "min", system: "http://unitsofmeasure.org", code: "min" } },
              { url: PRICE, valueMoney: { value: 10, currency: "AED" } },
            ],
            type: { coding: [{ system: FULFILLMENT_PART, code: "delivery-option" }] },
            valueCodeableConcept: { coding: [{ system: DELIVERY_METHOD, code: "home-delivery" }] },
          },
        ],
      };
      const reply = await post(app, fromPharmacy("confirm-drugs-availability", "PH-A", [confirmation]));
      expect(responseHeader(reply.body).response?.code).toBe("ok");

      const allocation = taskOf((await inbox.channel("PH-A").next()).bundle);
      const chosen = allocation.input?.find((i) => i.type.coding?.some((c) => c.code === "chosen-delivery"));
      expect(chosen?.extension).toEqual([
        { url: ETA, valueDuration: { value: 45, unit: "min", system: "http://unitsofmeasure.org", code: "min" } },
        { url: PRICE, valueMoney: { value: 10, currency: "AED" } },
      ]);
      expect(pharmacyIn(await orderView(app, order.id), "PH-A").confirmation?.options).toEqual([
        { method: "home-delivery", etaMinutes: 45, price: 10 },
      ]);
    } finally {
      sandboxApp.close();
    }
  });

  it("the old urn:uae-fhir-sandbox URLs are no longer read: such an option has no ETA or price", async () => {
    const inbox = pushInbox();
    const sandboxApp = createApp({ watch: false, pushBackoffMs: 1 }, { fetch: inbox.fetch, logger: quietLogger });
    const { app } = sandboxApp;
    try {
      await subscribeAll(app, inbox, ["PH-A"]);
      const order = await newOrder(app, { pharmacies: ["PH-A"] });
      const task = taskOf((await inbox.channel("PH-A").next()).bundle);
      const oldUrns: Extension[] = [
        {
          url: "urn:uae-fhir-sandbox:estimated-time",
          valueDuration: { value: 45, unit: "min", system: "http://unitsofmeasure.org", code: "min" },
        },
        { url: "urn:uae-fhir-sandbox:price", valueMoney: { value: 10, currency: "AED" } },
      ];
      const confirmation: Task = {
        ...task,
        status: "accepted",
        businessStatus: { coding: [{ system: FULFILLMENT_STATUS, code: "available" }] },
        output: [
          {
            extension: oldUrns,
            type: { coding: [{ system: FULFILLMENT_PART, code: "delivery-option" }] },
            valueCodeableConcept: { coding: [{ system: DELIVERY_METHOD, code: "pickup" }] },
          },
        ],
      };
      await post(app, fromPharmacy("confirm-drugs-availability", "PH-A", [confirmation]));

      expect(pharmacyIn(await orderView(app, order.id), "PH-A").confirmation?.options).toEqual([{ method: "pickup" }]);
    } finally {
      sandboxApp.close();
    }
  });
});
