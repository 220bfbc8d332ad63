// Benchmark section: what --state-file costs a message, and how large the file grows. add-allergy at 10
// connections to the CLI in memory and with --state-file (a fresh file per run, in a temporary directory), bare
// Hono answering the sandbox's own answer canned as the machine's baseline; each server its own process pinned to
// one core, the load generator pinned to the other (pinned.mjs), rounds interleaved as in the throughput section.
// After each run with a file: its size while the sandbox runs (the database, its write-ahead log and index) and
// after a SIGTERM (the log checkpointed into the file), divided by the calls its journal holds; the rows it holds
// by kind, read from the file with node:sqlite.
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { STANDARD_PATH } from "../../dist/routing/default-operations.js";
import { adminCall, fmt, int, median, post } from "./load.mjs";
import { addAllergyEnvelope, MESSAGE_ID } from "./messages.mjs";
import { pinning, startPinned } from "./pinned.mjs";
import { measure, sandboxArgs } from "./throughput.mjs";

const ROUNDS = 3;
const CONNECTIONS = 10;
/** The target: add-allergy throughput with --state-file ≥ 0.7× of in-memory, at 10 connections. */
export const TARGETS = { stateFileRatio: 0.7 };
const KIB = 1024;

/** Bytes of a file, 0 when it is not there. */
export const bytesOf = (path) => statSync(path, { throwIfNoEntry: false })?.size ?? 0;

/** The database, its write-ahead log and its shared-memory index, in bytes. */
export function stateFileBytes(path) {
  return { db: bytesOf(path), wal: bytesOf(`${path}-wal`), shm: bytesOf(`${path}-shm`) };
}

/**
 * The rows of a state file by kind: how many, and the bytes of their keys and JSON values (what the sandbox
 * writes; the file adds SQLite's pages and the (workspace, seq) index). Read with node:sqlite, read-only.
 */
export function rowsByKind(path) {
  const { DatabaseSync } = process.getBuiltinModule("node:sqlite");
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return db
      .prepare(
        "SELECT kind, count(*) AS n, sum(length(CAST(value AS BLOB))) AS valueBytes, sum(length(CAST(key AS BLOB))) AS keyBytes " +
          "FROM items GROUP BY kind ORDER BY sum(length(CAST(value AS BLOB))) DESC",
      )
      .all()
      .map((row) => ({
        kind: row.kind,
        n: Number(row.n),
        valueBytes: Number(row.valueBytes),
        keyBytes: Number(row.keyBytes),
      }));
  } finally {
    db.close();
  }
}

/**
 * The file's bytes by B-tree (the items table, its key index, its order index, …) from SQLite's dbstat table, or
 * undefined where this node's SQLite is built without it.
 */
export function treesOf(path) {
  const { DatabaseSync } = process.getBuiltinModule("node:sqlite");
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const free = db.prepare("PRAGMA freelist_count").get().freelist_count;
    const size = db.prepare("PRAGMA page_size").get().page_size;
    const trees = db
      .prepare("SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY sum(pgsize) DESC")
      .all()
      .map((row) => ({ name: row.name, bytes: Number(row.bytes) }));
    return { trees, freeBytes: Number(free) * Number(size) };
  } catch {
    return undefined;
  } finally {
    db.close();
  }
}

/** A sandbox started and stopped (SIGTERM: the file closed) on a fresh file: the size of a file with nothing in it. */
async function emptyFileBytes(dir, args) {
  const path = join(dir, "empty.db");
  const server = await startPinned({ kind: "sandbox", args: args(path) });
  await server.stop();
  return bytesOf(path);
}

