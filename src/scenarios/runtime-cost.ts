import type { ScenarioFile } from "./schema.js";
import { templateFhirpaths } from "./template.js";

/** What a scenario document added at run time weighs against the workspace's limits (config/state-limits.ts). */
export interface ScenarioCost {
  rules: number;
  /** The document's UTF-8 bytes. */
  bytes: number;
  /** UTF-8 bytes of its FHIRPath expressions: `when.fhirpath` and `{{ fhirpath('…') }}` in its responses. */
  fhirpathBytes: number;
}

export const NO_COST: ScenarioCost = { rules: 0, bytes: 0, fhirpathBytes: 0 };

export const addCosts = (a: ScenarioCost, b: ScenarioCost, sign: 1 | -1 = 1): ScenarioCost => ({
  rules: a.rules + sign * b.rules,
  bytes: a.bytes + sign * b.bytes,
  fhirpathBytes: a.fhirpathBytes + sign * b.fhirpathBytes,
});

/** Every string in a value, walked without recursion (a posted body may nest deeply). */
function* strings(value: unknown): Generator<string> {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === "string") yield v;
    else if (v !== null && typeof v === "object") for (const item of Object.values(v)) stack.push(item);
  }
}

/**
 * A document's cost, from what it says (before its rules are compiled). FHIRPath is counted apart: fhirpath.js
 * keeps a parse tree of about 140 bytes of heap per character of an expression, against about 2.5 for the rest of
 * a document (memory-estimate.ts).
 */
export function scenarioCost(scenario: ScenarioFile, text: string): ScenarioCost {
  let fhirpathBytes = 0;
  for (const rule of scenario.rules ?? []) {
    const when = rule.when?.fhirpath;
    for (const expression of when === undefined ? [] : Array.isArray(when) ? when : [when]) {
      fhirpathBytes += Buffer.byteLength(expression);
    }
    for (const s of strings([rule.respond, rule.sequence])) {
      for (const expression of templateFhirpaths(s)) fhirpathBytes += Buffer.byteLength(expression);
    }
  }
  return { rules: scenario.rules?.length ?? 0, bytes: Buffer.byteLength(text), fhirpathBytes };
}
