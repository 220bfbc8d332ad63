// The load generator, run as its own process (pinned to the other core by
// pinned.mjs): autocannon, one fresh MessageHeader id per request (a reused
// id is a replay, not work), warm-up requests first and not counted.
// Reads its job as JSON from stdin; prints the result as one JSON line.
//
// job: { url, templates: string[] (bodies with __MESSAGE_ID__), prefix, connections,
//        warmup?: number, amount?: number, duration?: seconds, timeoutS?: number }
import autocannon from "autocannon";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const job = JSON.parse(input);
const MESSAGE_ID = "__MESSAGE_ID__";
let n = 0;
const nextBody = () => {
  const template = job.templates[n % job.templates.length];
  return template.replace(MESSAGE_ID, `${job.prefix}-${n++}`);
};

/** One autocannon run; latencies of every answer (any status) kept exactly, in ms. */
async function run(limit) {
  const latencies = [];
  const instance = autocannon({
    url: job.url,
    connections: job.connections,
    pipelining: 1,
    timeout: job.timeoutS ?? 10,
    ...limit,
    requests: [
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        setupRequest: (req) => ({ ...req, body: nextBody() }),
      },
    ],
  });
  const started = performance.now();
  let last = started;
  instance.on("response", (_client, _status, _bytes, ms) => {
    latencies.push(ms);
    last = performance.now();
  });
  const result = await instance;
  // autocannon ends (and measures) on whole-second ticks: time to the last answer instead.
  const seconds = (last - started) / 1000;
  return { result, seconds, latencies: Float64Array.from(latencies).sort() };
}

const at = (sorted, q) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];

if (job.warmup) await run({ amount: job.warmup });
const { result, seconds, latencies } = await run(job.amount ? { amount: job.amount } : { duration: job.duration });
const statuses = {};
for (const [code, { count }] of Object.entries(result.statusCodeStats ?? {})) statuses[code] = count;
console.log(
  JSON.stringify({
    requests: latencies.length,
    seconds,
    rps: latencies.length / seconds,
    p50: at(latencies, 0.5),
    p99: at(latencies, 0.99),
    max: latencies[latencies.length - 1] ?? 0,
    errors: result.errors,
    timeouts: result.timeouts,
    resets: result.resets ?? 0,
    statuses,
    bytesRead: result.throughput.total,
  }),
);
