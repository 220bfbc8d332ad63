// `npm run bench`: builds, then runs the benchmark sections against 127.0.0.1
// and prints their results as Markdown (docs/benchmarks.md is written from
// them): the machine, each section, then a summary against the targets.
//
//   node test/bench/run.mjs                       every section
//   node test/bench/run.mjs throughput memory     only the sections named
//
// Settings (environment): BENCH_REQUESTS (10000) and BENCH_WARMUP (2000) per
// throughput and allocation run, BENCH_TIMEOUT_MS per request (10000), BENCH_MEMORY_CALLS
// (100000), BENCH_STATE_RECORDS (100000: the records state-start builds); scenario-matching
// has its own BENCH_CONNECTIONS (10), BENCH_MATCHING_REQUESTS (3000) and BENCH_ROUNDS (4);
// request-log runs 3000 requests.
//
// A section is { id, title, run(settings) → Promise<Markdown | { markdown, summary }> },
// summary lines being { what, value, target?, met? } for the table printed at the
// end; add one as a module beside this file and list it in SECTIONS.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { availableParallelism, loadavg, totalmem } from "node:os";
import { allocation } from "./allocation.mjs";
import { coldStart } from "./cold-start.mjs";
import { fanOut } from "./fan-out.mjs";
import { memory } from "./memory.mjs";
import { mixedLoad } from "./mixed-load.mjs";
import { pinning } from "./pinned.mjs";
import { profile } from "./profile.mjs";
import { requestLog } from "./request-log.mjs";
import { scenarioMatching } from "./scenario-matching.mjs";
import { stateFile } from "./state-file.mjs";
import { stateStart } from "./state-start.mjs";
import { throughput } from "./throughput.mjs";
import { validation } from "./validation.mjs";
import { workspaces } from "./workspaces.mjs";

/** Sections in run order, each with settings of its own on top of the common ones. */
const SECTIONS = [
  [validation, {}],
  [throughput, {}],
  [allocation, {}],
  [memory, {}],
  [coldStart, {}],
  [fanOut, {}],
  [mixedLoad, {}],
  [profile, {}],
  [scenarioMatching, { requests: "BENCH_MATCHING_REQUESTS", warmup: 300 }],
  [requestLog, { requests: 3000 }],
  [workspaces, {}],
  [stateFile, {}],
  [stateStart, {}],
];

/** The whole run may not take longer than this; it fails instead of hanging. */
const DEADLINE_MS = 35 * 60_000;

function setting(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, not ${raw}`);
  return value;
}

function machine() {
  const cpu = /^model name\s*:\s*(.+)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? "unknown CPU";
  const autocannon = JSON.parse(
    readFileSync(new URL("../../node_modules/autocannon/package.json", import.meta.url)),
  ).version;
  let commit = "unknown";
  try {
    commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
  } catch {
    // Not a git checkout.
  }
  return [
    "| machine | |",
    "|---|---|",
    `| date (UTC) | ${new Date().toISOString()} |`,
    `| commit | ${commit} |`,
    `| CPU | ${availableParallelism()} × ${cpu} |`,
    `| memory | ${Math.round(totalmem() / 2 ** 30)} GiB |`,
    `| Node | ${process.version} (${process.platform}) |`,
    `| load average at start (1, 5, 15 min) | ${loadavg()
      .map((l) => l.toFixed(2))
      .join(", ")} |`,
    `| placement | ${pinning()} |`,
    `| load generator | autocannon ${autocannon}, its own process |`,
  ].join("\n");
}

async function main() {
  const common = {
    requests: setting("BENCH_REQUESTS", 10_000),
    warmup: setting("BENCH_WARMUP", 2_000),
    timeoutMs: setting("BENCH_TIMEOUT_MS", 10_000),
    connections: setting("BENCH_CONNECTIONS", 10),
    rounds: setting("BENCH_ROUNDS", 4),
  };
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((id) => !SECTIONS.some(([s]) => s.id === id));
  if (unknown.length > 0) {
    throw new Error(`unknown section(s) ${unknown.join(", ")}; known: ${SECTIONS.map(([s]) => s.id).join(", ")}`);
  }
  const sections = wanted.length > 0 ? SECTIONS.filter(([s]) => wanted.includes(s.id)) : SECTIONS;

  console.log(`# uae-fhir-sandbox benchmarks\n\n${machine()}\n`);
  const began = performance.now();
  const summary = [];
  for (const [section, own] of sections) {
    const settings = { ...common };
    for (const [key, value] of Object.entries(own)) {
      settings[key] = typeof value === "string" ? setting(value, 3000) : value;
    }
    const started = performance.now();
    const result = await section.run(settings);
    const { markdown, summary: lines = [] } = typeof result === "string" ? { markdown: result } : result;
    summary.push(...lines);
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(`## ${section.title}\n\n${markdown}\n\n(${seconds} s)\n`);
  }
  if (summary.length > 0) {
    const verdict = (line) => (line.met === undefined ? "" : line.met ? "met" : "**not met**");
    console.log(
      [
        "## Summary against the targets",
        "",
        "| what | measured | target | |",
        "|---|---|---|---|",
        ...summary.map((line) => `| ${line.what} | ${line.value} | ${line.target ?? "–"} | ${verdict(line)} |`),
        "",
        `(whole run ${((performance.now() - began) / 1000).toFixed(0)} s; load average at the end ${loadavg()
          .map((l) => l.toFixed(2))
          .join(", ")})`,
      ].join("\n"),
    );
  }
}

const deadline = setTimeout(() => {
  console.error(`benchmarks still running after ${DEADLINE_MS / 1000} s; giving up`);
  process.exit(1);
}, DEADLINE_MS);
deadline.unref();

main().then(
  () => clearTimeout(deadline),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
