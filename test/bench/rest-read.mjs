// Benchmark section: what a REST read costs the event loop with a full journal (10,000 add-allergy calls, the
// default --journal-limit), in-process: an id nobody holds, a resource only the journal's oldest and newest answers
// carried, a vread of a version no answer carried, a live patient. Also what recording a call costs, and the heap the
// journal's index of fullUrls takes. `node test/bench/rest-read.mjs` after `npm run build`; not part of npm test.
import { createApp } from "../../dist/app.js";
import { ResourceIndex } from "../../dist/journal/resource-index.js";
import { STANDARD_PATH } from "../../dist/routing/default-operations.js";
import { addAllergyEnvelope, benchEmiratesId, MESSAGE_ID } from "./messages.mjs";

const CALLS = Number(process.env.CALLS ?? 10_000);
const QUIET = { info: () => undefined, error: () => undefined, warn: () => undefined };
const { app, journal } = createApp({ maxPatients: CALLS + 10 }, { logger: QUIET });

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fullUrlsOf = (bundle) => (bundle.entry ?? []).map((e) => e.fullUrl).filter((u) => u && !u.startsWith("urn:"));

// Every tenth message refused by a rule: its answer's OperationOutcome (a RESTful fullUrl) is in the journal only.
const rule = await app.request("/__admin/scenarios", {
  method: "POST",
  headers: { "content-type": "application/yaml" },
  body: 'rules:\n  - when: { headers: { X-Refuse: "yes" } }\n    respond: { outcome: { diagnostics: "refused" } }\n',
});
if (rule.status !== 201) throw new Error(`the rule: ${rule.status} ${await rule.text()}`);
const send = async (i) => {
  const body = addAllergyEnvelope(benchEmiratesId(i)).replace(MESSAGE_ID, `bench-${i}`);
  const res = await app.request(STANDARD_PATH, {
    method: "POST",
    headers: { "content-type": "application/json", ...(i % 10 === 0 ? { "x-refuse": "yes" } : {}) },
    body,
  });
  if (res.status !== 200) throw new Error(`call ${i}: ${res.status} ${await res.text()}`);
  return res.json();
};

// Recording: the time of the whole in-process call, first and last thousand (the last ones evict as they record).
const perCall = [];
let first;
let last;
let allergyAnswer;
for (let i = 0; i < CALLS; i++) {
  const t = performance.now();
  const answer = await send(i);
  perCall.push(performance.now() - t);
  if (i === 0) first = answer;
  if (i % 10 === 0) last = answer;
  else allergyAnswer = answer;
}
const outcomeOf = (bundle) => fullUrlsOf(bundle).find((u) => u.includes("/OperationOutcome/"));
const oldest = outcomeOf(first);
const newest = outcomeOf(last);
const allergy = fullUrlsOf(allergyAnswer).find((u) => u.includes("/AllergyIntolerance/"));
const patient = fullUrlsOf(allergyAnswer).find((u) => u.includes("/Patient/"));
if (!oldest || !newest || !allergy || !patient)
  throw new Error(`no fullUrls to read in ${JSON.stringify([first, last])}`);
const path = (url) => new URL(url).pathname;

async function time(name, url, expected, n = 30) {
  const times = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const res = await app.request(url);
    times.push(performance.now() - t);
    if (res.status !== expected) throw new Error(`${name}: ${res.status}, not ${expected}`);
    await res.arrayBuffer();
  }
  console.log(`${name.padEnd(48)} median ${median(times).toFixed(2)} ms, max ${Math.max(...times).toFixed(2)} ms`);
}

console.log(
  `${CALLS} add-allergy calls recorded; a call (in-process, whole pipeline): median first 1,000 ${median(perCall.slice(0, 1000)).toFixed(3)} ms, last 1,000 ${median(perCall.slice(-1000)).toFixed(3)} ms`,
);
// The oldest answer's OperationOutcome is read first: each read is journaled, so it would be evicted later.
await time("read: the oldest answer's OperationOutcome", path(oldest), 200, 1);
await time("read: an id nobody holds", "/uae-fhir/r4/OperationOutcome/nobody-holds-this", 404);
await time("read: the newest answer's OperationOutcome", path(newest), 200);
await time("vread: a version no answer carried", `${path(allergy)}/_history/99`, 404);
await time("read: a patient the store holds", path(patient), 200);
globalThis.gc?.();
console.log(`heap used: ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(1)} MiB`);

// What the index weighs and costs: a second one over the same journal. The time of its scans, the bodies read first;
// the heap it holds (with --expose-gc), built from bodies read one at a time, so that any of them it kept would show.
const bodyOf = (call) => (call.direction === "inbound" ? call.response?.body : call.request.body);
if (globalThis.gc && journal.resources) {
  let carried = journal.list().map((call) => [call, bodyOf(call)]);
  const timed = new ResourceIndex();
  const t = performance.now();
  for (const [call, body] of carried) timed.add(call, body);
  const took = performance.now() - t;
  carried = undefined;
  timed.clear();
  globalThis.gc();
  const before = process.memoryUsage().heapUsed;
  const index = new ResourceIndex();
  for (const call of journal.list()) index.add(call, bodyOf(call));
  globalThis.gc();
  const bytes = process.memoryUsage().heapUsed - before;
  const { resources, calls } = index.size;
  console.log(
    `index: ${calls} calls, ${resources} resources, ${(bytes / 2 ** 20).toFixed(2)} MiB (${Math.round(bytes / calls)} bytes a call); scans ${took.toFixed(0)} ms (${((took / calls) * 1000).toFixed(1)} µs a call)`,
  );
}
