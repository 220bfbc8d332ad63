// Benchmark section (issue #5): fan-out of one order to 1,000 subscribed
// local pharmacy receivers. Time until all 1,000 deliveries are recorded, and
// the latency of the inbound API (view-patient-profile) during the fan-out
// against the latency without it.
//
// Three threads: the sandbox (server-worker.mjs), the receivers
// (receiver-worker.mjs: a few HTTP servers on 127.0.0.1, a distinct path per
// pharmacy) and this one, which subscribes the pharmacies, posts the orders
// and runs the latency probe.
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { Worker } from "node:worker_threads";
import { STANDARD_PATH } from "../../dist/routing/default-operations.js";
import { adminCall, drive, fmt, int, latencyStats, median, probe, startServer, within } from "./load.mjs";
import { PATIENTS, subscribeEnvelope, uniqueIds, viewProfileEnvelope } from "./messages.mjs";

const PHARMACIES = 1000;
const RECEIVER_SERVERS = 4;
const ROUNDS = 3;
/** The latency probe: this many keep-alive connections sending view-patient-profile back to back. */
const PROBE_CONNECTIONS = 2;
const BASELINE_REQUESTS = 400;
const FAN_OUT_TIMEOUT_MS = 120_000;

const licences = Array.from({ length: PHARMACIES }, (_, i) => `PH-BENCH-${String(i + 1).padStart(4, "0")}`);

/** The receivers' worker: resolves once listening, with each licence's endpoint and a way to await a round. */
async function startReceivers() {
  const worker = new Worker(new URL("./receiver-worker.mjs", import.meta.url), {
    workerData: { licences, servers: RECEIVER_SERVERS },
  });
  const failed = once(worker, "error").then(([error]) => {
    throw error;
  });
  failed.catch(() => undefined);
  const [ready] = await within(Promise.race([once(worker, "message"), failed]), 30_000, "receivers starting");
  return {
    endpoints: ready.endpoints,
    /** Starts counting a round; resolves when `count` distinct pharmacies got a push in it. */
    expect(round, count) {
      const received = new Promise((resolve) => {
        const onMessage = (m) => {
          if (m.type === "received" && m.round === round) {
            worker.off("message", onMessage);
            resolve(m);
          }
        };
        worker.on("message", onMessage);
      });
      worker.postMessage({ type: "expect", round, count });
      return Promise.race([received, failed]);
    },
    stop: () => worker.terminate(),
  };
}

const epochMs = () => performance.timeOrigin + performance.now();

export const fanOut = {
  id: "fan-out",
  title: "Fan-out: one order to 1,000 subscribed pharmacies",
  /** @param {{ timeoutMs: number }} settings */
  async run(settings) {
    const receivers = await startReceivers();
    try {
      // 1,000 pharmacies: ten times the default per-workspace limit (--max-pharmacies), raised for this section.
      const server = await startServer({ kind: "sandbox", scenarios: undefined, options: { maxPharmacies: 1000 } });
      try {
        return await measureFanOut(server, receivers, settings);
      } finally {
        await server.stop();
      }
    } finally {
      await receivers.stop();
    }
  },
};

