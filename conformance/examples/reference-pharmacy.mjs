#!/usr/bin/env node
// A reference pharmacy for the receiver conformance plan: a small, dependency-free receiver of the sandbox's pushes
// (Node built-ins and fetch only) that does what docs/pharmacy-guide.md describes, and deliberately breaks one thing
// with --variant. The conformance tests run it; run it yourself to see a session pass (or fail) end to end:
//
//   node conformance/examples/reference-pharmacy.mjs --port 9090 [--licence PH-CONFORMANCE-0001]
//        [--sandbox http://localhost:8080 --subscribe] [--variant late-ack|ack-500|late-confirm|confirm-duplicate|no-dispense]
//        [--delay MS] [--auth oauth2 --client-id ID --client-secret SECRET [--token-url URL]]
//
// It prints `listening on http://127.0.0.1:PORT/fhir-hook` when it takes pushes, and a line per push and message.
// Well-behaved, it answers each push 200 at once; confirms availability for each fulfillment request to the push's
// MessageHeader.source.endpoint, naming itself (its Organization, with its licence) as the sender; on the allocation
// push sends receive-allocation, then send-dispense-summary; answers a push it already took (the same MessageHeader
// id) 200 again without acting twice; and refuses (404) a push about an order it never got. With --auth oauth2 its
// messages carry a bearer token got by the client-credentials grant (client_secret_basic) at --token-url, default
// /oauth2/token of the sandbox it sends to, and a new one after a 401.
//
// Variants, each breaking one thing:
//   late-ack           answers the 2xx of a push it takes only after --delay ms (default 6000: past the 5 s limit)
//   ack-500            takes the push and acts on it, but answers 500
//   late-confirm       confirms --delay ms (default 500) after the Task's deadline
//   confirm-duplicate  processes every push it gets, a repeated one too: it confirms the same order twice
//   no-dispense        never sends the dispense summary
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { parseArgs } from "node:util";

const VARIANTS = ["late-ack", "ack-500", "late-confirm", "confirm-duplicate", "no-dispense"];
const DEFAULT_DELAY = { "late-ack": 6000, "late-confirm": 500 };

const { values: args } = parseArgs({
  options: {
    port: { type: "string", default: "9090" },
    licence: { type: "string", default: "PH-CONFORMANCE-0001" },
    name: { type: "string", default: "Reference Pharmacy" },
    sandbox: { type: "string" },
    subscribe: { type: "boolean", default: false },
    variant: { type: "string" },
    delay: { type: "string" },
    auth: { type: "string" },
    "client-id": { type: "string" },
    "client-secret": { type: "string" },
    "token-url": { type: "string" },
  },
});
const variant = args.variant ?? null;
if (variant !== null && !VARIANTS.includes(variant)) {
  console.error(`unknown --variant ${variant}; one of ${VARIANTS.join(", ")}`);
  process.exit(2);
}
if (args.subscribe && !args.sandbox) {
  console.error("--subscribe needs --sandbox URL (the sandbox, or a workspace: http://localhost:8080/w/team-a)");
  process.exit(2);
}
const oauth = args.auth === "oauth2";
if ((args.auth !== undefined && !oauth) || (oauth && (!args["client-id"] || !args["client-secret"]))) {
  console.error("--auth takes oauth2, with --client-id and --client-secret");
  process.exit(2);
}
const delayMs = Number(args.delay ?? DEFAULT_DELAY[variant] ?? 0);
const licence = args.licence;
const LICENCE_SYSTEM = "urn:ae:pharmacy-licence";
const EVENTS = "https://sandbox.example.ae/events";
const PART = "urn:uae-fhir-sandbox:fulfillment-part";
const ETA = "https://uae-fhir-sandbox.example/fhir/StructureDefinition/estimated-time";
const PRICE = "https://uae-fhir-sandbox.example/fhir/StructureDefinition/price";

/** Tasks of the fulfillment requests it got, by Task id: what a later push (the allocation) must be about. */
const tasks = new Map();
/** MessageHeader ids of the pushes it took: a push with one of them is answered again, not processed again. */
const taken = new Set();
let hookUrl = "";

const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (line) => console.log(line);

/** A message as docs/pharmacy-guide.md builds them: the MessageHeader, the focus, and the pharmacy's Organization. */
function message(event, focus, extraEntries = []) {
  const id = randomUUID();
  const orgUrl = `urn:uuid:${randomUUID()}`;
  return {
    resourceType: "Bundle",
    type: "message",
    timestamp: new Date().toISOString(),
    entry: [
      {
        fullUrl: `urn:uuid:${id}`,
        resource: {
          resourceType: "MessageHeader",
          id,
          eventCoding: { system: EVENTS, code: event },
          source: { endpoint: hookUrl },
          sender: { reference: orgUrl },
          focus: focus.map((f) => ({ reference: f.reference })),
        },
      },
      ...focus.map((f) => ({ fullUrl: f.fullUrl, resource: f.resource })),
      ...extraEntries,
      {
        fullUrl: orgUrl,
        resource: {
          resourceType: "Organization",
          identifier: [{ system: LICENCE_SYSTEM, value: licence }],
          name: args.name,
        },
      },
    ],
  };
}

