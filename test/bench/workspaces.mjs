// Benchmark section: what a workspace costs (issue 14). In-process, the time
// to make one (Workspaces.use on a new name: its journal, store, rules,
// orders, pipeline, and the shipped scenarios' fixtures loaded). Then the CLI
// (pinned, --expose-gc and memory-probe.mjs preloaded, as the memory section
// runs it): heap after full GCs and RSS at start, after 1,000 empty
// workspaces, after a little traffic in each (10 messages), and after deleting
// them all. Last, workspaces filled to their limits under the limits
// docs/shared-sandbox.md suggests for a shared sandbox, measured on 10 and
// extrapolated to 1,000, and the sandbox's own estimate beside each figure.
import { Agent } from "node:http";
import { fileURLToPath } from "node:url";
import { createApp } from "../../dist/app.js";
import { STANDARD_PATH } from "../../dist/routing/default-operations.js";
import { adminCall, fmt, int, percentile, post } from "./load.mjs";
import { afterGc } from "./memory.mjs";
import { addAllergyEnvelope, benchEmiratesId, MESSAGE_ID, viewProfileEnvelope } from "./messages.mjs";
import { load, pinning, rssOf, startPinned } from "./pinned.mjs";

const PROBE = fileURLToPath(new URL("./memory-probe.mjs", import.meta.url));
const MB = 1024 * 1024;
const KB = 1024;
const WORKSPACES = 1000;
/** A little traffic per workspace: add-allergy and view-patient-profile, five each, over two patients. */
const LIGHT_MESSAGES = 10;
/** The shared-sandbox limits of docs/shared-sandbox.md, per workspace. */
const SHARED_LIMITS = ["--journal-limit", "1000", "--journal-max-bytes", "8mb", "--max-patients", "100"];
const FULL_WORKSPACES = 10;
const FULL_PATIENTS = 100;
/** add-allergy per patient: past the 50 records a patient keeps (its generated profile counts too). */
const ALLERGIES_PER_PATIENT = 45;
/** view-patient-profile answers are large: 1,000 of them fill the journal's byte budget. */
const FULL_VIEWS = 1000;
const CONCURRENCY = 16;

/** Heap after GC and RSS of the server now. */
async function measure(server, timeoutMs) {
  const gc = await afterGc(server.child, timeoutMs);
  return { heap: gc.heapUsed, rss: rssOf(server.pid).rss };
}

/** Sends `requests` ({ method, url, body? }) through CONCURRENCY keep-alive loops; any answer but `ok` fails. */
async function send(requests, timeoutMs, ok = (status) => status === 200) {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < requests.length) {
          const r = requests[next++];
          const answer =
            r.method === "POST"
              ? await post(agent, r.url, r.body, timeoutMs)
              : await fetch(r.url, { method: r.method, signal: AbortSignal.timeout(timeoutMs) }).then(async (res) => ({
                  status: res.status,
                  body: await res.text(),
                }));
          if (!ok(answer.status))
            throw new Error(`${r.method} ${r.url} answered ${answer.status}: ${answer.body.slice(0, 300)}`);
        }
      }),
    );
  } finally {
    agent.destroy();
  }
}

const name = (i) => `bench-${String(i).padStart(4, "0")}`;

/** Making workspaces in this process: microseconds per Workspaces.use of a new name, with the shipped scenarios. */
function creationTimes() {
  const app = createApp(
    { scenarios: "scenarios", maxWorkspaces: WORKSPACES + 1 },
    { logger: { info: () => undefined, error: () => undefined } },
  );
  try {
    // Warm the code paths first (JIT), on names measured apart.
    for (let i = 0; i < 50; i++) app.workspaces.use(`warm-${i}`, "bench");
    for (let i = 0; i < 50; i++) app.workspaces.delete(`warm-${i}`);
    const times = [];
    for (let i = 0; i < WORKSPACES - 1; i++) {
      const started = performance.now();
      const found = app.workspaces.use(name(i), "bench");
      times.push((performance.now() - started) * 1000);
      if (!found.ok) throw new Error(`workspace ${name(i)} was refused: ${JSON.stringify(found.refusal)}`);
    }
    const sorted = Float64Array.from(times).sort();
    return {
      mean: times.reduce((a, b) => a + b, 0) / times.length,
      p50: percentile(sorted, 0.5),
      p99: percentile(sorted, 0.99),
    };
  } finally {
    app.close();
  }
}

