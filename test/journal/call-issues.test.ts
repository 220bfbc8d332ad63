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
