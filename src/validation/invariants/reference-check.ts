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

/** True when the library's result is exactly `[true]`; errors count as false. */
export function holds(result: () => unknown[]): boolean {
  try {
    const r = result();
    return r.length === 1 && r[0] === true;
  } catch {
    return false;
  }
}
