/** Compiles FHIRPath operators: logic, equality, ordering, membership, union, `&` and `+`. */
import { compile } from "./compile-expression.js";
import {
  BOOLEAN,
  type Compiled,
  checkEquality,
  hoisted,
  requireString,
  type Scope,
  STRING,
  size,
  UCUM,
} from "./compile-support.js";
import { compareDateTimes } from "./datetime.js";
import { type Expr, Unsupported } from "./parse-expression.js";
import {
  bail,
  collEqual,
  collHas,
  distinct,
  EMPTY,
  FALSE,
  fromBool,
  primitiveValue,
  singletonString,
  TRUE,
  toBool,
} from "./runtime.js";
import { valueClass } from "./static-types.js";

function compileOrder(op: string, l: Compiled, r: Compiled): Compiled {
  const cl = valueClass(l.t);
  const cr = valueClass(r.t);
  if (cl !== cr || (cl !== "number" && cl !== "date" && cl !== "quantity")) {
    throw new Unsupported(`${op} on ${cl} and ${cr}`);
  }
  const cmp = cl === "number" ? compareNumbers : cl === "date" ? compareDateTimes : compareQuantities;
  const test =
    op === "<"
      ? (n: number) => n < 0
      : op === "<="
        ? (n: number) => n <= 0
        : op === ">"
          ? (n: number) => n > 0
          : (n: number) => n >= 0;
  const lf = l.f;
  const rf = r.f;
  return {
    f: (focus, env, self) => {
      const a = lf(focus, env, self);
      const b = rf(focus, env, self);
      if (a.length > 1 || b.length > 1) bail();
      if (a.length === 0 || b.length === 0) return EMPTY;
      const n = cmp(primitiveValue(a[0]), primitiveValue(b[0]));
      if (n === "objects") return op === "<=" || op === ">=" ? TRUE : FALSE;
      return n === undefined ? EMPTY : test(n) ? TRUE : FALSE;
    },
    t: BOOLEAN,
  };
}

function compareNumbers(a: unknown, b: unknown): number {
  if (typeof a !== "number" || typeof b !== "number") bail();
  return a === b ? 0 : a < b ? -1 : 1;
}

/** Whether the library turns a FHIR Quantity into a FHIRPath quantity. */
function isUcum(o: Record<string, unknown>): boolean {
  return o.system === UCUM && typeof o.value === "number" && typeof o.code === "string";
}

/**
 * Quantities in the same UCUM unit compare by value; unit conversion goes to
 * the library. Quantities the library leaves as plain objects compare as JS
 * objects do (`<=` and `>=` true, `<` and `>` false): "objects".
 */
function compareQuantities(a: unknown, b: unknown): number | "objects" {
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const ux = isUcum(x);
  const uy = isUcum(y);
  if (!ux && !uy) return "objects";
  if (!ux || !uy || x.comparator !== undefined || y.comparator !== undefined || x.code !== y.code) bail();
  return compareNumbers(x.value, y.value);
}

function logic(op: string, a: boolean | undefined, b: boolean | undefined): boolean | undefined {
  switch (op) {
    case "and":
      if (a === false || b === false) return false;
      return a === true && b === true ? true : undefined;
    case "or":
      if (a === true || b === true) return true;
      return a === false && b === false ? false : undefined;
    case "xor":
      return a === undefined || b === undefined ? undefined : a !== b;
    default: // implies
      if (a === false || b === true) return true;
      return a === true && b === false ? false : undefined;
  }
}

export function compileBinary(e: Extract<Expr, { k: "binary" }>, scope: Scope): Compiled {
  let l = compile(e.left, scope);
  let r = compile(e.right, scope);
  if (l.envOnly && r.envOnly) return { ...binary(e, l, r), envOnly: true };
  // A side that depends on the resource alone, beside one that does not, is evaluated once per resource.
  if (e.left.k === "binary" || e.left.k === "member") l = hoisted(l, scope);
  if (e.right.k === "binary" || e.right.k === "member") r = hoisted(r, scope);
  return binary(e, l, r);
}

