import { R4 } from "../r4/definitions.js";
import { compile, guarded } from "./compile-expression.js";
import { footprint } from "./footprint.js";
import { parseExpression, Unsupported } from "./parse-expression.js";
import { type Outcome, outcomeOf, type ReferenceEval, referenceEvaluator } from "./reference-check.js";
import { BAIL, type Coll, type Env, FAILS, toBool } from "./runtime.js";
import { contextStaticType, owningResource, RESOURCE_TYPES } from "./static-types.js";

/** %resource and %rootResource of the node an invariant is checked on (one object per resource walked). */
export type InvariantEnv = Env;

/** True when the invariant holds on `node`. */
export type InvariantCheck = (node: unknown, env: InvariantEnv) => boolean;

export type { Outcome };

export interface CompiledInvariant {
  /**
   * Whether the invariant holds: it fails only when it evaluates to `false`. An empty result (a comparison of
   * values of different precision, `{} in …`) or an expression the engine cannot evaluate is no evidence that the
   * rule is broken.
   */
  check: InvariantCheck;
  /** What the expression evaluates to: exactly true, exactly false, anything else, or an evaluation error. */
  outcome: (node: unknown, env: InvariantEnv) => Outcome;
  /** The closure evaluates the expression (deferring to the library only on rare data shapes). */
  compiled: boolean;
  /** Part of the expression (an iteration body) is only ever evaluated by the library. */
  guarded: boolean;
}

/** How often compiled checks handed a node to the library (diagnostics for tests and benchmarks). */
export const deferred = { count: 0 };

/** Errors other than BAIL raised by compiled closures (a bug if ever non-zero; tests assert it). */
export const unexpected = { count: 0 };

/** The outcome on a node with no members (a resource: only its resourceType); undefined for a primitive context. */
function vacuousOutcome(outcome: (node: unknown, env: InvariantEnv) => Outcome, contextType: string) {
  if (R4.types[contextType]?.kind === "primitive-type") return undefined;
  const empty = RESOURCE_TYPES.has(contextType) ? { resourceType: contextType } : {};
  const result = outcome(empty, { resource: empty, rootResource: empty });
  return result === "error" ? undefined : result;
}

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
 * Its outcome is the one the library's result would give; the invariant
 * fails only on an outcome of exactly `false`.
 * @example
 * const { check } = compileInvariant("dataAbsentReason.empty() or value.empty()", "Observation");
 * check(obs, { resource: obs, rootResource: obs }); // true unless both are present
 */
export function compileInvariant(expression: string, contextType: string): CompiledInvariant {
  let reference: ReferenceEval | undefined;
  const byLibrary = (node: unknown, env: InvariantEnv): Outcome => {
    try {
      reference ??= referenceEvaluator(expression, contextType);
    } catch {
      return "error";
    }
    const ref = reference;
    return outcomeOf(() => ref(node, env));
  };
  const checkOf =
    (outcome: (node: unknown, env: InvariantEnv) => Outcome): InvariantCheck =>
    (node, env) =>
      outcome(node, env) !== "false";
  let f: ((focus: Coll, env: InvariantEnv, self: Coll) => Coll) | undefined;
  let fails = false;
  let reads: string[] | undefined;
  guarded.value = false;
  try {
    const root = contextStaticType(contextType);
    const parsed = parseExpression(expression);
    reads = footprint(parsed, contextType);
    const compiled = compile(parsed, {
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
  if (f === undefined) return { check: checkOf(byLibrary), outcome: byLibrary, compiled: false, guarded: false };
  // The whole expression is one the library cannot evaluate (htmlChecks()).
  if (fails) return { check: checkOf(() => "error"), outcome: () => "error", compiled: true, guarded: false };
  const isGuarded = guarded.value;
  const fast = f;
  const fits = rootGuard(contextType);
  const focus: Coll = [undefined];
  const outcome = (node: unknown, env: InvariantEnv): Outcome => {
    if (!fits(node)) {
      deferred.count++;
      return byLibrary(node, env);
    }
    try {
      // One focus array per invariant, refilled: an evaluation never keeps its input, nor runs inside itself.
      focus[0] = node;
      const b = toBool(fast(focus, env, focus));
      focus[0] = undefined;
      return b === undefined ? "other" : b ? "true" : "false";
    } catch (err) {
      if (err === FAILS) return "error";
      // BAIL, or any unforeseen error: the library decides.
      if (err !== BAIL) unexpected.count++;
      deferred.count++;
      return byLibrary(node, env);
    }
  };
  const vacuous = reads && vacuousOutcome(outcome, contextType);
  if (!reads || vacuous === undefined) return { check: checkOf(outcome), outcome, compiled: true, guarded: isGuarded };
  // A node that has none of the members the expression reads gets the result of a node that has none at all.
  const keys = reads;
  const skipping = (node: unknown, env: InvariantEnv): Outcome => {
    if (typeof node === "object" && node !== null) {
      let absent = true;
      for (const k of keys) {
        if ((node as Record<string, unknown>)[k] !== undefined) {
          absent = false;
          break;
        }
      }
      if (absent) return vacuous;
    }
    return outcome(node, env);
  };
  return { check: checkOf(skipping), outcome: skipping, compiled: true, guarded: isGuarded };
}