/** The sum of the sandbox's own estimates over its workspaces (GET /__admin/workspaces). */
async function estimated(base, timeoutMs) {
  const listed = await adminCall(base, "GET", "/__admin/workspaces", undefined, timeoutMs);
  if (listed.status !== 200) throw new Error(`GET /__admin/workspaces answered ${listed.status}`);
  return listed.body;
}

/** 1,000 workspaces on the default CLI: empty, then a little traffic each, then deleted. */
async function manyWorkspaces(timeoutMs) {
  const server = await startPinned({
    kind: "sandbox",
    args: ["--no-watch", "--quiet", "--max-workspaces", String(WORKSPACES + 1)],
    nodeOptions: ["--expose-gc", "--import", PROBE],
    ipc: true,
  });
  try {
    const base = server.url;
    const start = await measure(server, timeoutMs);
    const startEstimate = (await estimated(base, timeoutMs)).memoryEstimateBytes;
    const names = Array.from({ length: WORKSPACES }, (_, i) => name(i));
    // An admin read makes a workspace and records nothing in it.
    await send(
      names.map((n) => ({ method: "GET", url: `${base}/w/${n}/__admin/calls` })),
      timeoutMs,
    );
    const empty = await measure(server, timeoutMs);
    const emptyEstimate = (await estimated(base, timeoutMs)).memoryEstimateBytes;

    const allergy = [addAllergyEnvelope(benchEmiratesId(1)), addAllergyEnvelope(benchEmiratesId(2))];
    const view = [viewProfileEnvelope(benchEmiratesId(1)), viewProfileEnvelope(benchEmiratesId(2))];
    const messages = names.flatMap((n) =>
      Array.from({ length: LIGHT_MESSAGES }, (_, k) => ({
        method: "POST",
        url: `${base}/w/${n}${STANDARD_PATH}`,
        body: (k % 2 === 0 ? allergy : view)[Math.floor(k / 2) % 2].replace(MESSAGE_ID, `${n}-${k}`),
      })),
    );
    const began = performance.now();
    await send(messages, timeoutMs);
    const seconds = (performance.now() - began) / 1000;
    const light = await measure(server, timeoutMs);
    const listed = await estimated(base, timeoutMs);
    const bodies = listed.workspaces.reduce((sum, w) => sum + w.journalBytes, 0);

    await send(
      names.map((n) => ({ method: "DELETE", url: `${base}/__admin/workspaces/${n}` })),
      timeoutMs,
    );
    const deleted = await measure(server, timeoutMs);
    return {
      start,
      empty,
      light,
      deleted,
      peak: rssOf(server.pid).peak,
      messages: messages.length,
      rps: messages.length / seconds,
      bodies,
      estimate: { start: startEstimate, empty: emptyEstimate, light: listed.memoryEstimateBytes },
    };
  } finally {
    await server.stop();
  }
}