function binary(e: Extract<Expr, { k: "binary" }>, l: Compiled, r: Compiled): Compiled {
  const lf = l.f;
  const rf = r.f;
  const op = e.op;
  switch (op) {
    case "and":
    case "or":
    case "xor":
    case "implies": {
      const safe = l.safe === true && r.safe === true && l.bool === true && r.bool === true;
      const operandSafe = (c: Compiled) => c.safe === true && c.bool === true;
      // The library evaluates both sides and reports their errors; a side
      // may only be skipped when it cannot raise one.
      // With both sides safe, the cheaper one goes first: it may decide alone.
      const rightFirst = operandSafe(l) && (!operandSafe(r) || size(e.right) < size(e.left));
      if (operandSafe(r) && op !== "xor" && !rightFirst) {
        const decides = op === "or";
        const result = op === "and" ? FALSE : TRUE;
        return {
          f: (focus, env, self) => {
            const a = toBool(lf(focus, env, self));
            if (a === decides) return result;
            return fromBool(logic(op, a, toBool(rf(focus, env, self))));
          },
          t: BOOLEAN,
          safe,
          bool: true,
        };
      }
      if (rightFirst && op !== "xor") {
        // The right side decides `and` when false, `or` and `implies` when true.
        const decides = op !== "and";
        const result = op === "and" ? FALSE : TRUE;
        return {
          f: (focus, env, self) => {
            const b = toBool(rf(focus, env, self));
            if (b === decides) return result;
            return fromBool(logic(op, toBool(lf(focus, env, self)), b));
          },
          t: BOOLEAN,
          safe,
          bool: true,
        };
      }
      return {
        f: (focus, env, self) => {
          const a = toBool(lf(focus, env, self));
          const b = toBool(rf(focus, env, self));
          return fromBool(logic(op, a, b));
        },
        t: BOOLEAN,
        safe,
        bool: true,
      };
    }
    case "=":
    case "!=": {
      checkEquality(l.t, r.t);
      const negate = op === "!=";
      return {
        f: (focus, env, self) => {
          const eq = collEqual(lf(focus, env, self), rf(focus, env, self));
          return eq === undefined ? EMPTY : eq !== negate ? TRUE : FALSE;
        },
        t: BOOLEAN,
        safe: l.safe === true && r.safe === true,
        bool: true,
      };
    }
    case "<":
    case "<=":
    case ">":
    case ">=":
      return compileOrder(op, l, r);
    case "in":
    case "contains": {
      checkEquality(l.t, r.t);
      const [ef, cf] = op === "in" ? [lf, rf] : [rf, lf];
      return {
        f: (focus, env, self) => {
          const item = ef(focus, env, self);
          const coll = cf(focus, env, self);
          if (item.length === 0) return EMPTY;
          if (item.length > 1) bail();
          return collHas(coll, item[0]) ? TRUE : FALSE;
        },
        t: BOOLEAN,
      };
    }
    case "|": {
      checkEquality(l.t, r.t);
      return {
        f: (focus, env, self) => distinct([...lf(focus, env, self), ...rf(focus, env, self)]),
        safe: l.safe === true && r.safe === true,
        t: JSON.stringify(l.t) === JSON.stringify(r.t) ? l.t : { k: "choice", eqSafe: true },
      };
    }
    case "&": {
      requireString(l.t);
      requireString(r.t);
      return {
        f: (focus, env, self) => [
          (singletonString(lf(focus, env, self)) ?? "") + (singletonString(rf(focus, env, self)) ?? ""),
        ],
        t: STRING,
      };
    }
    case "+": {
      const cl = valueClass(l.t);
      if (cl !== valueClass(r.t) || (cl !== "number" && cl !== "string")) throw new Unsupported("+ on these types");
      if (cl === "number" && (l.t.k !== "sys" || l.t.name !== "Integer" || r.t.k !== "sys" || r.t.name !== "Integer")) {
        throw new Unsupported("+ on non-integers");
      }
      return {
        f: (focus, env, self) => {
          const a = lf(focus, env, self);
          const b = rf(focus, env, self);
          if (a.length > 1 || b.length > 1) bail();
          if (a.length === 0 || b.length === 0) return EMPTY;
          const x = primitiveValue(a[0]);
          const y = primitiveValue(b[0]);
          if (typeof x !== typeof y || (typeof x !== "number" && typeof x !== "string")) bail();
          return [(x as number) + (y as number)];
        },
        t: l.t,
      };
    }
    default:
      throw new Unsupported(`operator ${op}`);
  }
}
