// What a workspace's runtime rules, orders and pharmacies cost in heap: the figures of
// src/workspace/memory-estimate.ts (docs/benchmarks.md#workspace-state). Run by hand after `npm run build`:
//
//   node --expose-gc test/bench/state-cost.mjs <kind> [n] [size]
//   node --expose-gc test/bench/state-cost.mjs <kind>:<n>[:<size>] …   (several, each in a fresh workspace)
//
// kind: header-rules | fhirpath-rules | long-fhirpath (size: characters of each expression) | big-body (size:
// characters of each rule's body) | dense-body (size: small objects in each rule's body) | orders (size:
// pharmacies each order goes to) | pharmacies. Prints a JSON line for each: the heap after full collections before and
// after adding n to one workspace, per item and per byte of the documents, and the workspace's own estimate of
// the same (test/workspace/state-limits.test.ts compares the two).
import { createApp } from "../../dist/app.js";

const gc = globalThis.gc;
if (typeof gc !== "function") throw new Error("run with node --expose-gc");
const heap = () => {
  for (let i = 0; i < 4; i++) gc();
  return process.memoryUsage().heapUsed;
};

const rule = {
  "header-rules": (k) =>
    `  - name: rule-${k}\n    when:\n      operation: add-allergy\n      headers: { X-Test: "case-${k}" }\n    respond:\n      status: 422\n      outcome: { code: business-rule, diagnostics: "Refused for case ${k}: the allergy is already recorded." }\n`,
  "fhirpath-rules": (k) =>
    `  - name: fp-${k}\n    when:\n      operation: add-measurement\n      fhirpath: "Bundle.entry.resource.ofType(Observation).where(valueQuantity.value > ${k}).exists()"\n    respond:\n      outcome: { code: business-rule, diagnostics: "Over ${k}: {{ fhirpath('Bundle.entry.resource.ofType(Observation).valueQuantity.value') }}" }\n`,
  "long-fhirpath": (k, size) => {
    const parts = [];
    for (let j = 0, len = 0; len < size; j++) {
      const part = `code.coding.where(code = 'c${k}-${j}').exists()`;
      parts.push(part);
      len += part.length + 4;
    }
    return `  - name: long-${k}\n    when:\n      operation: add-measurement\n      fhirpath: "Bundle.entry.resource.ofType(Observation).where(${parts.join(" or ")}).exists()"\n    respond: { outcome: { code: business-rule, diagnostics: no } }\n`;
  },
  "big-body": (k, size) => {
    const words = [];
    for (let j = 0, len = 0; len < size; j++) {
      const word = `word${(k * 7919 + j) % 100000}`;
      words.push(word);
      len += word.length + 1;
    }
    return `  - name: big-${k}\n    when: { operation: add-allergy, headers: { X-Test: "big-${k}" } }\n    respond:\n      body: { resourceType: OperationOutcome, issue: [{ severity: information, code: informational, diagnostics: "${words.join(" ")}" }] }\n`;
  },
  "dense-body": (k, size) => {
    const items = Array.from({ length: size }, (_, j) => `{a: "${j % 10}"}`);
    return `  - name: dense-${k}\n    when: { operation: add-allergy, headers: { X-Test: "dense-${k}" } }\n    respond:\n      body: { resourceType: Basic, x: [${items.join(", ")}] }\n`;
  },
};

const argv = process.argv.slice(2);
const runs = argv.some((a) => a.includes(":")) ? argv.map((a) => a.split(":")) : [argv];
const silent = { info() {}, warn() {}, error() {}, debug() {} };
const answer = async () => new Response('{"resourceType":"OperationOutcome","issue":[]}', { status: 200 });

