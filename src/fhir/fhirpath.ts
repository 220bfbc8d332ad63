import fhirpath from "fhirpath";
import r4 from "fhirpath/fhir-context/r4";

/** A FHIRPath expression compiled once against the R4 model. */
export type CompiledPath = (resource: unknown) => unknown[];

export type CompileResult = { ok: true; evaluate: CompiledPath } | { ok: false; reason: string };

/**
 * Compiles a FHIRPath expression with HL7's engine and its R4 model, so
 * choice types (`value` → valueQuantity) and type functions work.
 *
 * @example
 *   const hasCode = compilePath("code.exists()");
 *   if (hasCode.ok && holds(hasCode.evaluate(allergy))) ...
 */
export function compilePath(expression: string): CompileResult {
  try {
    const fn = fhirpath.compile(expression, r4);
    return {
      ok: true,
      evaluate: (resource) => {
        const result = fn(resource as never);
        return Array.isArray(result) ? result : [result];
      },
    };
  } catch (error) {
    return { ok: false, reason: (error as Error).message };
  }
}

/**
 * FHIRPath's singleton evaluation of a collection as a boolean: empty is
 * false, a lone `false` is false, anything else is true.
 */
export function holds(result: readonly unknown[]): boolean {
  if (result.length === 0) return false;
  return !(result.length === 1 && result[0] === false);
}

/** Evaluates, turning an engine error into a failed match with its reason; `empty` tells "found nothing" from "false". */
export function test(path: CompiledPath, resource: unknown): { holds: boolean; empty?: boolean; error?: string } {
  try {
    const result = path(resource);
    return { holds: holds(result), empty: result.length === 0 };
  } catch (error) {
    return { holds: false, error: (error as Error).message };
  }
}