/** FULL_WORKSPACES workspaces filled to the shared-sandbox limits. */
async function fullWorkspaces(timeoutMs) {
  const server = await startPinned({
    kind: "sandbox",
    args: ["--no-watch", "--quiet", ...SHARED_LIMITS],
    nodeOptions: ["--expose-gc", "--import", PROBE],
    ipc: true,
  });
  try {
    const base = server.url;
    const names = Array.from({ length: FULL_WORKSPACES }, (_, i) => `full-${i}`);
    await send(
      names.map((n) => ({ method: "GET", url: `${base}/w/${n}/__admin/calls` })),
      timeoutMs,
    );
    const before = await measure(server, timeoutMs);
    const beforeEstimate = (await estimated(base, timeoutMs)).memoryEstimateBytes;
    const patients = Array.from({ length: FULL_PATIENTS }, (_, i) => benchEmiratesId(5000 + i));
    let sent = 0;
    const began = performance.now();
    for (const n of names) {
      const url = `${base}/w/${n}${STANDARD_PATH}`;
      // Records: every patient past its 50; then views, whose large answers fill the journal's byte budget.
      const records = await load(
        {
          url,
          templates: patients.map((p) => addAllergyEnvelope(p)),
          prefix: `${n}-a`,
          connections: CONCURRENCY,
          amount: FULL_PATIENTS * ALLERGIES_PER_PATIENT,
          timeoutS: 10,
        },
        10 * 60_000,
      );
      const views = await load(
        {
          url,
          templates: patients.map((p) => viewProfileEnvelope(p)),
          prefix: `${n}-v`,
          connections: CONCURRENCY,
          amount: FULL_VIEWS,
          timeoutS: 10,
        },
        10 * 60_000,
      );
      for (const run of [records, views]) {
        const bad = Object.entries(run.statuses).filter(([code]) => code !== "200");
        if (bad.length > 0 || run.errors > 0) throw new Error(`filling ${n}: ${JSON.stringify(run)}`);
      }
      sent += records.requests + views.requests;
    }
    const seconds = (performance.now() - began) / 1000;
    const after = await measure(server, timeoutMs);
    const listed = await estimated(base, timeoutMs);
    const sample = listed.workspaces.find((w) => w.id === names[0]);
    const health = await adminCall(base, "GET", `/w/${names[0]}/__admin/health`, undefined, timeoutMs);
    return {
      before,
      after,
      peak: rssOf(server.pid).peak,
      sent,
      rps: sent / seconds,
      sample,
      store: health.body.store,
      journal: health.body.journal,
      estimate: { before: beforeEstimate, after: listed.memoryEstimateBytes },
    };
  } finally {
    await server.stop();
  }
}

