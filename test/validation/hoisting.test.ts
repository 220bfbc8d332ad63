import { describe, expect, it } from "vitest";
import { compileInvariant } from "../../src/validation/invariants/compile-invariant.js";
import { outcomeOf, referenceEvaluator } from "../../src/validation/invariants/reference-check.js";

/**
 * A part of an iteration body that depends on the resource alone is evaluated once per resource (env), not once per
 * item: R4's bdl-3 and bdl-4 read %resource.type three times for every entry of a Bundle. Counted by a Proxy over
 * the Bundle; the outcome stays the library's.
 */

const BDL_3 =
  "entry.all(request.exists() = (%resource.type = 'batch' or %resource.type = 'transaction' or %resource.type = 'history'))";

function counted(bundle: Record<string, unknown>) {
  const reads = { type: 0 };
  const proxy = new Proxy(bundle, {
    get(target, key, receiver) {
      if (key === "type") reads.type++;
      return Reflect.get(target, key, receiver);
    },
  });
  return { proxy, reads };
}

const entries = (n: number, request: boolean) =>
  Array.from({ length: n }, (_, i) => ({
    fullUrl: `urn:uuid:00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
    resource: { resourceType: "Basic", code: { text: "x" } },
    ...(request ? { request: { method: "POST", url: "Basic" } } : {}),
  }));

describe("resource-only parts of iteration bodies, evaluated once per resource", () => {
  const invariant = compileInvariant(BDL_3, "Bundle");
  const library = referenceEvaluator(BDL_3, "Bundle");

  it.each([
    ["a message of 5 entries", { resourceType: "Bundle", type: "message", entry: entries(5, false) }],
    [
      "a transaction of 4 entries with requests",
      { resourceType: "Bundle", type: "transaction", entry: entries(4, true) },
    ],
    ["a transaction of 3 entries without", { resourceType: "Bundle", type: "transaction", entry: entries(3, false) }],
    ["a message with requests", { resourceType: "Bundle", type: "message", entry: entries(2, true) }],
  ])("%s: %resource.type read at most three times, the library's outcome", (_name, bundle) => {
    const { proxy, reads } = counted(bundle);
    const env = { resource: proxy, rootResource: proxy };
    const outcome = invariant.outcome(proxy, env);
    expect(reads.type).toBeLessThanOrEqual(3);
    expect(outcome).toBe(outcomeOf(() => library(bundle, { resource: bundle, rootResource: bundle })));
  });

  it("a second resource is evaluated afresh (the kept result belongs to the first)", () => {
    const message = { resourceType: "Bundle", type: "message", entry: entries(2, true) };
    const transaction = { resourceType: "Bundle", type: "transaction", entry: entries(2, true) };
    expect(invariant.outcome(message, { resource: message, rootResource: message })).toBe("false");
    expect(invariant.outcome(transaction, { resource: transaction, rootResource: transaction })).toBe("true");
  });
});
