/** Compiles a FHIRPath syntax tree to closures: navigation, constants, and dispatch. */
import { compileCall, compileIs } from "./compile-functions.js";
import { compileBinary } from "./compile-operators.js";
import { BOOLEAN, type Compiled, INTEGER, identity, type Scope, STRING, UCUM } from "./compile-support.js";
import { type Expr, Unsupported } from "./parse-expression.js";
import { bail, choiceKeys, EMPTY, navigate, navigateChoice } from "./runtime.js";
import { childStep, RESOURCE_TYPES } from "./static-types.js";

export type { Fn, Scope } from "./compile-support.js";
export { guarded } from "./compile-support.js";

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
      envOnly: base.envOnly === true && e.target !== undefined,
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
    envOnly: base.envOnly === true && e.target !== undefined,
  };
}

function compileConst(name: string, scope: Scope): Compiled {
  if (name === "ucum") {
    const c = [UCUM];
    return { f: () => c, t: STRING, safe: true, envOnly: true };
  }
  if (name !== "resource" && name !== "rootResource") throw new Unsupported(`%${name}`);
  const resource = name === "resource";
  const owner = resource ? scope.owner : undefined;
  return {
    f: (_focus, env) => {
      const r = (resource ? env.resource : env.rootResource) as { resourceType?: unknown } | null | undefined;
      if (typeof r !== "object" || r === null || Array.isArray(r)) bail();
      const rt = r.resourceType;
      if (typeof rt !== "string" || (owner !== undefined ? rt !== owner : !RESOURCE_TYPES.has(rt))) bail();
      // Made once per resource (bdl-3 reads %resource three times per entry); results are never mutated.
      if (resource) {
        env.resourceFocus ??= [r];
        return env.resourceFocus;
      }
      env.rootResourceFocus ??= [r];
      return env.rootResourceFocus;
    },
    t: owner !== undefined ? { k: "fhir", code: owner } : { k: "resource" },
    safe: true,
    envOnly: true,
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
      return { f: () => c, t: STRING, safe: true, envOnly: true };
    }
    case "number": {
      const c = [e.value];
      return { f: () => c, t: e.integer ? INTEGER : { k: "sys", name: "Decimal" }, safe: true, envOnly: true };
    }
    case "boolean": {
      const c = [e.value];
      return { f: () => c, t: BOOLEAN, safe: true, bool: true, envOnly: true };
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
