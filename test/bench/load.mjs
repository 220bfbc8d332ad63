// The benchmarks' tools: a small HTTP load generator (keep-alive agent, N
// concurrent loops, a fixed request count) and servers run in a worker
// thread, so that the server's event loop does not share a thread with the
// load it is measured under.

import { once } from "node:events";
import { Agent, request } from "node:http";
import { Worker } from "node:worker_threads";

const SERVER_WORKER = new URL("./server-worker.mjs", import.meta.url);

/**
 * Starts a benchmark server in a worker thread (see server-worker.mjs for the
 * kinds). Resolves with its URL and what it reports about itself.
 *
 * @param {{ kind: string, [key: string]: unknown }} spec
 * @param {number} timeoutMs
 * @returns {Promise<{ url: string, info: Record<string, unknown>, stop(): Promise<void> }>}
 */
export async function startServer(spec, timeoutMs = 30_000) {
  const worker = new Worker(SERVER_WORKER, { workerData: spec });
  const ready = once(worker, "message", { signal: AbortSignal.timeout(timeoutMs) }).catch((error) => {
    worker.terminate();
    throw new Error(`the ${spec.kind} server did not start within ${timeoutMs} ms`, { cause: error });
  });
  const failed = once(worker, "error").then(([error]) => {
    throw error;
  });
  const [message] = await Promise.race([ready, failed]);
  return {
    url: message.url,
    info: message.info,
    stop: async () => {
      await worker.terminate();
    },
  };
}

/**
 * Sends one POST and resolves with the status and body once the answer has
 * been read; rejects on a network error or after `timeoutMs` of silence.
 */
export function post(agent, url, payload, timeoutMs) {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: "POST",
        agent,
        timeout: timeoutMs,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload) },
      },
      (res) => {
        const chunks = [];
        res.on("data", (chunk) => chunks.push(chunk));
        res.on("end", () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`no answer from ${url} within ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end(payload);
  });
}

/**
 * Drives `requests` POSTs through `connections` keep-alive connections, each
 * connection a loop that sends the next request as soon as its previous
 * answer is read. `payload(i)` gives the body of request i. Any answer other
 * than `expectStatus`, or any network error, fails the run.
 *
 * @returns {Promise<{ requests: number, seconds: number, rps: number, p50: number, p99: number, max: number }>}
 */
export async function drive({ url, payload, connections, requests, timeoutMs, expectStatus = 200 }) {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const latencies = new Float64Array(requests);
  let next = 0;
  const started = performance.now();
  try {
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (next < requests) {
          const i = next++;
          const sent = performance.now();
          const answer = await post(agent, url, payload(i), timeoutMs);
          latencies[i] = performance.now() - sent;
          if (answer.status !== expectStatus) {
            throw new Error(
              `request ${i} to ${url} got ${answer.status}, expected ${expectStatus}: ${answer.body.slice(0, 300)}`,
            );
          }
        }
      }),
    );
  } finally {
    agent.destroy();
  }
  const seconds = (performance.now() - started) / 1000;
  latencies.sort();
  return {
    requests,
    seconds,
    rps: requests / seconds,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    max: latencies[latencies.length - 1] ?? 0,
  };
}

/** The value below which a fraction `q` of the sorted samples lie (nearest rank). */
export function percentile(sorted, q) {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

/** The median of numbers. */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * Sends `payload(i)` POSTs through `connections` keep-alive loops until
 * `stop()` is true or `maxRequests` were sent — for latency probes running
 * beside something else. Resolves with each answer's send time
 * (performance.now()) and latency in ms; any answer but 200 fails it.
 *
 * @returns {Promise<Array<{ sentAt: number, ms: number }>>}
 */
export async function probe({ url, payload, connections, timeoutMs, stop, maxRequests }) {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const samples = [];
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (!stop() && next < maxRequests) {
          const i = next++;
          const sentAt = performance.now();
          const answer = await post(agent, url, payload(i), timeoutMs);
          const ms = performance.now() - sentAt;
          if (answer.status !== 200) {
            throw new Error(`probe ${i} to ${url} got ${answer.status}: ${answer.body.slice(0, 300)}`);
          }
          samples.push({ sentAt, ms });
        }
      }),
    );
  } finally {
    agent.destroy();
  }
  return samples;
}

/** p50, p99 and max of latencies in ms (any order). */
export function latencyStats(values) {
  const sorted = Float64Array.from(values).sort();
  return {
    n: sorted.length,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    max: sorted[sorted.length - 1] ?? 0,
  };
}

/**
 * One admin API call (JSON in, JSON out) with a timeout.
 *
 * @returns {Promise<{ status: number, body: any }>}
 */
export async function adminCall(baseUrl, method, path, body, timeoutMs) {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  return { status: res.status, body: text === "" ? null : JSON.parse(text) };
}

/** Rejects with `what` if `promise` has not settled within `ms`. */
export function within(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Formatting for the tables: a number with `digits` decimals, an integer with thousands separators. */
export const fmt = (n, digits = 2) => n.toFixed(digits);
export const int = (n) => Math.round(n).toLocaleString("en-US");
