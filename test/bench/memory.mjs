// Benchmark section: resident memory of the sandbox CLI after 100,000
// recorded calls with the default journal limit (10,000). The server is a
// child process (`node dist/cli/main.js serve`, shipped scenarios), forked
// with --expose-gc and a preloaded probe (memory-probe.mjs) that reports
// process.memoryUsage() after a full GC over the IPC channel.
import { fork } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { STANDARD_PATH } from "../../dist/routing/default-operations.js";
import { listeningUrl, stopChild } from "./cold-start.mjs";
import { adminCall, drive, fmt, int, post, within } from "./load.mjs";
import { PATIENTS, uniqueIds, viewProfileEnvelope } from "./messages.mjs";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const PROBE = new URL("./memory-probe.mjs", import.meta.url).href;
const CONNECTIONS = 10;
/** Target from the issue (#6): documented, not asserted. */
const TARGET_MB = 300;
const MB = 1024 * 1024;

function calls() {
  const raw = process.env.BENCH_MEMORY_CALLS;
  const n = raw === undefined || raw === "" ? 100_000 : Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`BENCH_MEMORY_CALLS must be a positive integer, not ${raw}`);
  return n;
}

/** Asks the child for its memory after a full GC. */
async function measure(child, timeoutMs) {
  const answer = once(child, "message");
  child.send({ type: "measure" });
  const [memory] = await within(answer, timeoutMs, "memory report from the sandbox");
  if (!memory.gc) throw new Error("the sandbox child has no gc(): --expose-gc was not applied");
  return memory;
}

/** Peak resident set (VmHWM) of a process, from /proc; undefined where there is no /proc. */
function peakRss(pid) {
  try {
    const kb = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kb === undefined ? undefined : Number(kb) * 1024;
  } catch {
    return undefined;
  }
}

export const memory = {
  id: "memory",
  title: "Memory: resident set after 100,000 recorded calls",
  /** @param {{ timeoutMs: number }} settings */
  async run(settings) {
    const total = calls();
    const checkpoints = [...new Set([Math.min(10_000, total), Math.min(50_000, total), total])];
    const child = fork(
      fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url)),
      ["serve", "--port", "0", "--host", "127.0.0.1"],
      {
        cwd: ROOT,
        execArgv: ["--expose-gc", "--import", PROBE],
        stdio: ["ignore", "pipe", "pipe", "ipc"],
      },
    );
    try {
      const base = await listeningUrl(child, 20_000);
      const url = `${base}${STANDARD_PATH}`;
      const envelopes = PATIENTS.map(viewProfileEnvelope);
      const sample = await post(undefined, url, uniqueIds(envelopes, "mem-check")(0), settings.timeoutMs);
      if (sample.status !== 200 || !sample.body.includes('"code":"ok"')) {
        throw new Error(
          `expected a 200 ok view-patient-profile answer, got ${sample.status}: ${sample.body.slice(0, 300)}`,
        );
      }
      await adminCall(base, "DELETE", "/__admin/calls", undefined, settings.timeoutMs);
      const rows = [{ calls: 0, journal: 0, seconds: 0, memory: await measure(child, settings.timeoutMs) }];
      let sent = 0;
      for (const checkpoint of checkpoints) {
        const run = await drive({
          url,
          payload: uniqueIds(envelopes, `mem-${sent}`),
          connections: CONNECTIONS,
          requests: checkpoint - sent,
          timeoutMs: settings.timeoutMs,
        });
        sent = checkpoint;
        const health = await adminCall(base, "GET", "/__admin/health", undefined, settings.timeoutMs);
        rows.push({
          calls: sent,
          journal: health.body.calls,
          seconds: run.seconds,
          rps: run.rps,
          memory: await measure(child, settings.timeoutMs),
        });
      }
      const peak = peakRss(child.pid);
      const start = rows[0].memory;
      const end = rows[rows.length - 1].memory;
      const full = rows.find((r) => r.calls === checkpoints[0]).memory;
      const mb = (bytes) => fmt(bytes / MB, 0);
      const markdown = [
        `The CLI as shipped (\`node dist/cli/main.js serve --port 0 --host 127.0.0.1\`, scenarios/ loaded, default ` +
          `--journal-limit 10,000), sent ${int(total)} view-patient-profile messages (${int(Buffer.byteLength(envelopes[0]))} ` +
          `bytes each, a unique MessageHeader id each, cycling over ${PATIENTS.length} fixture patients; each answer ` +
          `${int(Buffer.byteLength(sample.body))} bytes) through ${CONNECTIONS} keep-alive connections. Memory is read ` +
          "inside the server process after three full GCs (--expose-gc); RSS is what the OS holds for the process.",
        "",
        "| ratio | value |",
        "|---|---|",
        `| RSS after ${int(total)} calls / RSS at start | ${fmt(end.rss / start.rss)} |`,
        `| RSS after ${int(total)} calls / RSS with the journal first full (${int(checkpoints[0])} calls) | ${fmt(end.rss / full.rss)} |`,
        "",
        "| recorded calls sent | calls in the journal | RSS MiB | heap used MiB | external + array buffers MiB | requests/s of the segment |",
        "|---|---|---|---|---|---|",
        ...rows.map(
          (r) =>
            `| ${int(r.calls)} | ${int(r.journal)} | ${mb(r.memory.rss)} | ${mb(r.memory.heapUsed)} | ` +
            `${mb(r.memory.external + r.memory.arrayBuffers)} | ${r.rps === undefined ? "–" : int(r.rps)} |`,
        ),
        "",
        peak === undefined
          ? "Peak RSS: not available (no /proc)."
          : `Peak RSS during the run (VmHWM, before GC): ${mb(peak)} MiB. Sending the ${int(total)} messages took ` +
            `${fmt(
              rows.reduce((s, r) => s + r.seconds, 0),
              0,
            )} s.`,
      ].join("\n");
      return {
        markdown,
        summary: [
          {
            what: `RSS after ${int(total)} recorded calls (journal limit 10,000), after GC`,
            value: `${mb(end.rss)} MiB (${fmt(end.rss / start.rss, 1)}× at start; peak ${peak === undefined ? "n/a" : `${mb(peak)} MiB`})`,
            target: `< ${TARGET_MB} MB`,
            met: end.rss < TARGET_MB * 1e6,
          },
        ],
      };
    } finally {
      await stopChild(child);
    }
  },
};
