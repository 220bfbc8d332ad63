import { compareDateTimes } from "./datetime.js";
import { type Expr, Unsupported } from "./parse-expression.js";
import {
  bail,
  type Coll,
  choiceKeys,
  collEqual,
  collHas,
  distinct,
  EMPTY,
  type Env,
  FAILS,
  FALSE,
  fromBool,
  navigate,
  navigateChoice,
  primitiveValue,
  Special,
  singletonString,
  TRUE,
  toBool,
} from "./runtime.js";
import { childStep, RESOURCE_TYPES, type SType, valueClass } from "./static-types.js";

/** A compiled expression: `focus` is its input, `self` is `$this`. */
export type Fn = (focus: Coll, env: Env, self: Coll) => Coll;

interface Compiled {
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

const UCUM = "http://unitsofmeasure.org";
const STRING: SType = { k: "sys", name: "String" };
const BOOLEAN: SType = { k: "sys", name: "Boolean" };
const INTEGER: SType = { k: "sys", name: "Integer" };

const identity: Fn = (focus) => focus;

/** A criterion's result must be a boolean (or empty) to be compiled. */
function criterion(r: Coll): boolean {
  return toBool(r) === true;
}

function compileMember(e: Extract<Expr, { k: "member" }>, scope: Scope): Compiled {
  const base: Compiled = e.target ? compile(e.target, scope) : { f: identity, t: scope.focus, safe: true };
  if (e.target === undefined && /^[A-Z]/.test(e.name)) {
    // `Appointment.status`: a leading type name selects the context itself.
    if (scope.inParams || scope.focus.k !== "fhir" || scope.focus.code !== e.name || e.name !== scope.contextType) {
      throw new Unsupported(`type name ${e.name}`);
    }
    return base;
  }
  const step = childStep(base.t, e.name);
  const bf = base.f;
  if (step.k === "plain") {
    const { key, shape } = step;
    // Keys are built once here: property lookups with fresh strings are slow.
    const ukey = `_${key}`;
    // Items of a typed complex or resource collection were checked when navigated to.
    const trusted = (base.t.k === "fhir" || base.t.k === "resource") && !RESOURCE_TYPES.has(key);
    return {
      f: (focus, env, self) => {
        const input = bf(focus, env, self);
        return input.length === 0 ? EMPTY : navigate(input, key, ukey, shape, RESOURCE_TYPES, undefined, trusted);
      },
      t: step.type,
      safe: base.safe === true,
    };
  }
  const choice = choiceKeys(step.keys, step.shapes);
  return {
    f: (focus, env, self) => {
      const input = bf(focus, env, self);
      return input.length === 0 ? EMPTY : navigateChoice(input, choice, RESOURCE_TYPES);
    },
    t: step.type,
    safe: base.safe === true,
  };
}

function needArgs(e: Extract<Expr, { k: "call" }>, min: number, max = min): void {
  if (e.args.length < min || e.args.length > max) throw new Unsupported(`${e.name} arity`);
}

function literalString(e: Expr | undefined): string {
  if (e?.k !== "string") throw new Unsupported("expected a string literal");
  return e.value;
}

function compileCall(e: Extract<Expr, { k: "call" }>, scope: Scope): Compiled {
  const base: Compiled = e.target ? compile(e.target, scope) : { f: identity, t: scope.focus, safe: true };
  const bf = base.f;
  const baseSafe = base.safe === true;
  const inner = (arg: Expr, focus: SType): Compiled => {
    try {
      return compile(arg, { ...scope, focus, self: focus, inParams: true });
    } catch (err) {
      if (!(err instanceof Unsupported)) throw err;
      // Iteration bodies only run on items: with no input the library never
      // evaluates them, so an unsupported body defers only when it would run.
      guarded.value = true;
      return { f: bail, t: { k: "choice" } };
    }
  };
  // Arguments of ordinary functions are evaluated against `$this`.
  const param = (arg: Expr): Compiled => compile(arg, { ...scope, focus: scope.self, inParams: true });
  switch (e.name) {
    case "exists": {
      needArgs(e, 0, 1);
      if (e.args.length === 1) {
        const body = inner(e.args[0] as Expr, base.t);
        const c = body.f;
        return {
          f: (focus, env, self) => {
            let found = false;
            for (const item of bf(focus, env, self)) {
              const one = [item];
              if (criterion(c(one, env, one))) found = true;
            }
            return fromBool(found);
          },
          t: BOOLEAN,
          safe: baseSafe && body.safe === true && body.bool === true,
          bool: true,
        };
      }
      return {
        f: (focus, env, self) => (bf(focus, env, self).length > 0 ? TRUE : FALSE),
        t: BOOLEAN,
        safe: baseSafe,
        bool: true,
      };
    }
    case "empty":
      needArgs(e, 0);
      return {
        f: (focus, env, self) => (bf(focus, env, self).length === 0 ? TRUE : FALSE),
        t: BOOLEAN,
        safe: baseSafe,
        bool: true,
      };
    case "count":
      needArgs(e, 0);
      return { f: (focus, env, self) => [bf(focus, env, self).length], t: INTEGER, safe: baseSafe };
    case "not":
      needArgs(e, 0);
      return {
        f: (focus, env, self) => {
          const b = toBool(bf(focus, env, self));
          return b === undefined ? EMPTY : b ? FALSE : TRUE;
        },
        t: BOOLEAN,
        safe: baseSafe && base.bool === true,
        bool: true,
      };
    case "hasValue":
      needArgs(e, 0);
      if (base.t.k === "resource") throw new Unsupported("hasValue on a resource");
      return {
        f: (focus, env, self) => {
          const c = bf(focus, env, self);
          if (c.length !== 1) return FALSE;
          const v = c[0];
          return (v instanceof Special ? v.value !== null : typeof v !== "object") ? TRUE : FALSE;
        },
        t: BOOLEAN,
        safe: baseSafe,
        bool: true,
      };
    case "first":
      needArgs(e, 0);
      return { f: (focus, env, self) => bf(focus, env, self).slice(0, 1), t: base.t, safe: baseSafe };
    case "tail":
      needArgs(e, 0);
      return { f: (focus, env, self) => bf(focus, env, self).slice(1), t: base.t, safe: baseSafe };
    case "trace":
      // Tracing has no effect on the result (the library's output is silenced);
      // a projection argument is evaluated by the library, so it is not known safe.
      return { f: bf, t: base.t, safe: baseSafe && e.args.length === 1 && e.args[0]?.k === "string" };
    case "where": {
      needArgs(e, 1);
      const body = inner(e.args[0] as Expr, base.t);
      const c = body.f;
      return {
        f: (focus, env, self) => {
          const input = bf(focus, env, self);
          if (input.length === 0) return EMPTY;
          const out: Coll = [];
          for (const item of input) {
            const one = [item];
            if (criterion(c(one, env, one))) out.push(item);
          }
          return out;
        },
        t: base.t,
        safe: baseSafe && body.safe === true && body.bool === true,
      };
    }
    case "all": {
      needArgs(e, 1);
      const body = inner(e.args[0] as Expr, base.t);
      const c = body.f;
      return {
        f: (focus, env, self) => {
          let ok = true;
          for (const item of bf(focus, env, self)) {
            const one = [item];
            if (!criterion(c(one, env, one))) ok = false;
          }
          return fromBool(ok);
        },
        t: BOOLEAN,
        safe: baseSafe && body.safe === true && body.bool === true,
        bool: true,
      };
    }
    case "select": {
      needArgs(e, 1);
      const s = inner(e.args[0] as Expr, base.t);
      const sf = s.f;
      return {
        f: (focus, env, self) => {
          const out: Coll = [];
          for (const item of bf(focus, env, self)) {
            const one = [item];
            for (const x of sf(one, env, one)) out.push(x);
          }
          return out;
        },
        t: s.t,
        safe: baseSafe && s.safe === true,
      };
    }
    case "allFalse":
    case "allTrue": {
      needArgs(e, 0);
      const want = e.name === "allTrue";
      return {
        f: (focus, env, self) => {
          for (const x of bf(focus, env, self)) {
            if (typeof x !== "boolean") bail();
            if (x !== want) return FALSE;
          }
          return TRUE;
        },
        t: BOOLEAN,
      };
    }
    case "isDistinct":
      needArgs(e, 0);
      return {
        f: (focus, env, self) => {
          const c = bf(focus, env, self);
          return distinct(c).length === c.length ? TRUE : FALSE;
        },
        t: BOOLEAN,
        safe: baseSafe && equalitySafe(base.t),
        bool: true,
      };
    case "intersect": {
      needArgs(e, 1);
      const other = param(e.args[0] as Expr);
      checkEquality(base.t, other.t);
      const of = other.f;
      return {
        f: (focus, env, self) => {
          const left = bf(focus, env, self);
          const right = of(self, env, self);
          if (left.length === 0 || right.length === 0) return EMPTY;
          const out: Coll = [];
          for (const x of left) if (collHas(right, x) && !collHas(out, x)) out.push(x);
          return out;
        },
        t: base.t,
        safe: baseSafe && other.safe === true,
      };
    }
    case "startsWith":
    case "contains":
    case "matches": {
      needArgs(e, 1);
      requireString(base.t);
      const name = e.name;
      const isMatch = name === "matches";
      const re = isMatch ? regex(literalString(e.args[0])) : undefined;
      const arg = param(e.args[0] as Expr);
      requireString(arg.t);
      const af = arg.f;
      return {
        f: (focus, env, self) => {
          const s = singletonString(bf(focus, env, self));
          const a = singletonString(af(self, env, self));
          if (s === undefined || a === undefined) return EMPTY;
          if (isMatch) return re === undefined ? bail() : re.test(s) ? TRUE : FALSE;
          return (name === "startsWith" ? s.startsWith(a) : s.includes(a)) ? TRUE : FALSE;
        },
        t: BOOLEAN,
      };
    }
    case "substring": {
      needArgs(e, 1, 2);
      requireString(base.t);
      const start = e.args[0];
      const length = e.args[1];
      if (start?.k !== "number" || !start.integer || (length && (length.k !== "number" || !length.integer))) {
        throw new Unsupported("substring with computed bounds");
      }
      const from = start.value;
      const len = length?.k === "number" ? length.value : undefined;
      return {
        f: (focus, env, self) => {
          const s = singletonString(bf(focus, env, self));
          if (s === undefined || from < 0 || from >= s.length) return EMPTY;
          return [len === undefined ? s.substring(from) : s.substring(from, from + len)];
        },
        t: STRING,
      };
    }
    case "toInteger":
      needArgs(e, 0);
      if (valueClass(base.t) !== "string") throw new Unsupported("toInteger on a non-string");
      return {
        f: (focus, env, self) => {
          const s = singletonString(bf(focus, env, self));
          return s !== undefined && /^[+-]?\d+$/.test(s) ? [Number(s)] : EMPTY;
        },
        t: INTEGER,
      };
    case "toString":
      needArgs(e, 0);
      return {
        f: (focus, env, self) => {
          const c = bf(focus, env, self);
          if (c.length === 0) return EMPTY;
          if (c.length > 1) bail();
          const v = primitiveValue(c[0]);
          if (typeof v === "string") return [v];
          if (typeof v === "boolean" || (typeof v === "number" && Number.isFinite(v))) return [String(v)];
          return bail();
        },
        t: STRING,
      };
    case "iif": {
      needArgs(e, 2, 3);
      if (e.target) throw new Unsupported("iif on a target");
      const c = param(e.args[0] as Expr).f;
      const a = param(e.args[1] as Expr);
      const b = e.args[2] ? param(e.args[2]) : undefined;
      const af = a.f;
      const bfn = b?.f;
      return {
        f: (_focus, env, self) => {
          const cond = toBool(c(self, env, self));
          if (cond === true) return af(self, env, self);
          return bfn ? bfn(self, env, self) : EMPTY;
        },
        t: b && JSON.stringify(b.t) !== JSON.stringify(a.t) ? { k: "choice" } : a.t,
      };
    }
    case "is":
      needArgs(e, 1);
      return compileIs(base, typeArgument(e.args[0]));
    case "htmlChecks":
      // fhirpath.js has no htmlChecks(): it fails with "Not implemented" on any input.
      return {
        f: () => {
          throw FAILS;
        },
        t: BOOLEAN,
      };
    default:
      throw new Unsupported(`function ${e.name}`);
  }
}

/**
 * The library compiles patterns with the `u` flag when a string is there
 * to match; a pattern that flag rejects is then an evaluation error.
 */
function regex(source: string): RegExp | undefined {
  try {
    return new RegExp(source, "u");
  } catch {
    return undefined;
  }
}

function typeArgument(e: Expr | undefined): string {
  if (e?.k !== "member" || e.target !== undefined) throw new Unsupported("type argument");
  return e.name;
}

function compileIs(base: Compiled, type: string): Compiled {
  if (base.t.k !== "resource" || !RESOURCE_TYPES.has(type)) throw new Unsupported(`is ${type}`);
  const bf = base.f;
  return {
    f: (focus, env, self) => {
      const c = bf(focus, env, self);
      if (c.length === 0) return EMPTY;
      if (c.length > 1) bail();
      const v = c[0];
      if (v instanceof Special) bail();
      return (v as { resourceType: unknown }).resourceType === type ? TRUE : FALSE;
    },
    t: BOOLEAN,
  };
}

function requireString(t: SType): void {
  // Untyped values are checked to be strings at run time.
  if (valueClass(t) !== "string" && t.k !== "untyped") throw new Unsupported("string function on a non-string");
}

/** Whether the library's deepEqual cannot throw on values of this type (no quantity conversion). */
function equalitySafe(t: SType): boolean {
  const c = valueClass(t);
  return c === "string" || c === "number" || c === "boolean" || c === "object";
}

function checkEquality(a: SType, b: SType): void {
  const ok = (t: SType) => equalitySafe(t) || (t.k === "choice" && t.eqSafe === true);
  if (!ok(a) || !ok(b)) throw new Unsupported("equality on these types");
}

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

/** A rough evaluation cost: syntax nodes, iteration bodies counted thrice. */
function size(e: Expr): number {
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

function compileBinary(e: Extract<Expr, { k: "binary" }>, scope: Scope): Compiled {
  const l = compile(e.left, scope);
  const r = compile(e.right, scope);
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

function compileConst(name: string, scope: Scope): Compiled {
  if (name === "ucum") {
    const c = [UCUM];
    return { f: () => c, t: STRING, safe: true };
  }
  if (name !== "resource" && name !== "rootResource") throw new Unsupported(`%${name}`);
  const owner = name === "resource" ? scope.owner : undefined;
  const pick = name === "resource" ? (env: Env) => env.resource : (env: Env) => env.rootResource;
  return {
    f: (_focus, env) => {
      const r = pick(env) as { resourceType?: unknown } | null | undefined;
      if (typeof r !== "object" || r === null || Array.isArray(r)) bail();
      const rt = r.resourceType;
      if (typeof rt !== "string" || (owner !== undefined ? rt !== owner : !RESOURCE_TYPES.has(rt))) bail();
      return [r];
    },
    t: owner !== undefined ? { k: "fhir", code: owner } : { k: "resource" },
    safe: true,
  };
}

/**
 * Compiles an expression to a closure, or throws Unsupported.
 * @example compile(parseExpression("code.exists()"), scope).f([obs], env, [obs]) // [true]
 */
export function compile(e: Expr, scope: Scope): Compiled {
  switch (e.k) {
    case "member":
      return compileMember(e, scope);
    case "call":
      return compileCall(e, scope);
    case "this":
      return { f: (_focus, _env, self) => self, t: scope.self, safe: true };
    case "string": {
      const c = [e.value];
      return { f: () => c, t: STRING, safe: true };
    }
    case "number": {
      const c = [e.value];
      return { f: () => c, t: e.integer ? INTEGER : { k: "sys", name: "Decimal" }, safe: true };
    }
    case "boolean": {
      const c = [e.value];
      return { f: () => c, t: BOOLEAN, safe: true, bool: true };
    }
    case "const":
      return compileConst(e.name, scope);
    case "binary":
      return compileBinary(e, scope);
    case "type":
      if (e.op === "is") return compileIs(compile(e.target, scope), e.type);
      throw new Unsupported("as");
  }
}
