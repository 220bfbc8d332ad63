import { fileURLToPath } from "node:url";
import type { Bundle, MessageDefinition, OperationOutcome } from "fhir/r4.js";
import type { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { emittedProblems } from "../support/validator.js";

const CANONICAL = "https://uae-fhir-sandbox.example/fhir";
const EVENTS = "urn:uae-fhir-sandbox:events";
const START = new Date("2026-03-01T08:00:00.000Z");
const fixture = (name: string): string => fileURLToPath(new URL(`../fixtures/operations/${name}`, import.meta.url));

type Focus = [code: string, min: number, max: string];
const patient: Focus[] = [["Patient", 1, "1"]];
const many = (code: string): Focus[] => [[code, 1, "*"]];
const history: Focus[] = [
  ["Condition", 0, "*"],
  ["Procedure", 0, "*"],
];
const task: Focus[] = [["Task", 1, "1"]];

/** What each MessageDefinition must say, written out from CONTRACT §3 and §8 (not read from the catalogue). */
const EXPECTED: Array<{ id: string; category: string; focus: Focus[]; responseRequired: string }> = [
  { id: "view-patient-profile", category: "currency", focus: patient, responseRequired: "always" },
  { id: "add-allergy", category: "consequence", focus: many("AllergyIntolerance"), responseRequired: "always" },
  { id: "update-allergy", category: "consequence", focus: many("AllergyIntolerance"), responseRequired: "always" },
  { id: "remove-allergy", category: "consequence", focus: many("AllergyIntolerance"), responseRequired: "always" },
  { id: "add-history", category: "consequence", focus: history, responseRequired: "always" },
  { id: "update-history", category: "consequence", focus: history, responseRequired: "always" },
  { id: "remove-history", category: "consequence", focus: history, responseRequired: "always" },
  { id: "add-measurement", category: "consequence", focus: many("Observation"), responseRequired: "always" },
  { id: "update-measurement", category: "consequence", focus: many("Observation"), responseRequired: "always" },
  { id: "remove-measurement", category: "consequence", focus: many("Observation"), responseRequired: "always" },
  {
    id: "subscribe-order-notifications",
    category: "consequence",
    focus: [
      ["Subscription", 1, "1"],
      ["Organization", 0, "1"],
    ],
    responseRequired: "always",
  },
  { id: "confirm-drugs-availability", category: "consequence", focus: task, responseRequired: "always" },
  { id: "receive-allocation", category: "currency", focus: task, responseRequired: "always" },
  {
    id: "send-dispense-summary",
    category: "consequence",
    focus: [
      ["MedicationDispense", 0, "*"],
      ["Task", 0, "1"],
    ],
    responseRequired: "always",
  },
  { id: "get-pending-tasks", category: "currency", focus: patient, responseRequired: "always" },
  { id: "add-task", category: "consequence", focus: many("Task"), responseRequired: "always" },
  { id: "update-task", category: "consequence", focus: many("Task"), responseRequired: "always" },
  { id: "cancel-task", category: "consequence", focus: many("Task"), responseRequired: "always" },
  { id: "order-fulfillment-request", category: "notification", focus: task, responseRequired: "never" },
  { id: "order-allocation", category: "notification", focus: task, responseRequired: "never" },
];

function sandbox(options: Parameters<typeof createApp>[0] = {}): Hono {
  return createApp({ watch: false, ...options }, { now: () => START }).app;
}

async function get(app: Hono, path: string) {
  const res = await app.request(path);
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary FHIR JSON
  return { res, body: (await res.json()) as any };
}

describe("GET /uae-fhir/r4/MessageDefinition/{id} (CONTRACT §12)", () => {
  it.each(EXPECTED)("$id: a valid R4 MessageDefinition saying what the message is", async (expected) => {
    const { res, body } = await get(sandbox(), `/uae-fhir/r4/MessageDefinition/${expected.id}`);
    const definition = body as MessageDefinition;
    const url = `${CANONICAL}/MessageDefinition/${expected.id}`;

    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    expect(definition).toMatchObject({
      resourceType: "MessageDefinition",
      id: expected.id,
      url,
      status: "active",
      date: "2026-03-01T08:00:00.000Z",
      publisher: "uae-fhir-sandbox",
      eventCoding: { system: EVENTS, code: expected.id },
      category: expected.category,
      responseRequired: expected.responseRequired,
    });
    expect(definition.base).toBeUndefined();
    expect(definition.name).toMatch(/^[A-Z]([A-Za-z0-9_]){0,254}$/);
    expect(definition.title).toMatch(/\S/);
    expect(definition.description).toMatch(/\S/);
    expect(definition.focus?.map((f) => [f.code, f.min, f.max])).toEqual(expected.focus);
    // R4 responses reuse the request's event: every allowed response is a message of this same definition.
    expect(definition.allowedResponse?.length).toBeGreaterThan(0);
    for (const allowed of definition.allowedResponse ?? []) expect(allowed.message).toBe(url);
    expect(emittedProblems(definition)).toEqual([]);
  });

  it("says when an operation answers ok, fatal-error and transient-error", async () => {
    const { body } = await get(sandbox(), "/uae-fhir/r4/MessageDefinition/add-allergy");
    const situations = (body as MessageDefinition).allowedResponse?.map((a) => a.situation ?? "");

    expect(situations).toHaveLength(3);
    expect(situations?.[0]).toMatch(/^`ok`/);
    expect(situations?.[1]).toMatch(/^`fatal-error`.*business rule/);
    expect(situations?.[2]).toMatch(/^`transient-error`.*scenario/);
  });

  it("says a push needs no response message, only an HTTP 2xx", async () => {
    const { body } = await get(sandbox(), "/uae-fhir/r4/MessageDefinition/order-allocation");
    const definition = body as MessageDefinition;

    expect(definition.responseRequired).toBe("never");
    expect(definition.description).toMatch(/2xx/);
    expect(definition.allowedResponse?.[0]?.situation).toMatch(/any 2xx counts as delivered/);
  });

  it("is served at /fhir/MessageDefinition/{id} too, and under --base-path", async () => {
    expect((await get(sandbox(), "/fhir/MessageDefinition/remove-allergy")).body.id).toBe("remove-allergy");
    const based = sandbox({ basePath: "/sandbox" });
    expect((await get(based, "/sandbox/uae-fhir/r4/MessageDefinition/add-task")).body.id).toBe("add-task");
    expect((await based.request("/uae-fhir/r4/MessageDefinition/add-task")).status).toBe(404);
  });

  it("an unknown id is a 404 OperationOutcome with issue code not-found", async () => {
    const { res, body } = await get(sandbox(), "/uae-fhir/r4/MessageDefinition/add-alergy");
    const outcome = body as OperationOutcome;

    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    expect(outcome.resourceType).toBe("OperationOutcome");
    expect(outcome.issue[0]?.code).toBe("not-found");
    expect(outcome.issue[0]?.diagnostics).toContain("add-alergy");
    expect(emittedProblems(outcome)).toEqual([]);
  });
});

describe("GET /uae-fhir/r4/MessageDefinition: the searchset", () => {
  it("holds every MessageDefinition as a match, with total and RESTful fullUrls", async () => {
    const { res, body } = await get(sandbox(), "http://sandbox.test:9000/uae-fhir/r4/MessageDefinition");
    const bundle = body as Bundle;

    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    expect(bundle).toMatchObject({ resourceType: "Bundle", type: "searchset", total: 20 });
    expect(bundle.entry?.map((e) => e.resource?.id)).toEqual(EXPECTED.map((e) => e.id));
    for (const entry of bundle.entry ?? []) {
      expect(entry.fullUrl).toBe(`http://sandbox.test:9000/uae-fhir/r4/MessageDefinition/${entry.resource?.id}`);
      expect(entry.search).toEqual({ mode: "match" });
    }
    expect(emittedProblems(bundle)).toEqual([]);
  });
});

describe("GET /uae-fhir/r4/MessageDefinition?url=: resolving a canonical", () => {
  it("finds the one MessageDefinition with that url (a |version suffix ignored)", async () => {
    const app = sandbox();
    for (const query of [
      `${CANONICAL}/MessageDefinition/order-allocation`,
      `${CANONICAL}/MessageDefinition/order-allocation|0.1.0`,
    ]) {
      const { res, body } = await get(app, `/uae-fhir/r4/MessageDefinition?url=${encodeURIComponent(query)}`);
      const bundle = body as Bundle;
      expect(res.status).toBe(200);
      expect(bundle).toMatchObject({ type: "searchset", total: 1 });
      expect(bundle.entry?.[0]?.resource?.id).toBe("order-allocation");
      expect(bundle.link?.[0]?.url).toBe(
        `http://localhost/uae-fhir/r4/MessageDefinition?url=${encodeURIComponent(query)}`,
      );
      expect(emittedProblems(bundle)).toEqual([]);
    }
  });

  it("an unknown url is an empty searchset; other parameters are ignored", async () => {
    const app = sandbox();
    const none = (await get(app, "/uae-fhir/r4/MessageDefinition?url=http%3A%2F%2Fexample.org%2Fnope")).body as Bundle;
    expect(none).toMatchObject({ resourceType: "Bundle", type: "searchset", total: 0 });
    expect(none.entry ?? []).toEqual([]);
    expect(emittedProblems(none)).toEqual([]);

    const all = (await get(app, "/uae-fhir/r4/MessageDefinition?_count=1&name=AddAllergy")).body as Bundle;
    expect(all.total).toBe(20);
    expect(all.link?.[0]?.url).toBe("http://localhost/uae-fhir/r4/MessageDefinition");
  });
});

describe("MessageDefinitions with an operations file (renamed code, alias)", () => {
  const app = () => sandbox({ operationsFile: fixture("rename-add-allergy.yaml") });

  it("add-allergy carries the renamed event code", async () => {
    const { body } = await get(app(), "/uae-fhir/r4/MessageDefinition/add-allergy");

    expect(body).toMatchObject({
      id: "add-allergy",
      url: `${CANONICAL}/MessageDefinition/add-allergy`,
      eventCoding: { system: EVENTS, code: "AllergyIntolerance-Create" },
      category: "consequence",
    });
    expect(body.base).toBeUndefined();
    expect(emittedProblems(body)).toEqual([]);
  });

  it("the alias has its own MessageDefinition, based on add-allergy's", async () => {
    const { res, body } = await get(app(), "/uae-fhir/r4/MessageDefinition/add-allergy-alias-1");
    const url = `${CANONICAL}/MessageDefinition/add-allergy-alias-1`;

    expect(res.status).toBe(200);
    expect(body).toMatchObject({
      resourceType: "MessageDefinition",
      id: "add-allergy-alias-1",
      url,
      status: "active",
      base: `${CANONICAL}/MessageDefinition/add-allergy`,
      eventCoding: { system: EVENTS, code: "allergy-add" },
      category: "consequence",
      responseRequired: "always",
    });
    expect(body.name).toMatch(/^[A-Z]([A-Za-z0-9_]){0,254}$/);
    expect((body as MessageDefinition).focus?.map((f) => [f.code, f.min, f.max])).toEqual([
      ["AllergyIntolerance", 1, "*"],
    ]);
    for (const allowed of (body as MessageDefinition).allowedResponse ?? []) expect(allowed.message).toBe(url);
    expect(emittedProblems(body)).toEqual([]);
  });

  it("the searchset lists the alias after its operation; other operations keep their codes", async () => {
    const { body } = await get(app(), "/uae-fhir/r4/MessageDefinition");
    const bundle = body as Bundle;

    expect(bundle.total).toBe(21);
    const ids = bundle.entry?.map((e) => e.resource?.id);
    expect(ids?.slice(0, 3)).toEqual(["view-patient-profile", "add-allergy", "add-allergy-alias-1"]);
    const update = bundle.entry?.find((e) => e.resource?.id === "update-allergy")?.resource as MessageDefinition;
    expect(update.eventCoding?.code).toBe("update-allergy");
    expect(emittedProblems(bundle)).toEqual([]);
  });

  it("an alias number that does not exist is a 404", async () => {
    expect((await app().request("/uae-fhir/r4/MessageDefinition/add-allergy-alias-2")).status).toBe(404);
  });
});
