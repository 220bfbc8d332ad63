// `npm run bench`: builds, then runs the benchmark sections against 127.0.0.1
// and prints their results as Markdown (copy them into docs/benchmarks.md).
//
//   node test/bench/run.mjs                     every section
//   node test/bench/run.mjs scenario-matching   only the sections named
//
// Settings (environment): BENCH_REQUESTS (3000) and BENCH_WARMUP (300) per run,
// BENCH_TIMEOUT_MS per request (10000); BENCH_CONNECTIONS (10) and BENCH_ROUNDS (4)
// of scenario-matching (throughput always uses 10 and 50 connections, 3 rounds).
//
// A section is { id, title, run(settings) → Promise<Markdown | { markdown, summary }> },
// summary lines being { what, value, target?, met? } for the table printed at the
// end; add one as a module beside this file and list it in SECTIONS.
//
// Sections: validation, throughput, cold-start, memory (BENCH_MEMORY_CALLS, default 100000),
// fan-out, scenario-matching.
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { coldStart } from "./cold-start.mjs";
import { fanOut } from "./fan-out.mjs";
import { memory } from "./memory.mjs";
import { scenarioMatching } from "./scenario-matching.mjs";
import { throughput } from "./throughput.mjs";
import { validation } from "./validation.mjs";

const SECTIONS = [validation, throughput, coldStart, memory, fanOut, scenarioMatching];

/** The whole run may not take longer than this; it fails instead of hanging. */
const DEADLINE_MS = 12 * 60_000;

function setting(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, not ${raw}`);
  return value;
}

function machine() {
  const cpu = /^model name\s*:\s*(.+)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? "unknown CPU";
  return `${new Date().toISOString()} · Node ${process.version} · ${availableParallelism()} cores · ${cpu} · ${process.platform}`;
}

async function main() {
  const settings = {
    connections: setting("BENCH_CONNECTIONS", 10),
    requests: setting("BENCH_REQUESTS", 3000),
    warmup: setting("BENCH_WARMUP", 300),
    rounds: setting("BENCH_ROUNDS", 4),
    timeoutMs: setting("BENCH_TIMEOUT_MS", 10_000),
  };
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((id) => !SECTIONS.some((s) => s.id === id));
  if (unknown.length > 0) {
    throw new Error(`unknown section(s) ${unknown.join(", ")}; known: ${SECTIONS.map((s) => s.id).join(", ")}`);
  }
  const sections = wanted.length > 0 ? SECTIONS.filter((s) => wanted.includes(s.id)) : SECTIONS;

  console.log(`# uae-fhir-sandbox benchmarks\n\n${machine()}\n`);
  const began = performance.now();
  const summary = [];
  for (const section of sections) {
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
        "## Summary",
        "",
        "| what | measured | target | |",
        "|---|---|---|---|",
        ...summary.map((line) => `| ${line.what} | ${line.value} | ${line.target ?? "–"} | ${verdict(line)} |`),
        "",
        `(whole run ${((performance.now() - began) / 1000).toFixed(0)} s)`,
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
