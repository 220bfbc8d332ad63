import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compileInvariant, deferred, unexpected } from "../../src/validation/invariants/compile-invariant.js";
import { type Outcome, outcomeOf, referenceEvaluator } from "../../src/validation/invariants/reference-check.js";
import { R4 } from "../../src/validation/r4/definitions.js";
import { constraintContexts } from "./invariants/contexts.js";
import { type CorpusNode, exampleCorpus } from "./invariants/corpus.js";
import { generate, generateRoot, literalsOf, mutate, rng } from "./invariants/generate.js";
import { HAND_CASES } from "./invariants/hand-cases.js";

const SEED = Number(process.env.INVARIANT_SEED ?? 20261123);
const contexts = constraintContexts();
const corpus = exampleCorpus();

/** Constraints on what this product's messages carry: these must be compiled. */
const PRIORITY = [
  ..."bdl-1 bdl-2 bdl-3 bdl-4 bdl-5 bdl-7 bdl-8 bdl-9 bdl-10 bdl-11 bdl-12".split(" "),
  ..."pat-1 ait-1 ait-2 con-3 con-4 con-5 obs-3 obs-6 obs-7 inv-1@Task mdd-1 org-1 org-2 org-3".split(" "),
  ..."cmp-1 cmp-2 cpb-1 cpb-2 cpb-3 cpb-7 cpb-9 cpb-12 cpb-14 cpb-15 cpb-16".split(" "),
  ..."ref-1 qty-3 sqty-1 per-1 ext-1 cpt-2 att-1 rat-1 rng-2 drt-1 age-1 mqty-1".split(" "),
  ..."tim-1 tim-2 tim-4 tim-5 tim-6 tim-7 tim-8 tim-9 tim-10".split(" "),
  ..."dom-2 dom-3 dom-4 dom-5 dom-6 txt-1 txt-2 md-1".split(" "),
];

function isA(type: string, ancestor: string): boolean {
  for (let t: string | undefined = type; t !== undefined; t = R4.types[t]?.base) if (t === ancestor) return true;
  return false;
}

function nodesOf(context: string): CorpusNode[] {
  const abstract = R4.types[context]?.abstract === true;
  return corpus.filter((n) => n.type === context || (abstract && isA(n.type, context)));
}

interface Pair {
  key: string;
  context: string;
  check: ReturnType<typeof compileInvariant>;
  reference: (node: unknown, env: { resource: unknown; rootResource: unknown }) => Outcome;
}

function pair(key: string, context: string): Pair {
  const def = R4.constraints[key];
  if (!def) throw new Error(key);
  const check = compileInvariant(def.expression, context);
  let ref: ReturnType<typeof referenceEvaluator> | undefined;
  try {
    ref = referenceEvaluator(def.expression, context);
  } catch {
    ref = undefined;
  }
  const reference = (node: unknown, env: { resource: unknown; rootResource: unknown }): Outcome =>
    ref === undefined ? "error" : outcomeOf(() => (ref as NonNullable<typeof ref>)(node, env));
  return { key, context, check, reference };
}

function owner(context: string): string | undefined {
  const head = context.split(".")[0] as string;
  return R4.types[head]?.kind === "resource" && R4.types[head]?.abstract !== true ? head : undefined;
}

function envFor(node: unknown, context: string, seed: number) {
  if (R4.types[context]?.kind === "resource") return { resource: node, rootResource: node };
  const root = generateRoot(rng(seed), owner(context));
  return { resource: root, rootResource: root };
}

/** Words of the expression: elements the generator should favour. */
function focusOf(key: string): Set<string> {
  return new Set(R4.constraints[key]?.expression.match(/[A-Za-z]+/g) ?? []);
}

