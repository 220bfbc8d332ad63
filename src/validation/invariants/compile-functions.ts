/** Compiles FHIRPath function invocations (`exists()`, `where(…)`, `matches(…)`, …). */
import { compile } from "./compile-expression.js";
import {
  BOOLEAN,
  type Compiled,
  checkEquality,
  criterion,
  equalitySafe,
  guarded,
  INTEGER,
  identity,
  requireString,
  type Scope,
  STRING,
} from "./compile-support.js";
import { type Expr, Unsupported } from "./parse-expression.js";
import {
  bail,
  type Coll,
  collHas,
  distinct,
  EMPTY,
  FAILS,
  FALSE,
  fromBool,
  primitiveValue,
  Special,
  singletonString,
  TRUE,
  toBool,
} from "./runtime.js";
import { RESOURCE_TYPES, type SType, valueClass } from "./static-types.js";

const WHOLE_NUMBER = /^[+-]?\d+$/;

/**
 * The one-item input of an iteration body (`$this`), refilled for each item instead of made per item: a body's
 * result is read before the next item, and a compiled closure never runs inside itself.
 */
function scratch(): Coll {
  return [undefined];
}

function needArgs(e: Extract<Expr, { k: "call" }>, min: number, max = min): void {
  if (e.args.length < min || e.args.length > max) throw new Unsupported(`${e.name} arity`);
}

function literalString(e: Expr | undefined): string {
  if (e?.k !== "string") throw new Unsupported("expected a string literal");
  return e.value;
}

export function compileCall(e: Extract<Expr, { k: "call" }>, scope: Scope): Compiled {
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
        const one = scratch();
        return {
          f: (focus, env, self) => {
            let found = false;
            for (const item of bf(focus, env, self)) {
              one[0] = item;
              if (criterion(c(one, env, one))) found = true;
            }
            one[0] = undefined;
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
      const one = scratch();
      return {
        f: (focus, env, self) => {
          const input = bf(focus, env, self);
          if (input.length === 0) return EMPTY;
          let out: Coll | undefined;
          for (const item of input) {
            one[0] = item;
            if (!criterion(c(one, env, one))) continue;
            out ??= [];
            out.push(item);
          }
          one[0] = undefined;
          return out ?? EMPTY;
        },
        t: base.t,
        safe: baseSafe && body.safe === true && body.bool === true,
      };
    }
    case "all": {
      needArgs(e, 1);
      const body = inner(e.args[0] as Expr, base.t);
      const c = body.f;
      const one = scratch();
      return {
        f: (focus, env, self) => {
          let ok = true;
          for (const item of bf(focus, env, self)) {
            one[0] = item;
            if (!criterion(c(one, env, one))) ok = false;
          }
          one[0] = undefined;
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
      const one = scratch();
      return {
        f: (focus, env, self) => {
          let out: Coll | undefined;
          for (const item of bf(focus, env, self)) {
            one[0] = item;
            for (const x of sf(one, env, one)) {
              out ??= [];
              out.push(x);
            }
          }
          one[0] = undefined;
          return out ?? EMPTY;
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
          return s !== undefined && WHOLE_NUMBER.test(s) ? [Number(s)] : EMPTY;
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
        fails: e.target === undefined,
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

export function compileIs(base: Compiled, type: string): Compiled {
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
