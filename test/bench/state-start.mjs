// Benchmark section: start-up on a state file holding 100,000 stored records and a full journal, and the file's
// size per stored record and per journaled call. The state is built once, through the sandbox itself: the CLI
// (pinned, --state-file, --max-patients raised so nothing is forgotten) is sent view-patient-profile messages for
// new patients, each of which generates and stores a profile, with a journal of one call (--journal-limit 1), until
// it holds 100,000 records; stopped (SIGTERM: the log checkpointed into the file) and measured; started again on the
// same file with the default journal, sent add-allergy messages for one patient until its journal is full; stopped
// and measured. Then the CLI is started on copies of that file, interleaved with starts in memory and on an empty
// file: spawn → listening line → GET /__admin/health answered (checked: the records and the journal are back) →
// an add-allergy message answered 200.
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { STANDARD_PATH } from "../../dist/routing/default-operations.js";
import { fmt, int, median, post } from "./load.mjs";
import { addAllergyEnvelope, benchEmiratesId, MESSAGE_ID, viewProfileEnvelope } from "./messages.mjs";
import { load, pinning, startPinned } from "./pinned.mjs";
import { bytesOf, rowsByKind, treesOf } from "./state-file.mjs";

/** Records the built state holds at least (BENCH_STATE_RECORDS for a shorter trial). */
const RECORDS = setting("BENCH_STATE_RECORDS", 100_000);
const STARTS = 5;
/** New patients per load run of the build (each a view-patient-profile message). */
const BATCH = 500;
const CONNECTIONS = 8;
/** The target: start-up to the first answer with 100,000 records and a full journal. */
export const TARGETS = { startMs: 2000 };
const MB = 1024 * 1024;

function setting(name, fallback) {
  const raw = process.env[name];
  const value = raw === undefined || raw === "" ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, not ${raw}`);
  return value;
}

/** One GET read to its end: status and body. */
function get(url, timeoutMs) {
  return new Promise((resolve, reject) => {
    const req = request(url, { timeout: timeoutMs }, (res) => {
      const chunks = [];
      res.on("data", (chunk) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error(`no answer from ${url} within ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end();
  });
}

async function health(url, timeoutMs) {
  const answer = await get(`${url}/__admin/health`, timeoutMs);
  if (answer.status !== 200) throw new Error(`GET /__admin/health answered ${answer.status}`);
  return JSON.parse(answer.body);
}

/** load(), failing on any answer other than 200 or a socket error. */
async function send(job, what) {
  const result = await load(job, 20 * 60_000);
  const bad = Object.entries(result.statuses).filter(([code]) => code !== "200");
  if (bad.length > 0 || result.errors > 0 || result.timeouts > 0) {
    throw new Error(`${what}: answers other than 200 or socket errors: ${JSON.stringify(result)}`);
  }
  return result;
}

/**
 * Builds the state in `path`: records first (journal of one call), then a full journal. Returns what each phase
 * left: the file's bytes after a SIGTERM, and the sandbox's own counts.
 */
export async function build(path, args, timeoutMs) {
  const started = performance.now();
  const phase1 = await startPinned({ kind: "sandbox", args: [...args(path), "--journal-limit", "1"] });
  let afterRecords;
  let views = 0;
  try {
    const url = `${phase1.url}${STANDARD_PATH}`;
    let held = await health(phase1.url, timeoutMs);
    const before = held.store.records;
    while (held.store.records < RECORDS) {
      // Profiles differ in size: once some are made, only about as many as the records still missing.
      const perPatient = views > 0 ? (held.store.records - before) / views : 0;
      const batch =
        perPatient > 0 ? Math.min(BATCH, Math.ceil((RECORDS - held.store.records) / perPatient) + 5) : BATCH;
      const templates = Array.from({ length: batch }, (_, i) => viewProfileEnvelope(benchEmiratesId(views + i + 1)));
      await send(
        { url, templates, prefix: `build-view-${views}`, connections: CONNECTIONS, amount: batch },
        "the build's view-patient-profile messages",
      );
      views += batch;
      held = await health(phase1.url, timeoutMs);
    }
    afterRecords = held;
  } finally {
    await phase1.stop();
  }
  const recordsBytes = bytesOf(path);

  const phase2 = await startPinned({ kind: "sandbox", args: args(path) });
  let full;
  try {
    const back = await health(phase2.url, timeoutMs);
    if (back.store.records !== afterRecords.store.records) {
      throw new Error(`the restart holds ${back.store.records} records, not ${afterRecords.store.records}`);
    }
    // One patient's add-allergy messages: its records stay within --max-records-per-patient, so the records hardly
    // change while the journal fills (and the duplicate memory with it).
    const calls = back.journal.maxCalls + 2_000;
    await send(
      {
        url: `${phase2.url}${STANDARD_PATH}`,
        templates: [addAllergyEnvelope(benchEmiratesId(1))],
        prefix: "build-allergy",
        connections: CONNECTIONS,
        amount: calls,
      },
      "the build's add-allergy messages",
    );
    full = await health(phase2.url, timeoutMs);
    if (full.journal.calls !== full.journal.maxCalls) {
      throw new Error(`the journal holds ${full.journal.calls} calls, not ${full.journal.maxCalls}`);
    }
  } finally {
    await phase2.stop();
  }
  return {
    views,
    afterRecords,
    recordsBytes,
    full,
    fullBytes: bytesOf(path),
    walAfterStop: bytesOf(`${path}-wal`),
    seconds: (performance.now() - started) / 1000,
  };
}