async function measure(kind = "header-rules", nText = "500", sizeText = undefined) {
  const n = Number(nText);
  // The journal keeps one call and the store one patient besides fixtures: what is measured is the state itself.
  const sandbox = createApp(
    {
      scenarios: new URL("../../scenarios", import.meta.url).pathname,
      watch: false,
      journalLimit: 1,
      maxPatients: 1,
      maxRuntimeRules: Infinity,
      maxRuntimeScenarioBytes: Infinity,
      maxRuntimeFhirpathBytes: Infinity,
    },
    { logger: silent, fetch: answer },
  );
  const workspace = sandbox.workspace;
  const size = Number(
    sizeText ?? (kind === "orders" ? 1 : kind === "dense-body" ? 2000 : kind === "big-body" ? 20000 : 2000),
  );
  const licences = Array.from({ length: kind === "orders" ? size : 0 }, (_, p) => `PH-${p}`);
  for (const licence of licences) {
    workspace.pharmacies.put({
      licence,
      name: licence,
      endpoint: `http://127.0.0.1:9/${licence}`,
      headers: {},
      source: "fixture",
    });
  }
  let textBytes = 0;
  // Adds items [from, to): rules in documents of at most 50 (one when each rule is large), orders, pharmacies.
  const add = async (from, to) => {
    if (kind in rule) {
      const perDocument = kind === "header-rules" || kind === "fhirpath-rules" ? 50 : 1;
      for (let i = from; i < to; i += perDocument) {
        let text = "rules:\n";
        for (let k = i; k < Math.min(to, i + perDocument); k++) text += rule[kind](k, size);
        textBytes += Buffer.byteLength(text);
        const added = workspace.addScenario(text);
        if (!added.ok) throw new Error(JSON.stringify(added.refused ?? added.problems[0]));
      }
    } else if (kind === "orders") {
      for (let i = from; i < to; i++) {
        const created = workspace.orders.create({ pharmacies: licences });
        if (!created.ok) throw new Error(JSON.stringify(created.issues));
      }
      // The pushes are answered and journaled; the journal is not what is measured here.
      while (workspace.orders.list().some((o) => o.pharmacies.some((r) => r.state === "sent"))) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      workspace.journal.clear();
    } else if (kind === "pharmacies") {
      for (let p = from; p < to; p++) {
        const licence = `PH-${String(p).padStart(6, "0")}`;
        const endpoint = `https://pharmacy-${p}.example.ae/fhir/hook`;
        workspace.pharmacies.put({
          licence,
          name: `Pharmacy ${licence}`,
          endpoint,
          headers: { Authorization: "Bearer abcdefabcdef0123456789" },
          source: "subscription",
          subscription: {
            resourceType: "Subscription",
            id: crypto.randomUUID(),
            status: "active",
            reason: "Drug order fulfillment requests",
            criteria: "Task?code=fulfill",
            channel: {
              type: "rest-hook",
              endpoint,
              payload: "application/fhir+json",
              header: ["Authorization: Bearer abcdefabcdef0123456789"],
            },
            meta: { versionId: "1", lastUpdated: new Date().toISOString() },
          },
        });
      }
    } else {
      throw new Error(`unknown kind ${kind}`);
    }
  };
  // Some first, not measured: what the first of a kind costs once (compiled code) is nobody's state, nor are the
  // generated profiles of orders' patients (a cache of 256 shared by every workspace, src/store/profile-cache.ts).
  await add(n, n + (kind === "orders" ? 300 : 1));
  textBytes = 0;
  const estimateBefore = workspace.memoryEstimate();
  const before = heap();
  await add(0, n);

  const heapDelta = heap() - before;
  const estimateDelta = workspace.memoryEstimate() - estimateBefore;
  console.log(
    JSON.stringify({
      kind,
      n,
      textBytes,
      heapDelta,
      perItem: Math.round(heapDelta / n),
      perTextByte: textBytes > 0 ? Number((heapDelta / textBytes).toFixed(2)) : null,
      estimateDelta,
      counts: workspace.counts(),
    }),
  );
  sandbox.close();
}

for (const [kind, n, size] of runs) await measure(kind, n, size);
