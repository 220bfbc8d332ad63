import { it } from "vitest";
import { compileInvariant, deferred } from "../../src/validation/invariants/compile-invariant.js";
import { R4 } from "../../src/validation/r4/definitions.js";
import { exampleCorpus } from "./invariants/corpus.js";
import { generate, generateRoot, rng } from "./invariants/generate.js";

it("diag2", () => {
  const corpus = exampleCorpus();
  for (const [key, c] of [["ref-1", "Reference"], ["dom-4", "Observation"], ["rng-2","Range"]] as const) {
    const r = compileInvariant(R4.constraints[key]!.expression, c);
    let shown = 0;
    for (const x of corpus.filter((n) => n.type === c)) {
      const b = deferred.count;
      r.check(x.node, { resource: x.resource, rootResource: x.rootResource });
      if (deferred.count > b && shown++ < 3) console.log(key, "corpus", JSON.stringify(x.node).slice(0, 200), JSON.stringify(x.rootResource).slice(0, 100));
    }
    for (let s = 0; s < 100; s++) {
      const node = generate(c, rng(s), 0, new Set(["reference", "contained", "meta", "low", "high"]));
      const root = R4.types[c]?.kind === "resource" ? node : generateRoot(rng(s), undefined);
      const b = deferred.count;
      r.check(node, { resource: root, rootResource: root });
      if (deferred.count > b && shown++ < 6) console.log(key, "gen", JSON.stringify(node).slice(0, 300), JSON.stringify(root).slice(0, 150));
    }
  }
});
