import fhirpath from "fhirpath";
import r4 from "fhirpath/fhir-context/r4";
import { describe, expect, it } from "vitest";
import { locateInBundle } from "../../src/journal/call-issues.js";

// Where a FHIRPath points in a Bundle, as JSON paths (the dashboard marks issues there). The Bundle and the
// expected paths are written by hand.

const bundle = {
  resourceType: "Bundle",
  type: "message",
  entry: [
    { fullUrl: "urn:uuid:1", resource: { resourceType: "MessageHeader", id: "1" } },
    {
      fullUrl: "urn:uuid:2",
      resource: {
        resourceType: "Observation",
        status: "final",
        code: { coding: [{ system: "http://loinc.org", code: "29463-7" }, { code: "x" }] },
        valueQuantity: { value: 72, unit: "kg" },
      },
    },
  ],
};

describe("locateInBundle", () => {
  it.each([
    ["Bundle.entry[1].resource.status", [["entry", 1, "resource", "status"]]],
    ["Bundle.entry[1].resource.code.coding[1].code", [["entry", 1, "resource", "code", "coding", 1, "code"]]],
    // Every node a path finds.
    [
      "Bundle.entry[1].resource.code.coding.code",
      [
        ["entry", 1, "resource", "code", "coding", 0, "code"],
        ["entry", 1, "resource", "code", "coding", 1, "code"],
      ],
    ],
    // A choice element: FHIRPath names it `value`, the JSON `valueQuantity`.
    ["Bundle.entry[1].resource.value", [["entry", 1, "resource", "valueQuantity"]]],
    ["Bundle.entry[1].resource.value.unit", [["entry", 1, "resource", "valueQuantity", "unit"]]],
    ["Bundle.entry[1].resource", [["entry", 1, "resource"]]],
    ["Bundle.entry[1].resource.ofType(Observation).status", [["entry", 1, "resource", "status"]]],
  ])("%s", (expression, expected) => {
    expect(locateInBundle(bundle, expression)).toEqual(expected);
  });

  it("points nowhere for a path that finds nothing or does not parse", () => {
    expect(locateInBundle(bundle, "Bundle.entry[5].resource")).toEqual([]);
    expect(locateInBundle(bundle, "Bundle.entry[")).toEqual([]);
  });
});

describe("locateInBundle: a path walk, not a FHIRPath evaluation (issue 21)", () => {
  /** Every node of a JSON value as a FHIRPath of names and indexes, e.g. Bundle.entry[1].resource.code.coding[0]. */
  function paths(value: unknown, at: string, into: string[]): string[] {
    if (Array.isArray(value)) {
      for (const [i, item] of value.entries()) paths(item, `${at}[${i}]`, into);
    } else {
      into.push(at);
      if (typeof value === "object" && value !== null) {
        for (const [k, v] of Object.entries(value))
          if (k !== "resourceType" && /^[a-z]\w*$/.test(k)) paths(v, `${at}.${k}`, into);
      }
    }
    return into;
  }
  /** How many nodes fhirpath.js, an engine nobody here wrote, finds for an expression. */
  const byFhirpath = (expression: string): number =>
    (fhirpath.evaluate(bundle, expression, undefined, r4, { resolveInternalTypes: false }) as unknown[]).length;

  it("finds as many nodes as fhirpath.js for every path of the example Bundle", () => {
    const all = paths(bundle, "Bundle", []);
    expect(all.length).toBeGreaterThan(15);
    for (const expression of all) {
      expect(locateInBundle(bundle, expression).length, expression).toBe(byFhirpath(expression));
    }
  });

  it("reads `backtick` names and reaches a primitive's extensions as the primitive", () => {
    const withDiv = {
      resourceType: "Bundle",
      entry: [{ resource: { text: { div: "<div/>" }, _status: { id: "s" } } }],
    };
    expect(locateInBundle(withDiv, "Bundle.entry[0].resource.text.`div`")).toEqual([
      ["entry", 0, "resource", "text", "div"],
    ]);
    expect(locateInBundle(withDiv, "Bundle.entry[0].resource.status")).toEqual([["entry", 0, "resource", "status"]]);
  });

  it("reaches a choice element by ofType(), also a choice primitive that has only its extensions", () => {
    const observation = {
      resourceType: "Bundle",
      entry: [
        {
          resource: {
            resourceType: "Observation",
            valueQuantity: { value: "70" },
            _effectiveDateTime: { extension: [{ url: "u" }] },
          },
        },
      ],
    };
    expect(locateInBundle(observation, "Bundle.entry[0].resource.value.ofType(Quantity).value")).toEqual([
      ["entry", 0, "resource", "valueQuantity", "value"],
    ]);
    expect(locateInBundle(observation, "Bundle.entry[0].resource.value.ofType(string)")).toEqual([]);
    expect(locateInBundle(observation, "Bundle.entry[0].resource.effective.ofType(dateTime).extension[0]")).toEqual([
      ["entry", 0, "resource", "effectiveDateTime", "extension", 0],
    ]);
  });

  it("points nowhere for FHIRPath beyond paths, and stops when the call's budget of visits is spent", () => {
    expect(locateInBundle(bundle, "Bundle.entry.where(fullUrl.exists())")).toEqual([]);
    expect(locateInBundle(bundle, "Bundle.entry[0] | Bundle.entry[1]")).toEqual([]);
    const big = { resourceType: "Bundle", entry: Array.from({ length: 1_000 }, () => ({ fullUrl: "u" })) };
    // An index needs only the nodes before it; a whole collection visits them all.
    expect(locateInBundle(big, "Bundle.entry[999].fullUrl", { visits: 1_001 })).toEqual([["entry", 999, "fullUrl"]]);
    expect(locateInBundle(big, "Bundle.entry.fullUrl", { visits: 1_500 })).toEqual([]);
    expect(locateInBundle(big, "Bundle.entry.fullUrl", { visits: 2_000 })).toHaveLength(100);
  });
});
