import { choiceKey, R4 } from "../r4/definitions.js";
import type { Expr } from "./parse-expression.js";

/**
 * The JSON keys of the context node an invariant can read, or undefined when
 * it may read the whole node. An expression that reaches the node only
 * through members named from it (no `$this`, no `%resource`-like constant,
 * no function applied to the node itself, no type name) gives the same
 * result on every node that lacks all of those members: the validator then
 * uses that one precomputed result. R4's DomainResource invariants (dom-2,
 * dom-4, dom-5) read only `contained`, which most resources lack.
 *
 * Over-approximates on purpose: a member named inside a function's
 * arguments (`where(code = …)`) counts as read from the node too.
 *
 * @example footprint(parseExpression("contained.contained.empty()"), "Patient") // ["contained", "_contained"]
 */
export function footprint(expr: Expr, contextType: string): string[] | undefined {
  const names = new Set<string>();
  if (!collect(expr, names)) return undefined;
  const elements = R4.types[contextType]?.elements ?? {};
  const keys: string[] = [];
  for (const name of names) {
    const element = elements[name];
    const json = element?.choice ? element.types.map((t) => choiceKey(name, t.code)) : [name];
    for (const key of json) keys.push(key, `_${key}`);
  }
  return keys;
}

/** Adds the members named from the node; false when the expression may read the node some other way. */
function collect(e: Expr, names: Set<string>): boolean {
  switch (e.k) {
    case "member":
      if (e.target) return collect(e.target, names);
      // A capitalised root member is a type name (`Observation.status`): it stands for the node itself.
      if (/^[A-Z]/.test(e.name)) return false;
      names.add(e.name);
      return true;
    case "call":
      if (!e.target) return false;
      return collect(e.target, names) && e.args.every((a) => collect(a, names));
    case "binary":
      return collect(e.left, names) && collect(e.right, names);
    case "type":
      return collect(e.target, names);
    case "const":
      return e.name === "ucum";
    case "this":
      return false;
    default:
      return true;
  }
}
