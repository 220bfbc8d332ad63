// Benchmark section: does matching cost grow with the rules of other
// operations? add-allergy answered by the built-in behaviour with 1 scenario
// rule loaded, and with 10,000 (all for other operations, so the index by
// operation should make them free); bare Hono on the same adapter as the floor.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_OPERATIONS, STANDARD_PATH } from "../../dist/routing/default-operations.js";
import { ScenarioFolder } from "../../dist/scenarios/scenario-folder.js";
import { Scenarios } from "../../dist/scenarios/scenarios.js";
import { drive, median, post, startServer } from "./load.mjs";
import { addAllergyEnvelope, cannedResponse, MESSAGE_ID } from "./messages.mjs";

const OPERATION = "add-allergy";
const OTHER_OPERATIONS = DEFAULT_OPERATIONS.map((op) => op.id).filter((id) => id !== OPERATION);
/**
 * `count` rules, none for add-allergy: spread over the other 17 operations,
 * with each kind of matcher (headers, patient, FHIRPath, path + header
 * pattern) and each kind of response, as YAML files of 1,000 rules.
 */
export function writeRules(dir, count) {
  mkdirSync(dir, { recursive: true });
  const perFile = 1000;
  for (let file = 0; file * perFile < count; file++) {
    const lines = [`name: benchmark rules ${file}`, "rules:"];
    for (let i = file * perFile; i < Math.min(count, (file + 1) * perFile); i++) {
      const op = OTHER_OPERATIONS[i % OTHER_OPERATIONS.length];
      lines.push(`  - name: bench-${i}`);
      switch (i % 4) {
        case 0:
          lines.push(`    when: { operation: ${op}, headers: { X-Bench-Rule: r${i} } }`);
          lines.push(`    respond: { outcome: { diagnostics: "rule ${i} for {{ patient.key }}" } }`);
          break;
        case 1:
          lines.push(
            `    when: { operation: ${op}, patient: "urn:ae:emirates-id|784-2000-${String(i).padStart(7, "0")}-0" }`,
          );
          lines.push("    respond: { builtIn: true, delay: 10ms }");
          break;
        case 2:
          lines.push(`    when: { operation: ${op}, fhirpath: "Bundle.entry.resource.id = 'bench-${i}'" }`);
          lines.push(`    respond: { status: 503, outcome: { code: transient, diagnostics: "rule ${i}" } }`);
          break;
        default:
          lines.push(
            `    when: { operation: ${op}, path: "${STANDARD_PATH}", headers: { X-Bench-Tag: { matches: "^t${i}$" } } }`,
          );
          lines.push("    respond: { fault: timeout }");
      }
    }
    writeFileSync(join(dir, `bench-${String(file).padStart(2, "0")}.yaml`), `${lines.join("\n")}\n`);
  }
}

/**
 * Matching alone, in-process: the mean time of `Scenarios.decide` for one
 * message, run for about `budgetMs`. No rule matches, so every candidate is tried.
 */
function timeDecisions(folder, operation, budgetMs = 400) {
  // The shared files (loaded once per sandbox) and one workspace's view of them, as createApp builds them.
  const files = new ScenarioFolder(folder, { now: () => new Date() });
  const loaded = files.reload();
  const scenarios = new Scenarios(files);
  if (!loaded.ok) throw new Error(`benchmark rules did not load: ${JSON.stringify(loaded.problems[0])}`);
  const bundle = JSON.parse(JSON.parse(addAllergyEnvelope()).content);
  const facts = {
    operation,
    direction: "inbound",
    path: STANDARD_PATH,
    header: () => undefined,
    bundle: () => bundle,
    patientKeys: () => ["urn:ae:emirates-id|784-1990-1234567-6"],
  };
  // What the index leaves to the matchers: the operation's rules, less those for patients the message does not name.
  const tried = [...scenarios.newTrace().rules.applicable(facts)].length;
  let n = 0;
  const started = performance.now();
  let elapsed = 0;
  while (elapsed < budgetMs || n < 20) {
    for (let i = 0; i < 10; i++) {
      if (scenarios.decide(facts) !== undefined) throw new Error(`a benchmark rule matched ${operation}`);
    }
    n += 10;
    elapsed = performance.now() - started;
  }
  return { tried, microseconds: (elapsed * 1000) / n };
}

/** One warm-up and one measured run against a fresh server. */
async function measure(spec, settings, label, round) {
  const server = await startServer(spec);
  try {
    const url = `${server.url}${STANDARD_PATH}`;
    const envelope = addAllergyEnvelope();
    const payload = (phase) => (i) => envelope.replace(MESSAGE_ID, `bench-${label}-${round}-${phase}-${i}`);
    // The answer must be the built-in ok answer, not a rule's or an error.
    const first = await post(undefined, url, payload("check")(0), settings.timeoutMs);
    if (first.status !== 200 || !first.body.includes('"code":"ok"')) {
      throw new Error(`${label}: expected a 200 ok response message, got ${first.status}: ${first.body.slice(0, 300)}`);
    }
    const common = { url, connections: settings.connections, timeoutMs: settings.timeoutMs };
    await drive({ ...common, payload: payload("warmup"), requests: settings.warmup });
    const result = await drive({ ...common, payload: payload("run"), requests: settings.requests });
    return { ...result, info: server.info };
  } finally {
    await server.stop();
  }
}

const fmt = (n, digits = 2) => n.toFixed(digits);
const int = (n) => Math.round(n).toLocaleString("en-US");

