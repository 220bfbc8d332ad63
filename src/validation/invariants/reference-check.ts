import fhirpath from "fhirpath";
import r4Model from "fhirpath/fhir-context/r4";
import type { Env } from "./runtime.js";

const UCUM = "http://unitsofmeasure.org";

/** Evaluates with HL7's fhirpath library: the reference the compiler must agree with. */
export type ReferenceEval = (node: unknown, env: Env) => unknown[];

/**
 * The fhirpath library's evaluator for `expression` at `contextType`, with
 * `trace()` silenced. Throws on evaluation errors, like the library.
 * @example referenceEvaluator("value.empty()", "Observation")(obs, { resource: obs, rootResource: obs }) // [true]
 */
export function referenceEvaluator(expression: string, contextType: string): ReferenceEval {
  const fn = fhirpath.compile({ base: contextType, expression }, r4Model, { traceFn: () => {} });
  return (node, env) =>
    fn(node as never, { resource: env.resource, rootResource: env.rootResource, ucum: UCUM } as never) as unknown[];
}

/** What an invariant evaluates to: exactly `[true]`, exactly `[false]`, anything else, or an evaluation error. */
export type Outcome = "true" | "false" | "other" | "error";

/** The outcome of a result the library computes (its errors are the "error" outcome). */
export function outcomeOf(result: () => unknown[]): Outcome {
  try {
    const r = result();
    if (r.length === 1 && typeof r[0] === "boolean") return r[0] ? "true" : "false";
    return "other";
  } catch {
    return "error";
  }
}