async function measureFanOut(server, receivers, settings) {
  const base = server.url;
  const url = `${base}${STANDARD_PATH}`;
  const t = settings.timeoutMs;

  // 1,000 subscriptions through the message API, as pharmacies would subscribe.
  const subscribing = await drive({
    url,
    payload: (i) => subscribeEnvelope(licences[i], receivers.endpoints[licences[i]], randomUUID()),
    connections: 10,
    requests: PHARMACIES,
    timeoutMs: t,
  });
  const pharmacies = await adminCall(base, "GET", "/__admin/pharmacies", undefined, t);
  const active = pharmacies.body.pharmacies.filter((p) => p.active && licences.includes(p.licence)).length;
  if (active !== PHARMACIES) throw new Error(`${active} of ${PHARMACIES} pharmacies are subscribed`);

  const envelopes = PATIENTS.map(viewProfileEnvelope);
  const probeUrl = url;
  // Warm-up: the patients are generated on first use; JIT.
  await probe({
    url: probeUrl,
    payload: uniqueIds(envelopes, "fan-warmup"),
    connections: PROBE_CONNECTIONS,
    timeoutMs: t,
    stop: () => false,
    maxRequests: 200,
  });

  const rounds = [];
  for (let round = 1; round <= ROUNDS; round++) {
    // Without fan-out: a fixed number of probes on a quiet sandbox.
    const quiet = await probe({
      url: probeUrl,
      payload: uniqueIds(envelopes, `fan-quiet-${round}`),
      connections: PROBE_CONNECTIONS,
      timeoutMs: t,
      stop: () => false,
      maxRequests: BASELINE_REQUESTS,
    });
    // The journal holds only this round's calls, so the wait below checks ~1,000 calls, not 10,000.
    await adminCall(base, "DELETE", "/__admin/calls", undefined, t);
    const received = receivers.expect(round, PHARMACIES);

    let done = false;
    const probing = probe({
      url: probeUrl,
      payload: uniqueIds(envelopes, `fan-busy-${round}`),
      connections: PROBE_CONNECTIONS,
      timeoutMs: t,
      stop: () => done,
      maxRequests: 1_000_000,
    });
    let result;
    try {
      const t0 = performance.now();
      const t0Epoch = epochMs();
      const waiting = adminCall(
        base,
        "POST",
        "/__admin/calls/wait",
        {
          operation: "order-fulfillment-request",
          direction: "outbound",
          atLeast: PHARMACIES,
          timeoutMs: FAN_OUT_TIMEOUT_MS,
        },
        FAN_OUT_TIMEOUT_MS + 10_000,
      ).then((answer) => ({ answer, at: performance.now() }));
      const created = await adminCall(base, "POST", "/__admin/orders", undefined, t);
      const createdMs = performance.now() - t0;
      if (created.status !== 201)
        throw new Error(`POST /__admin/orders answered ${created.status}: ${JSON.stringify(created.body)}`);
      if (created.body.pharmacies.length !== PHARMACIES) {
        throw new Error(`the order went to ${created.body.pharmacies.length} pharmacies, not ${PHARMACIES}`);
      }
      const waited = await waiting;
      if (waited.answer.status !== 200 || !waited.answer.body.ok) {
        throw new Error(`calls/wait: ${waited.answer.status} ${JSON.stringify(waited.answer.body).slice(0, 500)}`);
      }
      const arrivals = await within(received, FAN_OUT_TIMEOUT_MS, "receivers getting every push");
      done = true;
      const samples = await probing;
      const during = samples.filter((s) => s.sentAt >= t0 && s.sentAt + s.ms <= waited.at).map((s) => s.ms);
      const view = await adminCall(base, "GET", `/__admin/orders/${created.body.id}`, undefined, t);
      const states = {};
      for (const p of view.body.pharmacies) states[p.state] = (states[p.state] ?? 0) + 1;
      const attempts = view.body.pharmacies.reduce((n, p) => n + p.delivery.attempts, 0);
      if ((states.delivered ?? 0) !== PHARMACIES) {
        throw new Error(`not every pharmacy got its push: ${JSON.stringify(states)}`);
      }
      const cancelled = await adminCall(base, "POST", `/__admin/orders/${created.body.id}/cancel`, undefined, t);
      if (cancelled.status !== 200) throw new Error(`cancelling the order answered ${cancelled.status}`);
      result = {
        createdMs,
        recordedMs: waited.at - t0,
        receivedMs: arrivals.lastAt - t0Epoch,
        firstMs: arrivals.firstAt - t0Epoch,
        arrivals,
        delivered: states.delivered ?? 0,
        states,
        attempts,
        quietMs: quiet.map((s) => s.ms),
        busyMs: during,
        quiet: latencyStats(quiet.map((s) => s.ms)),
        busy: latencyStats(during),
      };
    } finally {
      done = true;
      await probing.catch(() => undefined);
    }
    rounds.push(result);
  }
  return report(rounds, subscribing, server.info.pushConcurrency);
}

