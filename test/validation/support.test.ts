import type { Bundle, OperationOutcome } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { expectIssueAt, locate } from "../support/fhir-issues.js";
import { schemaProblems } from "../support/json-schema.js";
import { mutate } from "../support/mutations.js";
import { childElement, expand } from "../support/r4-definitions.js";

/** The validation test helpers check what they claim (they pass today, with no sandbox involved). */

const bundle = {
  resourceType: "Bundle",
  type: "message",
  entry: [
    { fullUrl: "urn:uuid:h", resource: { resourceType: "MessageHeader", id: "h" } },
    {
      fullUrl: "urn:uuid:a",
      resource: { resourceType: "Observation", status: "done", code: { text: "w" }, valueQuantity: { value: 1 } },
    },
    { fullUrl: "urn:uuid:b", resource: { resourceType: "Observation", status: "done", code: { text: "w" } } },
  ],
} as unknown as Bundle;

const outcome = (expression: string, code = "code-invalid"): OperationOutcome => ({
  resourceType: "OperationOutcome",
  issue: [
    {
      severity: "error",
      code: code as "code-invalid",
      diagnostics: "status done: allowed final",
      expression: [expression],
    },
  ],
});

describe("expectIssueAt", () => {
  it("accepts any FHIRPath that finds the same node", () => {
    for (const e of ["Bundle.entry[1].resource.status", "Bundle.entry.resource.ofType(Observation).first().status"]) {
      expectIssueAt(outcome(e), bundle, { code: "code-invalid", expression: "Bundle.entry[1].resource.status" });
    }
  });

  it("a choice element is found by its FHIRPath name too (value → valueQuantity)", () => {
    expect(locate(bundle, "Bundle.entry[1].resource.value")).toEqual(
      locate(bundle, "Bundle.entry[1].resource.valueQuantity"),
    );
  });

  it("rejects an equal value at another node, another code, or an expression that does not evaluate", () => {
    for (const [e, code] of [
      ["Bundle.entry[2].resource.status", "code-invalid"],
      ["Bundle.entry[1].resource.status", "value"],
      ["Bundle.entry[1].resource.status.(", "code-invalid"],
    ] as const) {
      expect(() =>
        expectIssueAt(outcome(e, code), bundle, {
          code: "code-invalid",
          expression: "Bundle.entry[1].resource.status",
        }),
      ).toThrow();
    }
  });

  it("checks the test's own target", () => {
    expect(() =>
      expectIssueAt(outcome("Bundle.entry[1].resource.status"), bundle, {
        code: "code-invalid",
        expression: "Bundle.entry[1].resource.status",
        target: "final",
      }),
    ).toThrow();
  });
});

describe("the independent definitions", () => {
  it("expand a required value set and resolve choice names", () => {
    const codes = expand("http://hl7.org/fhir/ValueSet/observation-status|4.0.1")?.codes.map((c) => c.code);
    expect(codes).toEqual(
      expect.arrayContaining(["registered", "preliminary", "final", "amended", "corrected", "cancelled"]),
    );
    expect(codes).not.toContain("done");
    expect(childElement("Observation", "Observation", "valueQuantity")).toMatchObject({
      element: { path: "Observation.value[x]" },
      type: "Quantity",
    });
    expect(childElement("Observation", "Observation", "valueBoolean")?.type).toBe("boolean");
    expect(childElement("Observation", "Observation", "effectiveBoolean")).toBeUndefined();
  });

  it("mutations say where they hit", () => {
    const observation = {
      resourceType: "Observation",
      status: "final",
      code: { text: "w" },
      issued: "2020-01-01T00:00:00Z",
    };
    expect(mutate(observation, "break-date", 0)).toMatchObject({ code: "value", path: ".issued" });
    expect(mutate(observation, "flip-required-code", 0)).toMatchObject({ code: "code-invalid", path: ".status" });
    expect(mutate(observation, "drop-required", 0)).toMatchObject({ code: "required", path: "" });
    expect(mutate(observation, "unknown-element", 0)).toMatchObject({
      code: "structure",
      path: ".sandboxUnknownElement",
    });
  });

  it("the JSON Schema rejects what it should and knows no Medplum types", () => {
    expect(schemaProblems({ resourceType: "Observation", status: "final", code: { text: "w" } } as never)).toEqual([]);
    expect(schemaProblems({ resourceType: "Observation", status: "done", code: { text: "w" } } as never)).not.toEqual(
      [],
    );
    expect(schemaProblems({ resourceType: "Bot" } as never)).toEqual(["no schema definition for resource type Bot"]);
  }, 60_000); // compiling the schema takes seconds
});
