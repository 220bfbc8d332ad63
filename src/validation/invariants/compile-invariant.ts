import { R4 } from "../r4/definitions.js";
import { compile, guarded } from "./compile-expression.js";
import { parseExpression, Unsupported } from "./parse-expression.js";
import { holds, type ReferenceEval, referenceEvaluator } from "./reference-check.js";
import { BAIL, type Coll, FAILS, toBool } from "./runtime.js";
import { contextStaticType, owningResource, RESOURCE_TYPES } from "./static-types.js";

export interface InvariantEnv {
  resource: unknown;
  rootResource: unknown;
}

/** True when the invariant holds on `node`. */
export type InvariantCheck = (node: unknown, env: InvariantEnv) => boolean;

export interface CompiledInvariant {
  check: InvariantCheck;
  /** The closure evaluates the expression (deferring to the library only on rare data shapes). */
  compiled: boolean;
  /** Part of the expression (an iteration body) is only ever evaluated by the library. */
  guarded: boolean;
}

/** How often compiled checks handed a node to the library (diagnostics for tests and benchmarks). */
export const deferred = { count: 0 };

/** Errors other than BAIL raised by compiled closures (a bug if ever non-zero; tests assert it). */
export const unexpected = { count: 0 };

/** Whether `node` has the JSON shape the library would type as `contextType`. */
function rootGuard(contextType: string): (node: unknown) => boolean {
  const def = contextStaticType(contextType);
  if (def.k === "resource") {
    return (n) => {
      const rt = (n as { resourceType?: unknown } | null)?.resourceType;
      return typeof n === "object" && typeof rt === "string" && RESOURCE_TYPES.has(rt);
    };
  }
  if (R4.types[contextType]?.kind === "primitive-type") {
    return (n) => n !== null && n !== undefined && typeof n !== "object";
  }
  if (RESOURCE_TYPES.has(contextType)) {
    return (n) => typeof n === "object" && n !== null && (n as { resourceType?: unknown }).resourceType === contextType;
  }
  return (n) =>
    typeof n === "object" &&
    n !== null &&
    !Array.isArray(n) &&
    (n as { resourceType?: unknown }).resourceType === undefined;
}

/**
 * Compiles an R4 invariant to a closure over plain JSON, falling back to
 * the fhirpath library for expressions (or data shapes) it does not cover.
 * The invariant holds iff the library would return exactly `[true]`.
 * @example
 * const { check } = compileInvariant("dataAbsentReason.empty() or value.empty()", "Observation");
 * check(obs, { resource: obs, rootResource: obs }); // true unless both are present
 */
export function compileInvariant(expression: string, contextType: string): CompiledInvariant {
  let reference: ReferenceEval | undefined;
  const byLibrary: InvariantCheck = (node, env) => {
    try {
      reference ??= referenceEvaluator(expression, contextType);
    } catch {
      return false;
    }
    const ref = reference;
    return holds(() => ref(node, env));
  };
  let f: ((focus: Coll, env: InvariantEnv, self: Coll) => Coll) | undefined;
  let fails = false;
  guarded.value = false;
  try {
    const root = contextStaticType(contextType);
    const compiled = compile(parseExpression(expression), {
      focus: root,
      self: root,
      contextType,
      inParams: false,
      owner: owningResource(contextType),
    });
    f = compiled.f;
    fails = compiled.fails === true;
  } catch (err) {
    if (!(err instanceof Unsupported)) throw err;
  }
  if (f === undefined) return { check: byLibrary, compiled: false, guarded: false };
  // The whole expression is one the library cannot evaluate (htmlChecks()).
  if (fails) return { check: () => false, compiled: true, guarded: false };
  const isGuarded = guarded.value;
  const fast = f;
  const fits = rootGuard(contextType);
  const check: InvariantCheck = (node, env) => {
    if (!fits(node)) {
      deferred.count++;
      return byLibrary(node, env);
    }
    try {
      const focus = [node];
      return toBool(fast(focus, env, focus)) === true;
    } catch (err) {
      if (err === FAILS) return false;
      // BAIL, or any unforeseen error: the library decides.
      if (err !== BAIL) unexpected.count++;
      deferred.count++;
      return byLibrary(node, env);
    }
  };
  return { check, compiled: true, guarded: isGuarded };
}
