import type { OperationOutcome } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { emittedProblems } from "../support/validator.js";

const PATHS = [
  "/uae-fhir/r4/metadata",
  "/fhir/metadata",
  "/uae-fhir/r4/MessageDefinition",
  "/uae-fhir/r4/MessageDefinition/add-allergy",
  "/uae-fhir/r4/StructureDefinition",
  "/uae-fhir/r4/StructureDefinition/price",
  "/fhir/MessageDefinition/remove-allergy",
];

describe("capability paths are read-only", () => {
  const cases = PATHS.flatMap((path) => ["POST", "PUT", "DELETE", "PATCH"].map((method) => ({ method, path })));

  it.each(cases)("$method $path: 405 with Allow: GET and an OperationOutcome", async ({ method, path }) => {
    const { app } = createApp({ watch: false });

    const res = await app.request(path, { method, headers: { "content-type": "application/fhir+json" }, body: "{}" });

    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET");
    expect(res.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    const outcome = (await res.json()) as OperationOutcome;
    expect(outcome.resourceType).toBe("OperationOutcome");
    expect(outcome.issue[0]?.code).toBe("not-supported");
    expect(outcome.issue[0]?.diagnostics).toContain("GET");
    expect(emittedProblems(outcome)).toEqual([]);
  });

  it("with --base-path, the 405 is under the base path", async () => {
    const { app } = createApp({ watch: false, basePath: "/sandbox" });

    const res = await app.request("/sandbox/uae-fhir/r4/metadata", { method: "POST" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET");
  });
});

describe("capability reads in the journal", () => {
  it("are recorded as inbound calls with no operation, like any path outside /__admin", async () => {
    const { app } = createApp({ watch: false });

    await app.request("/uae-fhir/r4/metadata");
    const res = await app.request("/__admin/calls");
    const { calls } = (await res.json()) as {
      calls: Array<{ direction: string; operation: string | null; request: { method: string; path: string } }>;
    };
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({
      direction: "inbound",
      operation: null,
      request: { method: "GET", path: "/uae-fhir/r4/metadata" },
    });
  });
});