describe("compiled R4 invariants agree with the fhirpath library", () => {
  for (const [key, ctxs] of contexts) {
    it(`${key} (${ctxs.size} context${ctxs.size > 1 ? "s" : ""})`, () => {
      const mismatches: string[] = [];
      const before = unexpected.count;
      const compare = (p: Pair, node: unknown, env: { resource: unknown; rootResource: unknown }, where: string) => {
        // The outcome, not only pass/fail: true, false, empty or other, and an evaluation error are told apart.
        const ours = p.check.outcome(node, env);
        const theirs = p.reference(node, env);
        if (ours !== theirs) {
          mismatches.push(`${p.context} @ ${where}: compiled ${ours}, library ${theirs}: ${JSON.stringify(node)}`);
        }
        return ours === theirs;
      };
      for (const context of ctxs) {
        const p = pair(key, context);
        const nodes = nodesOf(context);
        for (const n of nodes) compare(p, n.node, { resource: n.resource, rootResource: n.rootResource }, n.where);
        const sample = nodes.slice(0, 25);
        if (sample.length > 0) {
          fc.assert(
            fc.property(fc.nat(sample.length - 1), fc.integer(), (i, s) => {
              const n = sample[i] as CorpusNode;
              const m = mutate(n.node, rng(s));
              const env = n.node === n.resource ? { resource: m, rootResource: m } : n;
              return compare(p, m, { resource: env.resource, rootResource: env.rootResource }, `mutation ${s}`);
            }),
            { seed: SEED, numRuns: PRIORITY.includes(key) ? 150 : 40 },
          );
        }
        const focus = focusOf(key);
        const literals = literalsOf(R4.constraints[key]?.expression ?? "");
        const runs =
          R4.types[context]?.kind === "resource" && key.startsWith("dom-") ? 15 : PRIORITY.includes(key) ? 400 : 120;
        fc.assert(
          fc.property(fc.integer(), (s) => {
            const node = generate(context, rng(s), 0, focus, literals);
            return compare(p, node, envFor(node, context, s), `generated ${s}`);
          }),
          { seed: SEED, numRuns: runs },
        );
      }
      expect(mismatches.slice(0, 5), `seed ${SEED}`).toEqual([]);
      expect(unexpected.count - before).toBe(0);
    }, 60_000);
  }
});

describe("hand-written cases for each compiled construct", () => {
  it.each(HAND_CASES)("$name", ({ expression, context, node, env, expected }) => {
    const e = env ?? { resource: node, rootResource: node };
    const compiled = compileInvariant(expression, context);
    const library = outcomeOf(() => referenceEvaluator(expression, context)(node, e));
    expect(library === "true", "the library's answer").toBe(expected);
    expect(compiled.outcome(node, e)).toBe(library);
    expect(compiled.compiled).toBe(true);
  });
});

describe("coverage", () => {
  const status = new Map<string, string>();
  for (const [key, ctxs] of contexts) {
    const states = [...ctxs].map((c) => {
      const r = compileInvariant((R4.constraints[key] as { expression: string }).expression, c);
      return r.compiled ? (r.guarded ? "guarded" : "compiled") : "fallback";
    });
    status.set(key, states.includes("fallback") ? "fallback" : states.includes("guarded") ? "guarded" : "compiled");
  }

  it("every constraint is evaluated in at least one context", () => {
    expect([...contexts.keys()].sort()).toEqual(Object.keys(R4.constraints).sort());
  });

  it("compiles every priority constraint", () => {
    const fallback = PRIORITY.filter((k) => status.get(k) === "fallback");
    // dom-3 needs descendants(): only its empty-`contained` case is compiled (guarded).
    expect(fallback).toEqual([]);
    expect(PRIORITY.filter((k) => status.get(k) === "guarded")).toEqual(["dom-3"]);
  });

  it("evaluates every HL7 example node without the library (dom-3 with contained resources aside)", () => {
    const deferredAt: string[] = [];
    for (const [key, ctxs] of contexts) {
      for (const context of ctxs) {
        const r = compileInvariant((R4.constraints[key] as { expression: string }).expression, context);
        if (!r.compiled) continue;
        for (const n of nodesOf(context)) {
          const before = deferred.count;
          r.check(n.node, { resource: n.resource, rootResource: n.rootResource });
          const hasContained = (n.node as { contained?: unknown }).contained !== undefined;
          if (deferred.count > before && !(key === "dom-3" && hasContained)) deferredAt.push(`${key} ${n.where}`);
        }
      }
    }
    expect(deferredAt).toEqual([]);
  });

  it("reports the fallback list", () => {
    const fallback = [...status].filter(([, s]) => s === "fallback").map(([k]) => k);
    const guarded = [...status].filter(([, s]) => s === "guarded").map(([k]) => k);
    const compiled = [...status].filter(([, s]) => s !== "fallback").length;
    console.info(
      `invariants: ${compiled} compiled (${guarded.length} guarded: ${guarded.sort().join(" ")}), ` +
        `${fallback.length} on the library: ${fallback.sort().join(" ")}`,
    );
    expect(compiled + fallback.length).toBe(Object.keys(R4.constraints).length);
  });
});