/** One start: spawn → listening → health answered (checked by `check`) → one add-allergy message answered 200. */
async function oneStart(args, check, n, timeoutMs) {
  const began = performance.now();
  const server = await startPinned({ kind: "sandbox", args, timeoutMs: 60_000 });
  try {
    const listening = performance.now() - began;
    const held = await health(server.url, timeoutMs);
    const healthMs = performance.now() - began;
    check(held);
    const body = addAllergyEnvelope().replace(MESSAGE_ID, `state-start-${n}`);
    const answer = await post(undefined, `${server.url}${STANDARD_PATH}`, body, timeoutMs);
    if (answer.status !== 200)
      throw new Error(`the first message was answered ${answer.status}: ${answer.body.slice(0, 300)}`);
    return { listening, health: healthMs, message: performance.now() - began };
  } finally {
    await server.stop();
  }
}

export const stateStart = {
  id: "state-start",
  title: "--state-file: start-up with 100,000 stored records and a full journal, and the file's size",
  /** @param {{ timeoutMs: number }} settings */
  async run(settings) {
    const dir = mkdtempSync(join(tmpdir(), "uae-fhir-sandbox-bench-state-start-"));
    try {
      // The CLI's defaults (the shipped scenarios, watched), with room for every patient the build makes.
      const maxPatients = Math.ceil(RECORDS / 10);
      const common = ["--max-patients", String(maxPatients)];
      const withFile = (path) => [...common, "--state-file", path];

      // A file with only what a start puts in it (the shipped scenarios' fixtures).
      const emptyPath = join(dir, "empty.db");
      const fresh = await startPinned({ kind: "sandbox", args: withFile(emptyPath) });
      const fixtures = await health(fresh.url, settings.timeoutMs);
      await fresh.stop();
      const emptyBytes = bytesOf(emptyPath);

      const built = join(dir, "built.db");
      const b = await build(built, withFile, settings.timeoutMs);
      const kinds = rowsByKind(built);
      const trees = treesOf(built);
      const records = b.full.store.records;
      const addedRecords = b.afterRecords.store.records - fixtures.store.records;
      const perRecord = (b.recordsBytes - emptyBytes) / addedRecords;
      const calls = b.full.journal.calls;
      const perCall = (b.fullBytes - b.recordsBytes) / calls;

      const runs = { file: [], memory: [], empty: [] };
      const expectBack = (held) => {
        if (held.store.records !== records || held.journal.calls !== calls) {
          throw new Error(
            `the start holds ${held.store.records} records and ${held.journal.calls} calls, not ${records} and ${calls}`,
          );
        }
        if (held.stateFile?.status !== "ok")
          throw new Error(`the state file is failing: ${JSON.stringify(held.stateFile)}`);
      };
      const kindsOf = [
        // A copy of the built file per start (not timed), so that every start reads the same state.
        [
          "file",
          (i) => {
            const copy = join(dir, `start-${i}.db`);
            cpSync(built, copy);
            return { args: withFile(copy), check: expectBack, done: () => rmSync(copy, { force: true }) };
          },
        ],
        ["memory", () => ({ args: common, check: () => {}, done: () => {} })],
        [
          "empty",
          (i) => {
            const path = join(dir, `empty-${i}.db`);
            return { args: withFile(path), check: () => {}, done: () => rmSync(path, { force: true }) };
          },
        ],
      ];
      const loadAtStart = loadavg()[0];
      for (let i = 0; i < STARTS; i++) {
        for (const [label, make] of i % 2 === 0 ? kindsOf : [...kindsOf].reverse()) {
          const spec = make(i);
          try {
            runs[label].push(await oneStart(spec.args, spec.check, `${label}-${i}`, settings.timeoutMs));
          } finally {
            spec.done();
          }
        }
      }
      const loadAtEnd = loadavg()[0];
      const mid = (label, pick) => median(runs[label].map(pick));
      const each = (label, pick) => runs[label].map((r) => fmt(pick(r), 0)).join(", ");
      const fileMessage = mid("file", (r) => r.message);
      const fileHealth = mid("file", (r) => r.health);
      const row = (what, label, pick) => `| ${what} | ${fmt(mid(label, pick), 0)} | ${each(label, pick)} |`;
      const mib = (bytes) => fmt(bytes / MB, 1);
      const markdown = [
        `The state, built through the sandbox (${pinning()}; ${fmt(b.seconds, 0)} s): ${int(b.views)} ` +
          `view-patient-profile messages for new patients (each generates and stores a profile) with ` +
          `\`--journal-limit 1\`, until it held ${int(b.afterRecords.store.records)} records of ` +
          `${int(b.afterRecords.store.patients)} patients; then, restarted on the same file with the default journal, ` +
          `${int(b.full.journal.maxCalls + 2_000)} add-allergy messages for one patient. ` +
          `The sandbox is the CLI as shipped (\`serve\`, the shipped scenarios watched) with \`--max-patients ${maxPatients}\`, ` +
          "so that nothing is forgotten.",
        "",
        "| the file, after a SIGTERM (its write-ahead log checkpointed into it) | bytes | records | journaled calls |",
        "|---|---|---|---|",
        `| started and stopped: the shipped scenarios' fixtures only | ${int(emptyBytes)} | ${int(fixtures.store.records)} | ${int(fixtures.journal.calls)} |`,
        `| after the records (journal of one call) | ${int(b.recordsBytes)} (${mib(b.recordsBytes)} MiB) | ${int(b.afterRecords.store.records)} | ${int(b.afterRecords.journal.calls)} |`,
        `| after the journal filled | ${int(b.fullBytes)} (${mib(b.fullBytes)} MiB) | ${int(records)} | ${int(calls)} |`,
        "",
        `Per stored record: (${int(b.recordsBytes)} − ${int(emptyBytes)}) ÷ ${int(addedRecords)} records = ` +
          `**${int(perRecord)} bytes**, its patient's row included (${fmt(addedRecords / (b.afterRecords.store.patients - fixtures.store.patients), 1)} ` +
          `records a patient). Per journaled call: (${int(b.fullBytes)} − ${int(b.recordsBytes)}) ÷ ${int(calls)} calls = ` +
          `**${int(perCall)} bytes**, the duplicate memory's remembered answers included (the last 2,000 messages' ` +
          `answers, kept with their message), and ${int(records - b.afterRecords.store.records)} records more.`,
        "",
        "| kind (rows in the built file, read with node:sqlite) | rows | JSON bytes per row |",
        "|---|---|---|",
        ...kinds.map((k) => `| ${k.kind} | ${int(k.n)} | ${int(k.valueBytes / k.n)} |`),
        "",
        ...(trees
          ? [
              "| B-tree of the built file (SQLite's dbstat) | bytes |",
              "|---|---|",
              ...trees.trees.map((t) => `| ${t.name} | ${int(t.bytes)} |`),
              `| free pages | ${int(trees.freeBytes)} |`,
              "",
            ]
          : []),
        `${STARTS} starts of each, interleaved (every other round reversed), pinned as above: the CLI with the same ` +
          "flags on a copy of the built file (made before the clock starts, so the file is in the page cache, as for " +
          "a restart of the process), in memory (no --state-file), and on a new file. The clock runs from spawn to " +
          "the listening line on stdout, to the answer of GET /__admin/health (checked to hold every record and " +
          `call), then to the answer of an add-allergy message (200). Load average ${fmt(loadAtStart)} at the first ` +
          `start, ${fmt(loadAtEnd)} at the last.`,
        "",
        "| ratio | median |",
        "|---|---|",
        `| the built file / in memory, spawn → first message answered | ${fmt(fileMessage / mid("memory", (r) => r.message))} |`,
        `| a new file / in memory, spawn → first message answered | ${fmt(mid("empty", (r) => r.message) / mid("memory", (r) => r.message))} |`,
        "",
        "| what | median ms | each start, ms |",
        "|---|---|---|",
        row(
          `the built file (${int(records)} records, ${int(calls)} calls): spawn → listening`,
          "file",
          (r) => r.listening,
        ),
        row("the built file: spawn → health answered", "file", (r) => r.health),
        row("the built file: spawn → first message answered", "file", (r) => r.message),
        row("in memory: spawn → listening", "memory", (r) => r.listening),
        row("in memory: spawn → first message answered", "memory", (r) => r.message),
        row("a new file: spawn → first message answered", "empty", (r) => r.message),
      ].join("\n");
      return {
        markdown,
        summary: [
          {
            what: `start-up with --state-file holding ${int(records)} records and a full journal (${int(calls)} calls): spawn → first answer (health) and → first message answered (median of ${STARTS})`,
            value: `${fmt(fileHealth, 0)} ms, ${fmt(fileMessage, 0)} ms (in memory ${fmt(
              mid("memory", (r) => r.message),
              0,
            )} ms)`,
            target: `≤ ${TARGETS.startMs} ms`,
            met: records >= 100_000 ? fileMessage <= TARGETS.startMs : undefined,
          },
          {
            what: "state file bytes per stored record (its patient included) and per journaled call (add-allergy, the duplicate memory included)",
            value: `${int(perRecord)} and ${int(perCall)} bytes (${mib(b.fullBytes)} MiB for ${int(records)} records and ${int(calls)} calls)`,
          },
        ],
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
