// Pharmacy push receivers for the fan-out benchmark, in a worker thread of
// their own (so that receiving 1,000 pushes does not share a thread with the
// sandbox or with the client measuring inbound latency).
//
// workerData: { licences: string[], servers: number }. Starts `servers` HTTP
// servers on 127.0.0.1, each licence a distinct path on one of them
// (/pharmacy/{licence}/fhir-hook), and posts { type: "ready", endpoints:
// { licence: url } }. Then, per round: the parent posts { type: "expect",
// round, count }; the worker answers each push 200 at once and posts
// { type: "received", round, distinct, total, firstAt, lastAt, unknown } once
// `count` distinct licences got a push in that round (times are epoch ms:
// performance.timeOrigin + performance.now(), comparable across threads).
import { createServer } from "node:http";
import { parentPort, workerData } from "node:worker_threads";

const { licences, servers: serverCount } = workerData;
const PATH = /^\/pharmacy\/([^/]+)\/fhir-hook$/;
const known = new Set(licences);
const epochMs = () => performance.timeOrigin + performance.now();

let round = { id: 0, count: Number.POSITIVE_INFINITY, seen: new Set(), total: 0, unknown: 0, firstAt: 0, done: true };

function arrived(licence) {
  const now = epochMs();
  if (!known.has(licence)) {
    round.unknown++;
    return false;
  }
  round.total++;
  if (round.firstAt === 0) round.firstAt = now;
  round.seen.add(licence);
  if (!round.done && round.seen.size >= round.count) {
    round.done = true;
    parentPort.postMessage({
      type: "received",
      round: round.id,
      distinct: round.seen.size,
      total: round.total,
      unknown: round.unknown,
      firstAt: round.firstAt,
      lastAt: now,
    });
  }
  return true;
}

parentPort.on("message", (message) => {
  if (message.type === "expect") {
    round = { id: message.round, count: message.count, seen: new Set(), total: 0, unknown: 0, firstAt: 0, done: false };
  }
});

const urls = [];
for (let i = 0; i < serverCount; i++) {
  const server = createServer((req, res) => {
    const licence = PATH.exec(req.url ?? "")?.[1];
    req.resume(); // the body is not looked at; read it so the connection can be reused
    req.on("end", () => {
      const ok = req.method === "POST" && licence !== undefined && arrived(licence);
      res.writeHead(ok ? 200 : 404, { "content-type": "application/json" });
      res.end("{}");
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  urls.push(`http://127.0.0.1:${server.address().port}`);
}

const endpoints = Object.fromEntries(
  licences.map((licence, i) => [licence, `${urls[i % urls.length]}/pharmacy/${licence}/fhir-hook`]),
);
parentPort.postMessage({ type: "ready", endpoints });