let token;

/** A bearer token by the client-credentials grant, from the token endpoint of the sandbox at `url`. */
async function newToken(url) {
  const basic = Buffer.from(`${args["client-id"]}:${args["client-secret"]}`).toString("base64");
  const res = await fetch(args["token-url"] ?? `${new URL(url).origin}/oauth2/token`, {
    method: "POST",
    headers: { authorization: `Basic ${basic}`, "content-type": "application/x-www-form-urlencoded" },
    body: "grant_type=client_credentials",
    signal: AbortSignal.timeout(15_000),
  });
  const body = await res.json().catch(() => ({}));
  if (!res.ok || typeof body.access_token !== "string") throw new Error(`token request answered ${res.status}`);
  token = body.access_token;
}

/** POSTs a message, with a token under --auth oauth2 (a new one, and the message again, after a 401). */
async function post(url, bundle) {
  const body = JSON.stringify({ content: JSON.stringify(bundle) });
  for (let attempt = 1; ; attempt++) {
    if (oauth && token === undefined) await newToken(url);
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...(oauth ? { authorization: `Bearer ${token}` } : {}) },
      body,
      signal: AbortSignal.timeout(15_000),
    });
    if (res.status !== 401 || !oauth || attempt > 1) return res;
    token = undefined;
  }
}

/** Sends a message to the sandbox and says how it was answered; never throws (a pharmacy keeps running). */
async function send(url, event, bundle) {
  try {
    const res = await post(url, bundle);
    const answer = await res.json().catch(() => null);
    const code = answer?.entry?.[0]?.resource?.response?.code ?? answer?.issue?.[0]?.diagnostics ?? "";
    log(`sent ${event} → ${res.status} ${code}`);
    return { status: res.status, code };
  } catch (error) {
    log(`sent ${event} → failed: ${error.message}`);
    return { status: null, code: null };
  }
}

const taskEntry = (bundle) => bundle.entry?.find((e) => e.resource?.resourceType === "Task");

/** The confirmation of a fulfillment request: everything available, home delivery or pickup. */
function confirmation(pushed) {
  const task = pushed.resource;
  const option = (method, minutes, price) => ({
    type: { coding: [{ system: PART, code: "delivery-option" }] },
    extension: [
      {
        url: ETA,
        valueDuration: { value: minutes, unit: "min", system: "http://unitsofmeasure.org", code: "min" },
      },
      { url: PRICE, valueMoney: { value: price, currency: "AED" } },
    ],
    valueCodeableConcept: { coding: [{ system: "urn:uae-fhir-sandbox:delivery-method", code: method }] },
  });
  return message("confirm-drugs-availability", [
    {
      reference: `Task/${task.id}`,
      fullUrl: pushed.fullUrl,
      resource: {
        resourceType: "Task",
        id: task.id,
        status: "accepted",
        intent: "order",
        businessStatus: { coding: [{ system: "urn:uae-fhir-sandbox:fulfillment-status", code: "available" }] },
        owner: { identifier: { system: LICENCE_SYSTEM, value: licence } },
        output: [option("home-delivery", 90, 15), option("pickup", 30, 0)],
      },
    },
  ]);
}

/** The dispense summary of an allocated order: one MedicationDispense per request (a device order: the Task done). */
function dispenseSummary(bundle, pushed) {
  const requests = bundle.entry.filter((e) => e.resource?.resourceType === "MedicationRequest");
  if (requests.length === 0) {
    const task = pushed.resource;
    return message("send-dispense-summary", [
      {
        reference: `Task/${task.id}`,
        fullUrl: pushed.fullUrl,
        resource: { resourceType: "Task", id: task.id, status: "completed", intent: "order" },
      },
    ]);
  }
  const handedOver = new Date().toISOString();
  return message(
    "send-dispense-summary",
    requests.map(({ resource: request }) => {
      const fullUrl = `urn:uuid:${randomUUID()}`;
      return {
        reference: fullUrl,
        fullUrl,
        resource: {
          resourceType: "MedicationDispense",
          status: "completed",
          medicationCodeableConcept: request.medicationCodeableConcept,
          subject: request.subject,
          authorizingPrescription: [{ reference: `MedicationRequest/${request.id}` }],
          quantity: request.dispenseRequest?.quantity,
          whenHandedOver: handedOver,
        },
      };
    }),
  );
}

