import { it } from "vitest";
import { compileInvariant, deferred } from "../../src/validation/invariants/compile-invariant.js";
import { R4 } from "../../src/validation/r4/definitions.js";
import { constraintContexts } from "./invariants/contexts.js";
import { exampleCorpus } from "./invariants/corpus.js";
import { generate, generateRoot, literalsOf, mutate, rng } from "./invariants/generate.js";

it("diag", () => {
  const corpus = exampleCorpus();
  const rows: string[] = [];
  for (const [key, ctxs] of constraintContexts()) {
    let t = 0, f = 0, d = 0, n = 0;
    let st = "";
    for (const c of ctxs) {
      const r = compileInvariant(R4.constraints[key]!.expression, c);
      st = r.compiled ? (r.guarded ? "G" : "C") : "F";
      if (!r.compiled) continue;
      const nodes = corpus.filter((x) => x.type === c);
      const cases: [unknown, unknown, unknown][] = nodes.map((x) => [x.node, x.resource, x.rootResource]);
      for (const x of nodes.slice(0, 10)) for (let s = 0; s < 20; s++) { const m = mutate(x.node, rng(s)); cases.push([m, x.node === x.resource ? m : x.resource, x.node === x.resource ? m : x.rootResource]); }
      for (let s = 0; s < (ctxs.size > 5 ? 5 : 200); s++) {
        const node = generate(c, rng(s), 0, new Set(R4.constraints[key]!.expression.match(/[A-Za-z]+/g)), literalsOf(R4.constraints[key]!.expression));
        const root = R4.types[c]?.kind === "resource" ? node : generateRoot(rng(s), c.split(".")[0]);
        cases.push([node, root, root]);
      }
      for (const [node, resource, rootResource] of cases) {
        const before = deferred.count;
        const v = r.check(node, { resource, rootResource });
        n++; if (v) t++; else f++; if (deferred.count > before) d++;
      }
    }
    rows.push(`${st} ${key.padEnd(16)} n=${n} true=${t} false=${f} deferred=${d}`);
  }
  console.log(rows.join("\n"));
});
