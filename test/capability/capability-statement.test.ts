import { fileURLToPath } from "node:url";
import type { CapabilityStatement } from "fhir/r4.js";
import type { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { CONTRACT_OPERATION_IDS } from "../support/contract-operations.js";
import { emittedProblems } from "../support/validator.js";

/** The 18 operations of the contract: the statement must list each as a message it receives. */
const OPERATIONS = CONTRACT_OPERATION_IDS;
const PUSHES = ["order-fulfillment-request", "order-allocation"];
const CANONICAL = "https://uae-fhir-sandbox.example/fhir";
const START = new Date("2026-03-01T08:00:00.000Z");
const fixture = (name: string): string => fileURLToPath(new URL(`../fixtures/operations/${name}`, import.meta.url));

function sandbox(options: Parameters<typeof createApp>[0] = {}): Hono {
  return createApp({ watch: false, ...options }, { now: () => START }).app;
}

async function metadata(app: Hono, path = "/uae-fhir/r4/metadata", origin = "http://localhost") {
  const res = await app.request(`${origin}${path}`);
  return { res, statement: (await res.json()) as CapabilityStatement };
}

describe("GET /uae-fhir/r4/metadata: the CapabilityStatement (CONTRACT §12)", () => {
  it("is an active instance statement for FHIR 4.0.1 in JSON, served as application/fhir+json", async () => {
    const { res, statement } = await metadata(sandbox());

    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    expect(statement).toMatchObject({
      resourceType: "CapabilityStatement",
      status: "active",
      date: "2026-03-01T08:00:00.000Z",
      kind: "instance",
      fhirVersion: "4.0.1",
      format: ["json"],
      software: { name: "uae-fhir-sandbox" },
    });
    expect(statement.software?.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(statement.implementation?.description).toMatch(/\S/);
    expect(statement.name).toMatch(/^[A-Z]([A-Za-z0-9_]){0,254}$/);
  });

  it("names the FHIR base it was fetched from as implementation.url", async () => {
    const app = sandbox();

    expect(
      (await metadata(app, "/uae-fhir/r4/metadata", "http://sandbox.test:9000")).statement.implementation?.url,
    ).toBe("http://sandbox.test:9000/uae-fhir/r4");
    expect((await metadata(app, "/fhir/metadata", "https://other.test")).statement.implementation?.url).toBe(
      "https://other.test/fhir",
    );
  });

  it("lists both message paths as http messaging endpoints with their absolute URLs", async () => {
    const { statement } = await metadata(sandbox(), "/uae-fhir/r4/metadata", "http://sandbox.test:9000");

    expect(statement.messaging).toHaveLength(1);
    expect(statement.messaging?.[0]?.endpoint).toEqual([
      {
        protocol: { system: "http://terminology.hl7.org/CodeSystem/message-transport", code: "http", display: "HTTP" },
        address: "http://sandbox.test:9000/uae-fhir/r4/$process-message",
      },
      {
        protocol: { system: "http://terminology.hl7.org/CodeSystem/message-transport", code: "http", display: "HTTP" },
        address: "http://sandbox.test:9000/fhir/$process-message",
      },
    ]);
    expect(statement.messaging?.[0]?.documentation).toMatch(/fhir\/\$process-message` receives `remove-allergy`\./);
  });

  it("has one receiver supportedMessage per operation and one sender per push, each a MessageDefinition canonical", async () => {
    const { statement } = await metadata(sandbox());

    expect(statement.messaging?.[0]?.supportedMessage).toEqual([
      ...OPERATIONS.map((id) => ({ mode: "receiver", definition: `${CANONICAL}/MessageDefinition/${id}` })),
      ...PUSHES.map((id) => ({ mode: "sender", definition: `${CANONICAL}/MessageDefinition/${id}` })),
    ]);
  });

  it("every supportedMessage definition resolves through GET MessageDefinition/{id} to a definition with that url", async () => {
    const app = sandbox();
    const { statement } = await metadata(app);

    for (const { definition } of statement.messaging?.[0]?.supportedMessage ?? []) {
      const id = definition.slice(`${CANONICAL}/MessageDefinition/`.length);
      const res = await app.request(`/uae-fhir/r4/MessageDefinition/${id}`);
      expect(res.status, definition).toBe(200);
      expect(((await res.json()) as { url: string }).url).toBe(definition);
    }
  });

  it("lists what the REST side serves: MessageDefinition and StructureDefinition (read, search-type), read and vread of what answers name, and $process-message", async () => {
    const { statement } = await metadata(sandbox());

    expect(statement.rest).toHaveLength(1);
    const rest = statement.rest?.[0];
    expect(rest?.mode).toBe("server");
    expect(rest?.resource?.map((r) => ({ type: r.type, interaction: r.interaction }))).toEqual([
      { type: "MessageDefinition", interaction: [{ code: "read" }, { code: "search-type" }] },
      { type: "StructureDefinition", interaction: [{ code: "read" }, { code: "search-type" }] },
      // Every type an answer or push names with a RESTful fullUrl: each can be read where its fullUrl says.
      ...[
        "AllergyIntolerance",
        "Composition",
        "Condition",
        "DeviceRequest",
        "MedicationDispense",
        "MedicationRequest",
        "Observation",
        "OperationOutcome",
        "Organization",
        "Patient",
        "Procedure",
        "Subscription",
        "Task",
      ].map((type) => ({ type, interaction: [{ code: "read" }, { code: "vread" }] })),
    ]);
    for (const resource of rest?.resource?.slice(0, 2) ?? []) {
      expect(
        resource.searchParam?.map((p) => [p.name, p.type]),
        resource.type,
      ).toEqual([["url", "uri"]]);
    }
    expect(rest?.operation?.map((o) => ({ name: o.name, definition: o.definition }))).toEqual([
      { name: "process-message", definition: "http://hl7.org/fhir/OperationDefinition/MessageHeader-process-message" },
    ]);
  });

  it("satisfies the CapabilityStatement invariants it is bound by (cpb-1, cpb-2, cpb-3, cpb-14, cpb-15, cpb-16)", async () => {
    const { statement } = await metadata(sandbox());

    // cpb-1: rest, messaging or document; cpb-2: description, software or implementation.
    expect((statement.rest?.length ?? 0) + (statement.messaging?.length ?? 0)).toBeGreaterThan(0);
    expect(statement.description ?? statement.software ?? statement.implementation).toBeDefined();
    // cpb-3: messaging endpoints only on an instance; cpb-14: an instance has implementation.
    expect(statement.kind).toBe("instance");
    expect(statement.implementation).toBeDefined();
    // cpb-9: a resource type listed once per rest mode.
    const types = statement.rest?.[0]?.resource?.map((r) => r.type) ?? [];
    expect(new Set(types).size).toBe(types.length);
  });

  // Budget: 6.3 s in a serial run at a load average of 12, the validator's indexing included (2026-11-27).
  it("is valid R4, also at /fhir/metadata and with an operations file", async () => {
    const withFile = sandbox({ operationsFile: fixture("rename-add-allergy.yaml") });
    for (const { statement } of [
      await metadata(sandbox()),
      await metadata(sandbox(), "/fhir/metadata"),
      await metadata(withFile),
    ]) {
      expect(emittedProblems(statement)).toEqual([]);
    }
  }, 15_000);

  it("is the same document at /fhir/metadata but for the FHIR base", async () => {
    const app = sandbox();
    const standard = (await metadata(app)).statement;
    const alternate = (await metadata(app, "/fhir/metadata")).statement;

    expect(alternate.implementation?.url).toBe("http://localhost/fhir");
    expect({ ...alternate, implementation: undefined }).toEqual({ ...standard, implementation: undefined });
  });
});

describe("metadata with --base-path", () => {
  it("is served under the base path, with the base path in the FHIR base and the endpoints", async () => {
    const app = sandbox({ basePath: "/sandbox" });

    const { res, statement } = await metadata(app, "/sandbox/uae-fhir/r4/metadata");
    expect(res.status).toBe(200);
    expect(statement.implementation?.url).toBe("http://localhost/sandbox/uae-fhir/r4");
    expect(statement.messaging?.[0]?.endpoint?.map((e) => e.address)).toEqual([
      "http://localhost/sandbox/uae-fhir/r4/$process-message",
      "http://localhost/sandbox/fhir/$process-message",
    ]);
    expect((await app.request("/sandbox/fhir/metadata")).status).toBe(200);
    expect((await app.request("/uae-fhir/r4/metadata")).status).toBe(404);
  });
});

describe("metadata with an operations file", () => {
  it("lists one receiver per operation and per alias, the renamed code in the endpoint documentation", async () => {
    const app = sandbox({ operationsFile: fixture("rename-add-allergy.yaml") });

    const { statement } = await metadata(app);
    const received = statement.messaging?.[0]?.supportedMessage
      ?.filter((m) => m.mode === "receiver")
      .map((m) => m.definition);
    expect(received).toHaveLength(19);
    expect(received).toContain(`${CANONICAL}/MessageDefinition/add-allergy`);
    expect(received).toContain(`${CANONICAL}/MessageDefinition/add-allergy-alias-1`);
    expect(statement.messaging?.[0]?.documentation).toContain("`AllergyIntolerance-Create`, `allergy-add`");
  });

  it("drops the alternate endpoint when the file moves remove-allergy to the standard path", async () => {
    const app = sandbox({ operationsFile: fixture("move-path.yaml") });

    const { statement } = await metadata(app);
    expect(statement.messaging?.[0]?.endpoint?.map((e) => e.address)).toEqual([
      "http://localhost/uae-fhir/r4/$process-message",
    ]);
  });
});