export const stateFile = {
  id: "state-file",
  title: "--state-file: add-allergy throughput against in-memory, and the file's size per journaled call",
  /** @param {{ requests: number, warmup: number, timeoutMs: number }} settings */
  async run(settings) {
    const dir = mkdtempSync(join(tmpdir(), "uae-fhir-sandbox-bench-state-"));
    try {
      const withFile = (path) => sandboxArgs(["--state-file", path]);
      // The sandbox's own answer, canned, so that bare Hono sends the same bytes.
      const probe = await startPinned({ kind: "sandbox", args: sandboxArgs() });
      let answer;
      try {
        const body = addAllergyEnvelope().replace(MESSAGE_ID, "state-size-check");
        answer = await post(undefined, `${probe.url}${STANDARD_PATH}`, body, settings.timeoutMs);
      } finally {
        await probe.stop();
      }
      if (answer.status !== 200) throw new Error(`the sandbox answered ${answer.status}: ${answer.body.slice(0, 300)}`);
      const canned = join(dir, "allergy.json");
      writeFileSync(canned, answer.body);
      const empty = await emptyFileBytes(dir, withFile);

      let files = 0;
      let lastFile = "";
      const targets = [
        {
          label: "hono",
          name: "bare Hono, canned answer",
          spec: () => ({ kind: "hono", path: STANDARD_PATH, cannedFile: canned }),
        },
        {
          label: "memory",
          name: "sandbox, in memory (no --state-file)",
          spec: () => ({ kind: "sandbox", args: sandboxArgs() }),
        },
        {
          label: "file",
          name: "sandbox, --state-file (a fresh file)",
          spec: () => {
            lastFile = join(dir, `state-${++files}.db`);
            return { kind: "sandbox", args: withFile(lastFile) };
          },
          // Before the server stops: what it holds, and the files as they are while it runs.
          inspect: async (server) => {
            const health = (await adminCall(server.url, "GET", "/__admin/health", undefined, settings.timeoutMs)).body;
            if (health.stateFile?.status !== "ok")
              throw new Error(`the state file is failing: ${JSON.stringify(health.stateFile)}`);
            return {
              path: lastFile,
              running: stateFileBytes(lastFile),
              calls: health.journal.calls,
              maxCalls: health.journal.maxCalls,
              records: health.store.records,
            };
          },
        },
      ];
      const job = { templates: [addAllergyEnvelope()], connections: CONNECTIONS };
      const runs = {};
      for (let round = 0; round < ROUNDS; round++) {
        for (const t of round % 2 === 0 ? targets : [...targets].reverse()) {
          runs[t.label] ??= [];
          const run = await measure(t.spec(), { ...job, prefix: `sf-${t.label}-${round}` }, settings, t.inspect);
          // After the SIGTERM: the log checkpointed into the file.
          if (t.label === "file") run.stopped = stateFileBytes(run.path);
          runs[t.label][round] = run;
        }
      }
      const mid = (label, pick) => median(runs[label].map(pick));
      const ratio = (a, b, pick = (r) => r.rps) => median(runs[a].map((x, i) => pick(x) / pick(runs[b][i])));
      const cpu = (r) => r.cpuUs;
      const fileRatio = ratio("file", "memory");
      const sizes = runs.file.map((r) => ({
        calls: r.calls,
        records: r.records,
        running: r.running.db + r.running.wal + r.running.shm,
        wal: r.running.wal,
        stopped: r.stopped.db + r.stopped.wal,
      }));
      const perCall = median(sizes.map((s) => (s.stopped - empty) / s.calls));
      const perCallRunning = median(sizes.map((s) => (s.running - empty) / s.calls));
      const last = runs.file.at(-1);
      const kinds = rowsByKind(last.path);
      const sent = settings.warmup + settings.requests + 1;
      const ratioRow = (what, a, b) =>
        `| ${what} | ${fmt(ratio(a, b))} | ${fmt(ratio(a, b, (r) => r.p50))} | ${fmt(ratio(a, b, (r) => r.p99))} | ${fmt(ratio(b, a, cpu))} |`;
      const markdown = [
        `${pinning()}. ${ROUNDS} rounds, servers interleaved (every other round reversed), a fresh server process per ` +
          `run and, with --state-file, a fresh file in a temporary directory (${tmpdir()}); per run one checked message, ` +
          `${int(settings.warmup)} warm-up requests (not counted), then ${int(settings.requests)} measured, each an ` +
          `add-allergy message with a fresh MessageHeader id for the same patient, through ${CONNECTIONS} keep-alive ` +
          "connections (autocannon, one request in flight per connection). Medians of the rounds; ratios are medians " +
          "of the ratios within each round. The sandbox is the CLI (`serve --scenarios " +
          "scenarios/20-patient-profile-examples.yaml --no-watch`, default journal), as in the throughput section.",
        "",
        "| ratio | requests/s | p50 latency | p99 latency | CPU-bound: the second's CPU per request / the first's |",
        "|---|---|---|---|---|",
        ratioRow(`--state-file / in memory, add-allergy, ${CONNECTIONS} connections`, "file", "memory"),
        ratioRow(`in memory / bare Hono, ${CONNECTIONS} connections`, "memory", "hono"),
        ratioRow(`--state-file / bare Hono, ${CONNECTIONS} connections`, "file", "hono"),
        "",
        "| server | requests/s | p50 ms | p99 ms | max ms | server CPU µs per request |",
        "|---|---|---|---|---|---|",
        ...targets.map(
          (t) =>
            `| ${t.name} | ${int(mid(t.label, (r) => r.rps))} | ${fmt(mid(t.label, (r) => r.p50))} | ` +
            `${fmt(mid(t.label, (r) => r.p99))} | ${fmt(mid(t.label, (r) => r.max))} | ${fmt(mid(t.label, cpu), 0)} |`,
        ),
        "",
        `The file after each run of ${int(sent)} messages: its journal holding ${int(median(sizes.map((s) => s.calls)))} ` +
          `calls (at most ${int(last.maxCalls)}), ${int(median(sizes.map((s) => s.records)))} records of the one patient (the rest forgotten past ` +
          "--max-records-per-patient), the duplicate memory's remembered answers. While the sandbox runs the " +
          "write-ahead log holds the pages written since its last checkpoint (SQLite checkpoints it every 1,000 pages, " +
          "and reuses the log from its start, so it stays at its largest size); a SIGTERM checkpoints it into the " +
          `database and removes it. A file with nothing in it (started and stopped) is ${int(empty)} bytes.`,
        "",
        "| the file (median of the runs) | bytes | per journaled call |",
        "|---|---|---|",
        `| while the sandbox runs: database + write-ahead log + index | ${int(median(sizes.map((s) => s.running)))} ` +
          `(log ${int(median(sizes.map((s) => s.wal)))}) | ${int(perCallRunning)} |`,
        `| after a SIGTERM: the database alone | ${int(median(sizes.map((s) => s.stopped)))} | ${int(perCall)} |`,
        "",
        "Per journaled call: (the file's bytes − the empty file's) ÷ the calls the journal holds; it includes the " +
          "remembered answers and the records, which a full journal of add-allergy messages brings with it. What the " +
          "rows hold, by kind (the last run's file, read with node:sqlite):",
        "",
        "| kind | rows | JSON bytes per row | key bytes per row |",
        "|---|---|---|---|",
        ...kinds.map((k) => `| ${k.kind} | ${int(k.n)} | ${int(k.valueBytes / k.n)} | ${int(k.keyBytes / k.n)} |`),
      ].join("\n");
      return {
        markdown,
        summary: [
          {
            what: `add-allergy throughput, --state-file / in memory, ${CONNECTIONS} connections`,
            value:
              `${fmt(fileRatio)}× (${int(mid("file", (r) => r.rps))} vs ${int(mid("memory", (r) => r.rps))} requests/s; ` +
              `server CPU ${fmt(mid("file", cpu), 0)} vs ${fmt(mid("memory", cpu), 0)} µs per request)`,
            target: `≥ ${TARGETS.stateFileRatio}×`,
            met: fileRatio >= TARGETS.stateFileRatio,
          },
          {
            what: "state file bytes per journaled call (add-allergy; after a SIGTERM / while running, log included)",
            value: `${int(perCall)} / ${int(perCallRunning)} bytes (${fmt(perCall / KIB, 1)} KiB)`,
          },
        ],
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
