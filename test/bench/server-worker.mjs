// A benchmark server, run in a worker thread by load.mjs's startServer.
// workerData.kind says which one; it posts { url, info } once listening on
// 127.0.0.1 and serves until the worker is terminated.
import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { parentPort, workerData } from "node:worker_threads";
import { createAdaptorServer } from "@hono/node-server";
import { Hono } from "hono";
import { createApp, startServer } from "../../dist/index.js";

const SILENT = { info: () => undefined, error: () => undefined };

// A full GC on demand, to measure what stays on the heap (not what is garbage).
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc");
const retainedHeap = () => {
  gc();
  return getHeapStatistics().used_heap_size;
};

/**
 * Keeps about `mb` MiB of small objects alive for the server's lifetime: a
 * control for the benchmark, a heap as large as many rules make it, without
 * the rules.
 */
function ballast(mb) {
  const kept = [];
  const target = retainedHeap() + mb * 1024 * 1024;
  while (retainedHeap() < target) {
    for (let i = 0; i < 50_000; i++) {
      const n = kept.length;
      kept.push({ name: `ballast-${n}`, list: [n, String(n)], test: () => n > 0 });
    }
  }
  return kept;
}

const KINDS = {
  /**
   * The floor: Hono on the same Node adapter, reading the body and answering
   * a canned FHIR JSON of about the size the sandbox sends. What is left
   * above it is the sandbox's own work.
   */
  "bare-hono": async ({ path, cannedBody }) => {
    const app = new Hono();
    app.post(path, async (c) => {
      await c.req.text();
      return c.body(cannedBody, 200, { "content-type": "application/fhir+json; charset=utf-8" });
    });
    const server = createAdaptorServer({ fetch: app.fetch });
    await new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", resolve);
    });
    return { url: `http://127.0.0.1:${server.address().port}`, info: { cannedBytes: Buffer.byteLength(cannedBody) } };
  },

  /**
   * The sandbox as the CLI serves it, with a scenarios folder (or file, or
   * none) and no file watching; `options` are more createApp options (e.g.
   * journalFile); `ballastMB` keeps that much unrelated heap alive beside it.
   */
  sandbox: async ({ scenarios, options = {}, ballastMB = 0 }) => {
    const before = retainedHeap();
    const started = performance.now();
    const sandbox = createApp({ ...options, scenarios, watch: false }, { logger: SILENT });
    const createMs = performance.now() - started;
    const heapMB = (retainedHeap() - before) / (1024 * 1024);
    globalThis.benchBallast = ballast(ballastMB);
    // startServer tells the sandbox its URL, as the CLI's: pushes name the listening URL as their source.
    const running = await startServer(sandbox, { port: 0, host: "127.0.0.1" });
    return {
      url: running.url,
      info: {
        rules: sandbox.scenarios.view().rules.length,
        createMs,
        heapMB,
        ballastMB,
        pushConcurrency: sandbox.options.pushConcurrency,
        journalLimit: sandbox.options.journalLimit,
      },
    };
  },
};

const start = KINDS[workerData.kind];
if (!start) throw new Error(`unknown benchmark server kind ${workerData.kind}`);
parentPort.postMessage(await start(workerData));
