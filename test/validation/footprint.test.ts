import { describe, expect, it } from "vitest";
import { footprint } from "../../src/validation/invariants/footprint.js";
import { parseExpression } from "../../src/validation/invariants/parse-expression.js";

const read = (expression: string, context: string) => footprint(parseExpression(expression), context);

describe("what an invariant reads of its node (invariants of absent members are not evaluated)", () => {
  it.each([
    // R4's dom-2, dom-4, dom-5 (resource.html#invariants): only `contained`.
    ["contained.contained.empty()", "Patient", ["contained", "_contained"]],
    ["contained.meta.versionId.empty() and contained.meta.lastUpdated.empty()", "Patient", ["contained", "_contained"]],
    // obs-6: a choice element is read under each of its JSON names.
    [
      "dataAbsentReason.empty() or value.empty()",
      "Observation",
      expect.arrayContaining(["valueQuantity", "dataAbsentReason"]),
    ],
  ])("%s on %s", (expression, context, expected) => {
    expect(read(expression, context)).toEqual(expected);
  });

  it.each([
    // ref-1 reads %rootResource; a type name stands for the node; $this and functions of the node itself read it all.
    ["reference.startsWith('#').not() or (reference.substring(1) in %rootResource.contained.id)", "Reference"],
    ["Observation.status.exists()", "Observation"],
    ["$this.exists()", "Quantity"],
    ["hasValue() or (children().count() > id.count())", "Quantity"],
  ])("%s may read the whole node", (expression, context) => {
    expect(read(expression, context)).toBeUndefined();
  });
});
