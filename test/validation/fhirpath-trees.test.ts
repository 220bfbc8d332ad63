import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parseFresh, Unsupported } from "../../src/validation/invariants/parse-expression.js";
import { R4 } from "../../src/validation/r4/definitions.js";

// `npm run build` parses the R4 invariants and the catalogue's checks once and
// ships the trees (dist/…/fhirpath-trees.json), which the built sandbox uses
// instead of parsing at start. They must be what parsing gives now.

const TREES = new URL("../../dist/validation/invariants/fhirpath-trees.json", import.meta.url);

describe("the FHIRPath trees parsed at build time", () => {
  it("hold every R4 invariant, each the tree the parser gives (or the same refusal)", () => {
    expect(existsSync(TREES), "run npm run build first (npm test does)").toBe(true);
    const trees = JSON.parse(readFileSync(TREES, "utf8")) as Record<string, unknown>;

    const invariants = new Set(Object.values(R4.constraints).map((c) => c.expression));
    expect([...invariants].filter((e) => !(e in trees))).toEqual([]);
    for (const [expression, tree] of Object.entries(trees)) {
      let fresh: unknown;
      try {
        fresh = JSON.parse(JSON.stringify(parseFresh(expression)));
      } catch (error) {
        if (!(error instanceof Unsupported)) throw error;
        fresh = { unsupported: error.message };
      }
      expect(tree, expression).toEqual(fresh);
    }
  });
});