/** What it does after taking a push (after answering it: the exchange waits for no work). */
async function act(event, bundle, pushed, replyTo) {
  const task = pushed.resource;
  if (event === "order-fulfillment-request") {
    if (variant === "late-confirm") {
      const deadline = Date.parse(task.restriction?.period?.end ?? "");
      if (Number.isFinite(deadline)) await wait(Math.max(0, deadline - Date.now()) + delayMs);
    }
    await send(replyTo, "confirm-drugs-availability", confirmation(pushed));
  } else if (event === "order-allocation") {
    await send(
      replyTo,
      "receive-allocation",
      message("receive-allocation", [
        {
          reference: `Task/${task.id}`,
          fullUrl: pushed.fullUrl,
          resource: { resourceType: "Task", id: task.id, status: "accepted", intent: "order" },
        },
      ]),
    );
    if (variant !== "no-dispense") await send(replyTo, "send-dispense-summary", dispenseSummary(bundle, pushed));
  }
}

/** Answers one push: 200 (taken, or taken before), 404 (about an order it never got), 400 (not a message). */
async function onPush(body) {
  let bundle;
  try {
    bundle = JSON.parse(JSON.parse(body).content);
  } catch {
    return { status: 400, body: outcome("invalid", 'Expected {"content": "<message Bundle>"}.') };
  }
  const header = bundle.entry?.[0]?.resource;
  const event = header?.eventCoding?.code;
  const pushed = taskEntry(bundle);
  if (header?.resourceType !== "MessageHeader" || !pushed) {
    return { status: 400, body: outcome("invalid", "A push is a message Bundle about a Task.") };
  }
  if (taken.has(header.id) && variant !== "confirm-duplicate") {
    log(`push ${event} ${header.id} again: answered as before, not processed again`);
    return { status: 200, body: null, taken: true };
  }
  const known = tasks.has(pushed.resource.id);
  if (event === "order-allocation" && !known) {
    log(`push ${event} about Task/${pushed.resource.id}: never got that order, refused`);
    return {
      status: 404,
      body: outcome("not-found", `No fulfillment request for Task/${pushed.resource.id} was received here.`),
    };
  }
  taken.add(header.id);
  tasks.set(pushed.resource.id, pushed.resource);
  log(`push ${event} ${header.id} about Task/${pushed.resource.id}: taken`);
  // The answer goes out first; the work follows (a slow confirmation must not hold the exchange's push).
  setImmediate(() => void act(event, bundle, pushed, header.source?.endpoint));
  return { status: 200, body: null, taken: true };
}

const outcome = (code, diagnostics) => ({
  resourceType: "OperationOutcome",
  issue: [{ severity: "error", code, diagnostics }],
});

const server = createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", async () => {
    if (req.method !== "POST") return void res.writeHead(405).end();
    const answer = await onPush(Buffer.concat(chunks).toString("utf8"));
    let status = answer.status;
    if (answer.taken && variant === "late-ack") await wait(delayMs);
    if (answer.taken && variant === "ack-500") status = 500;
    const text = answer.body ? JSON.stringify(answer.body) : "";
    res.writeHead(status, text ? { "content-type": "application/fhir+json" } : {}).end(text);
  });
});

server.listen(Number(args.port), "127.0.0.1", async () => {
  hookUrl = `http://127.0.0.1:${server.address().port}/fhir-hook`;
  log(`listening on ${hookUrl}`);
  if (args.subscribe) await subscribe();
});

/** Subscribes itself: a rest-hook Subscription to its hook, and its Organization with its licence. */
async function subscribe() {
  const base = args.sandbox.replace(/\/+$/, "");
  const url = base.endsWith("$process-message") ? base : `${base}/uae-fhir/r4/$process-message`;
  const subscription = `urn:uuid:${randomUUID()}`;
  const bundle = message("subscribe-order-notifications", [
    {
      reference: subscription,
      fullUrl: subscription,
      resource: {
        resourceType: "Subscription",
        status: "requested",
        reason: `Drug order fulfillment requests for ${args.name}`,
        criteria: "Task?code=fulfill",
        channel: { type: "rest-hook", endpoint: hookUrl, payload: "application/fhir+json" },
      },
    },
  ]);
  // The Organization is in the focus too: the licence the sandbox takes is its identifier's.
  const header = bundle.entry[0].resource;
  header.focus.push({ reference: header.sender.reference });
  const { code } = await send(url, "subscribe-order-notifications", bundle);
  log(code === "ok" ? `subscribed as ${licence}` : `subscription refused: ${code}`);
}

for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
