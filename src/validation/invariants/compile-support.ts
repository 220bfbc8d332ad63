/**
 * What the compiler modules share: the compiled-closure types, the scope,
 * static type checks and a cost estimate.
 */
import { type Expr, Unsupported } from "./parse-expression.js";
import { type Coll, type Env, toBool } from "./runtime.js";
import { type SType, valueClass } from "./static-types.js";

/** A compiled expression: `focus` is its input, `self` is `$this`. */
export type Fn = (focus: Coll, env: Env, self: Coll) => Coll;

export interface Compiled {
  f: Fn;
  t: SType;
  /**
   * The library cannot raise an error evaluating this (on any JSON): then
   * a logical operator may skip it once the other side decides, although
   * the library always evaluates both sides.
   */
  safe?: boolean;
  /** The result is always empty or one boolean. */
  bool?: boolean;
  /** The library fails evaluating this on any input. */
  fails?: boolean;
  /** The result depends on %resource and %rootResource alone, not on the focus or `$this` (literals too). */
  envOnly?: boolean;
}

/**
 * An iteration body's part that depends on the resource alone (`%resource.type = 'batch' or …` in bdl-3, read for
 * every entry) is evaluated once per resource: its result is kept by the env object, which the validator makes per
 * resource walked and never changes. Errors are not kept: each evaluation raises them again.
 */
export function hoisted(c: Compiled, scope: Scope): Compiled {
  if (!scope.inParams || !c.envOnly) return c;
  const inner = c.f;
  const results = new WeakMap<Env, Coll>();
  const f: Fn = (focus, env, self) => {
    let result = results.get(env);
    if (result === undefined) {
      result = inner(focus, env, self);
      results.set(env, result);
    }
    return result;
  };
  return { ...c, f };
}

/** Set when some iteration body is left to the library (only reached on non-empty input). */
export const guarded = { value: false };

/** What the compiler knows around an expression. */
export interface Scope {
  /** Static type of the input (the focus). */
  focus: SType;
  /** Static type of `$this`. */
  self: SType;
  /** The invariant's context type name (a key of R4.types). */
  contextType: string;
  /** Inside a function's argument list. */
  inParams: boolean;
  /** Resource type `%resource` is expected to have. */
  owner: string | undefined;
}

export const UCUM = "http://unitsofmeasure.org";
export const STRING: SType = { k: "sys", name: "String" };
export const BOOLEAN: SType = { k: "sys", name: "Boolean" };
export const INTEGER: SType = { k: "sys", name: "Integer" };

export const identity: Fn = (focus) => focus;

/** A criterion's result must be a boolean (or empty) to be compiled. */
export function criterion(r: Coll): boolean {
  return toBool(r) === true;
}

export function requireString(t: SType): void {
  // Untyped values are checked to be strings at run time.
  if (valueClass(t) !== "string" && t.k !== "untyped") throw new Unsupported("string function on a non-string");
}

/** Whether the library's deepEqual cannot throw on values of this type (no quantity conversion). */
export function equalitySafe(t: SType): boolean {
  const c = valueClass(t);
  return c === "string" || c === "number" || c === "boolean" || c === "object";
}

export function checkEquality(a: SType, b: SType): void {
  const ok = (t: SType) => equalitySafe(t) || (t.k === "choice" && t.eqSafe === true);
  if (!ok(a) || !ok(b)) throw new Unsupported("equality on these types");
}

/** A rough evaluation cost: syntax nodes, iteration bodies counted thrice. */
export function size(e: Expr): number {
  switch (e.k) {
    case "member":
      return 1 + (e.target ? size(e.target) : 0);
    case "call":
      return 1 + (e.target ? size(e.target) : 0) + e.args.reduce((n, a) => n + 3 * size(a), 0);
    case "binary":
      return 1 + size(e.left) + size(e.right);
    case "type":
      return 1 + size(e.target);
    default:
      return 1;
  }
}