function report(rounds, subscribing, concurrency) {
  const mid = (pick) => median(rounds.map(pick));
  const recorded = mid((r) => r.recordedMs);
  const p50Ratio = mid((r) => r.busy.p50 / r.quiet.p50);
  const p99Ratio = mid((r) => r.busy.p99 / r.quiet.p99);
  const each = (pick, digits = 0) => rounds.map((r) => fmt(pick(r), digits)).join(", ");
  const markdown = [
    `${int(PHARMACIES)} pharmacies subscribed through subscribe-order-notifications messages (${fmt(subscribing.seconds, 1)} s, ` +
      `${int(subscribing.rps)}/s), each with its own endpoint: a distinct path on one of ${RECEIVER_SERVERS} HTTP servers ` +
      "on 127.0.0.1 in a worker thread of their own, answering 200 at once. The sandbox (createApp + startServer from " +
      `dist/, no scenarios, push concurrency ${concurrency} — the default — timeout 5 s, 3 attempts) runs in a second ` +
      `worker thread. ${ROUNDS} rounds, each: ${BASELINE_REQUESTS} view-patient-profile probes on the quiet sandbox, ` +
      "the journal cleared, then POST /__admin/orders (a generated order to every subscribed pharmacy) while " +
      "POST /__admin/calls/wait {operation: order-fulfillment-request, direction: outbound, atLeast: 1000} waits for " +
      `the deliveries and ${PROBE_CONNECTIONS} keep-alive connections send view-patient-profile back to back; ` +
      "latency during the fan-out counts the probes sent and answered between the order's POST and the wait's answer. " +
      "Then the order is cancelled. Medians of the rounds shown.",
    "",
    "| ratio | median of rounds | each round |",
    "|---|---|---|",
    `| inbound p50 latency, during fan-out / without | ${fmt(p50Ratio)} | ${each((r) => r.busy.p50 / r.quiet.p50, 2)} |`,
    `| inbound p99 latency, during fan-out / without | ${fmt(p99Ratio)} | ${each((r) => r.busy.p99 / r.quiet.p99, 2)} |`,
    "",
    "| fan-out of one order to 1,000 pharmacies | median | each round |",
    "|---|---|---|",
    `| POST /__admin/orders answered (201), ms | ${fmt(
      mid((r) => r.createdMs),
      0,
    )} | ${each((r) => r.createdMs)} |`,
    `| first push reached a receiver, ms after the POST | ${fmt(
      mid((r) => r.firstMs),
      0,
    )} | ${each((r) => r.firstMs)} |`,
    `| all 1,000 pushes reached the receivers, ms | ${fmt(
      mid((r) => r.receivedMs),
      0,
    )} | ${each((r) => r.receivedMs)} |`,
    `| all 1,000 deliveries recorded (calls/wait answered), ms | ${fmt(recorded, 0)} | ${each((r) => r.recordedMs)} |`,
    `| deliveries per second (1,000 / recorded time) | ${int(1000 / (recorded / 1000))} | ${each((r) => 1_000_000 / r.recordedMs)} |`,
    `| pharmacies delivered (order view) / attempts | ${rounds.map((r) => `${r.delivered} / ${r.attempts}`).join(", ")} | |`,
    "",
    "| inbound view-patient-profile latency | probes | p50 ms | p99 ms | max ms |",
    "|---|---|---|---|---|",
    ...[
      ["all rounds pooled, without fan-out", latencyStats(rounds.flatMap((r) => r.quietMs))],
      ["all rounds pooled, during fan-out", latencyStats(rounds.flatMap((r) => r.busyMs))],
    ].map(([what, l]) => `| ${what} | ${int(l.n)} | ${fmt(l.p50)} | ${fmt(l.p99)} | ${fmt(l.max)} |`),
    ...rounds.flatMap((r, i) => [
      `| round ${i + 1}, without fan-out | ${int(r.quiet.n)} | ${fmt(r.quiet.p50)} | ${fmt(r.quiet.p99)} | ${fmt(r.quiet.max)} |`,
      `| round ${i + 1}, during fan-out | ${int(r.busy.n)} | ${fmt(r.busy.p50)} | ${fmt(r.busy.p99)} | ${fmt(r.busy.max)} |`,
    ]),
  ].join("\n");
  return {
    markdown,
    summary: [
      {
        what: `fan-out of one order to 1,000 local receivers (push concurrency ${concurrency}), all deliveries recorded`,
        value: `${fmt(recorded, 0)} ms (${int(1000 / (recorded / 1000))} deliveries/s)`,
      },
      {
        what: "inbound p99 latency while one order fans out to 1,000 pharmacies / without (view-patient-profile)",
        value: `${fmt(p99Ratio)}× (p50 ${fmt(p50Ratio)}×)`,
        target: "≤ 2×",
        met: p99Ratio <= 2,
      },
    ],
  };
}