export const workspaces = {
  id: "workspaces",
  title: "Workspaces: the cost of one, 1,000 with a little traffic, and workspaces at their limits",
  /** @param {{ timeoutMs: number }} settings */
  async run(settings) {
    const made = creationTimes();
    const many = await manyWorkspaces(settings.timeoutMs);
    const full = await fullWorkspaces(settings.timeoutMs);

    const mib = (bytes) => fmt(bytes / MB, 1);
    const kib = (bytes) => int(bytes / KB);
    const perEmpty = (many.empty.heap - many.start.heap) / WORKSPACES;
    const perLight = (many.light.heap - many.start.heap) / WORKSPACES;
    const perFull = (full.after.heap - full.before.heap) / FULL_WORKSPACES;
    const estimatedPerEmpty = (many.estimate.empty - many.estimate.start) / WORKSPACES;
    const estimatedPerLight = (many.estimate.light - many.estimate.start) / WORKSPACES;
    const estimatedPerFull = (full.estimate.after - full.estimate.before) / FULL_WORKSPACES;
    const rssPerFull = (full.after.rss - full.before.rss) / FULL_WORKSPACES;
    const markdown = [
      `**Making a workspace**, in-process (\`Workspaces.use\` of a new name, the shipped scenarios' fixtures loaded ` +
        `into it), ${int(WORKSPACES - 1)} in a row after a warm-up: mean ${fmt(made.mean, 0)} µs, p50 ` +
        `${fmt(made.p50, 0)} µs, p99 ${fmt(made.p99, 0)} µs.`,
      "",
      `**${int(WORKSPACES)} workspaces** on the CLI with default settings (\`--max-workspaces ${WORKSPACES + 1}\`, ` +
        `the shipped scenarios), ${pinning()}: each made by an admin read (\`GET /w/{name}/__admin/calls\`, which ` +
        `records nothing), then ${LIGHT_MESSAGES} messages in each (add-allergy and view-patient-profile, five each, ` +
        `two patients; ${int(many.messages)} in all at ${int(many.rps)} messages/s through ${CONCURRENCY} connections), ` +
        "then every one deleted (`DELETE /__admin/workspaces/{name}`). Heap after full GCs (--expose-gc), RSS from /proc; " +
        "the estimate is the sum of `memoryEstimateBytes` of `GET /__admin/workspaces`.",
      "",
      "| | heap after GC MiB | RSS MiB | per workspace (heap) | the sandbox's estimate per workspace |",
      "|---|---|---|---|---|",
      `| start (the default workspace) | ${mib(many.start.heap)} | ${mib(many.start.rss)} | – | – |`,
      `| ${int(WORKSPACES)} empty workspaces | ${mib(many.empty.heap)} | ${mib(many.empty.rss)} | ${kib(perEmpty)} KiB | ${kib(estimatedPerEmpty)} KiB |`,
      `| after ${LIGHT_MESSAGES} messages in each | ${mib(many.light.heap)} | ${mib(many.light.rss)} | ${kib(perLight)} KiB | ${kib(estimatedPerLight)} KiB |`,
      `| all ${int(WORKSPACES)} deleted | ${mib(many.deleted.heap)} | ${mib(many.deleted.rss)} | – | – |`,
      "",
      `Peak RSS (VmHWM) ${mib(many.peak)} MiB; journal bodies held after the traffic: ${mib(many.bodies)} MiB in all.`,
      "",
      `**Workspaces at their limits** under the shared-sandbox limits of docs/shared-sandbox.md ` +
        `(\`${SHARED_LIMITS.join(" ")}\`; 50 records per patient, the default): ${FULL_WORKSPACES} workspaces, each ` +
        `sent ${int(FULL_PATIENTS * ALLERGIES_PER_PATIENT)} add-allergy over ${FULL_PATIENTS} patients (every patient ` +
        `past its 50 records) then ${int(FULL_VIEWS)} view-patient-profile (large answers: the journal's byte budget ` +
        `fills); ${int(full.sent)} messages at ${int(full.rps)} messages/s. One of them then held: journal ` +
        `${int(full.journal.calls)} calls, ${mib(full.journal.bodyBytes)} MiB of bodies; store ` +
        `${int(full.store.patients)} patients (${full.store.pinnedPatients} pinned), ${int(full.store.records)} records.`,
      "",
      "| | heap after GC MiB | RSS MiB |",
      "|---|---|---|",
      `| ${FULL_WORKSPACES} workspaces, empty | ${mib(full.before.heap)} | ${mib(full.before.rss)} |`,
      `| ${FULL_WORKSPACES} workspaces at their limits | ${mib(full.after.heap)} | ${mib(full.after.rss)} |`,
      "",
      `Per workspace at its limits: ${mib(perFull)} MiB of heap (RSS ${mib(rssPerFull)} MiB); the sandbox's estimate ` +
        `${mib(estimatedPerFull)} MiB. Extrapolated (measured on ${FULL_WORKSPACES}, multiplied): 100 such ` +
        `workspaces ${fmt((perFull * 100) / 2 ** 30, 2)} GiB of heap, 1,000 ${fmt((perFull * 1000) / 2 ** 30, 1)} GiB.`,
    ].join("\n");
    return {
      markdown,
      summary: [
        { what: "making a workspace (in-process, shipped scenarios)", value: `${fmt(made.mean, 0)} µs mean` },
        { what: "heap per empty workspace", value: `${kib(perEmpty)} KiB` },
        {
          what: `${int(WORKSPACES)} workspaces with ${LIGHT_MESSAGES} messages each: heap after GC, RSS`,
          value: `${mib(many.light.heap)} MiB, ${mib(many.light.rss)} MiB (peak ${mib(many.peak)} MiB)`,
          target: "fit the documented memory (docs/shared-sandbox.md: 512 MiB)",
          met: many.peak < 512 * MB,
        },
        { what: "heap per workspace at the shared-sandbox limits", value: `${mib(perFull)} MiB` },
      ],
    };
  },
};