export const scenarioMatching = {
  id: "scenario-matching",
  title: "Scenario matching: add-allergy with 1 rule vs 10,000 rules of other operations",
  /** @param {{ connections: number, requests: number, warmup: number, rounds: number, timeoutMs: number }} settings */
  async run(settings) {
    const dir = mkdtempSync(join(tmpdir(), "uae-fhir-sandbox-bench-"));
    try {
      writeRules(join(dir, "one"), 1);
      writeRules(join(dir, "many"), 10_000);
      const other = OTHER_OPERATIONS[0];
      const decisions = [
        ["add-allergy, 1 rule loaded", timeDecisions(join(dir, "one"), OPERATION)],
        ["add-allergy, 10,000 rules loaded", timeDecisions(join(dir, "many"), OPERATION)],
        [`${other}, 10,000 rules loaded (none matching)`, timeDecisions(join(dir, "many"), other)],
      ];
      const targets = [
        {
          label: "bare",
          name: "bare Hono, canned answer",
          spec: () => ({ kind: "bare-hono", path: STANDARD_PATH, cannedBody: cannedResponse() }),
        },
        { label: "one", name: "sandbox, 1 rule", spec: () => ({ kind: "sandbox", scenarios: join(dir, "one") }) },
        {
          label: "many",
          name: "sandbox, 10,000 rules",
          spec: () => ({ kind: "sandbox", scenarios: join(dir, "many") }),
        },
        {
          // The control: as much extra heap as the 10,000 rules take, but no rules.
          label: "ballast",
          name: "sandbox, 1 rule + unrelated heap the size of 10,000 rules",
          spec: (latest) => ({
            kind: "sandbox",
            scenarios: join(dir, "one"),
            ballastMB: Math.max(0, (latest.many?.info.heapMB ?? 0) - (latest.one?.info.heapMB ?? 0)),
          }),
        },
      ];
      const runs = Object.fromEntries(targets.map((t) => [t.label, []]));
      // Rounds interleave the targets, every other round in reverse order, so that a busy moment of the machine
      // falls on all of them alike; ratios are taken within a round. (The control in a reversed round uses the
      // heap the 10,000 rules took in the round before.)
      const latest = {};
      for (let round = 1; round <= settings.rounds; round++) {
        const order = round % 2 === 1 ? targets : [...targets].reverse();
        for (const target of order) {
          if (target.label === "ballast" && !latest.many) continue;
          latest[target.label] = await measure(target.spec(latest), settings, target.label, round);
          runs[target.label][round - 1] = latest[target.label];
        }
      }
      const s = Object.fromEntries(
        targets.map(({ label }) => {
          const list = runs[label].filter(Boolean);
          const mid = (pick) => median(list.map(pick));
          return [
            label,
            {
              rps: mid((r) => r.rps),
              p50: mid((r) => r.p50),
              p99: mid((r) => r.p99),
              createMs: mid((r) => r.info.createMs ?? 0),
              heapMB: mid((r) => (r.info.heapMB ?? 0) + (r.info.ballastMB ?? 0)),
              rules: list[0].info.rules,
              cannedBytes: list[0].info.cannedBytes,
            },
          ];
        }),
      );
      /** Medians of the per-round ratios a/b of requests/s, p50 and p99. */
      const ratio = (a, b) => {
        const rounds = runs[a].flatMap((x, i) => (x && runs[b][i] ? [[x, runs[b][i]]] : []));
        const of = (pick) => fmt(median(rounds.map(([x, y]) => pick(x) / pick(y))));
        return `${of((r) => r.rps)} | ${of((r) => r.p50)} | ${of((r) => r.p99)}`;
      };
      return [
        `${settings.connections} connections, ${int(settings.requests)} requests per run after ${int(settings.warmup)} warm-up, ` +
          `${settings.rounds} rounds interleaved (medians shown; ratios are medians of the ratios within each round), ` +
          "a fresh server per run in a worker thread; " +
          `each request an add-allergy message (${int(Buffer.byteLength(addAllergyEnvelope()))} bytes) with a unique MessageHeader id, ` +
          "answered by the built-in behaviour with 200 ok. " +
          "No rule is for add-allergy; the 10,000 are spread over the 17 other operations.",
        "",
        "| ratio | requests/s | p50 latency | p99 latency |",
        "|---|---|---|---|",
        `| sandbox: 10,000 rules / 1 rule | ${ratio("many", "one")} |`,
        `| sandbox: 1 rule + heap of 10,000 rules / 1 rule (control) | ${ratio("ballast", "one")} |`,
        `| sandbox (1 rule) / bare Hono | ${ratio("one", "bare")} |`,
        "",
        "| server | rules | retained heap after start, MiB | requests/s | p50 ms | p99 ms |",
        "|---|---|---|---|---|---|",
        ...targets.map(({ label, name }) => {
          const r = s[label];
          const heap = label === "bare" ? "–" : fmt(r.heapMB, 0);
          return `| ${name} | ${r.rules ?? "–"} | ${heap} | ${int(r.rps)} | ${fmt(r.p50)} | ${fmt(r.p99)} |`;
        }),
        "",
        "Matching alone, in-process (`Scenarios.decide` for one message that no rule matches):",
        "",
        "| message | rules tried | time per message, µs |",
        "|---|---|---|",
        ...decisions.map(
          ([what, d]) => `| ${what} | ${int(d.tried)} | ${fmt(d.microseconds, d.microseconds < 10 ? 3 : 1)} |`,
        ),
        "",
        `Bare Hono's canned answer: ${int(s.bare.cannedBytes)} bytes. Retained heap: what createApp added (and the ` +
          `control's ballast). createApp with its scenarios folder: ${int(s.one.createMs)} ms with 1 rule, ` +
          `${int(s.many.createMs)} ms with 10,000 rules.`,
      ].join("\n");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
