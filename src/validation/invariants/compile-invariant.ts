import fhirpath from "fhirpath";
import r4 from "fhirpath/fhir-context/r4";

export interface InvariantEnv {
  resource: unknown;
  rootResource: unknown;
}

/** True when the invariant holds on `node`. */
export type InvariantCheck = (node: unknown, env: InvariantEnv) => boolean;

const UCUM = "http://unitsofmeasure.org";

/**
 * An R4 invariant as a check (placeholder: HL7's FHIRPath engine evaluates
 * it). It fails only when it evaluates to `false`: an empty result (a
 * comparison of absent or differently precise values, `{} in …`) or an
 * expression the engine cannot evaluate is not evidence of a broken rule.
 *
 * @example compileInvariant("code.empty() or system.exists()", "Quantity").check({ code: "kg" }, env) // false
 */
export function compileInvariant(
  expression: string,
  contextType: string,
): { check: InvariantCheck; compiled: boolean } {
  const fn = fhirpath.compile(
    { base: contextType, expression } as never,
    r4 as never,
    { traceFn: () => undefined } as never,
  );
  return {
    compiled: false,
    check: (node, env) => {
      try {
        const result: unknown = fn(
          node as never,
          { resource: env.resource, rootResource: env.rootResource, ucum: UCUM } as never,
        );
        return !(Array.isArray(result) && result.length === 1 && result[0] === false);
      } catch {
        return true;
      }
    },
  };
}
