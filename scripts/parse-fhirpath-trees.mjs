#!/usr/bin/env node
/**
 * Part of `npm run build`: parses the FHIRPath of every R4 invariant and every
 * check of the default operation catalogue with the built parser
 * (dist/validation/invariants/parse-expression.js) and writes the trees to
 * dist/validation/invariants/fhirpath-trees.json, which the sandbox reads at
 * start instead of running the fhirpath library's parser (a third of its
 * start-up). An expression the compiler does not take is kept as
 * { unsupported: reason }, so it fails the same way as when parsed fresh.
 */
import { writeFileSync } from "node:fs";

const dist = new URL("../dist/", import.meta.url);
const { parseFresh, Unsupported } = await import(new URL("validation/invariants/parse-expression.js", dist).href);
const { R4 } = await import(new URL("validation/r4/definitions.js", dist).href);
const { DEFAULT_OPERATIONS } = await import(new URL("routing/default-operations.js", dist).href);

const expressions = new Set(Object.values(R4.constraints).map((c) => c.expression));
for (const op of DEFAULT_OPERATIONS) {
  for (const checks of Object.values(op.focus.checks)) for (const check of checks) expressions.add(check.fhirpath);
}
const trees = {};
for (const expression of [...expressions].sort()) {
  try {
    trees[expression] = parseFresh(expression);
  } catch (error) {
    if (!(error instanceof Unsupported)) throw new Error(`FHIRPath ${expression} does not parse: ${error.message}`);
    trees[expression] = { unsupported: error.message };
  }
}
writeFileSync(new URL("validation/invariants/fhirpath-trees.json", dist), JSON.stringify(trees));
console.log(`parsed ${Object.keys(trees).length} FHIRPath expressions into dist/validation/invariants/fhirpath-trees.json`);
