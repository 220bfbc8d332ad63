#!/usr/bin/env node
// A reference sender for the sender conformance plan (conformance/sender.yaml): a small clinic system that sends
// valid messages in a loop and handles every answer as a reliable FHIR messaging sender should. Dependency-free
// (Node built-ins and fetch), so that it runs anywhere Node 22 runs, and short enough to read as an example.
//
//   node conformance/examples/reference-sender.mjs --sandbox http://localhost:8080 [--operations add-allergy,add-measurement]
//     [--variant no-retry|retry-new-id|retry-after-fatal|ignore-retry-after] [--time-scale F]
//     [--auth oauth2 --client-id ID --client-secret SECRET [--token-url URL]] [--count N]
//
// --sandbox is the sandbox's URL, with a workspace's prefix if any (http://localhost:8080/w/team-a); messages go to
// its /uae-fhir/r4/$process-message. With --auth oauth2 the sender gets a token by the client-credentials grant
// (client_secret_basic) at --token-url, default the sandbox's /oauth2/token, and a new one after a 401.
//
// How it handles an answer:
//   ok, or 409 (the id was used: the message is not sent again; every new message gets a new id) -> next message
//   fatal-error, or another 4xx -> not sent again (the data must change first)
//   503 / 5xx / 429 / transient-error / no answer within the timeout -> sent again: the same Bundle, the same
//     MessageHeader id and content, after Retry-After when the answer gives one, else after a short backoff
//   401 -> a new token, then the same Bundle again
// Each --variant breaks one of these on purpose (for the sandbox's own tests): no-retry never sends a message again;
// retry-new-id sends it again under a new MessageHeader id; retry-after-fatal sends a fatal-error's message again;
// ignore-retry-after retries after the backoff whatever Retry-After says.
//
// It stops on SIGTERM or SIGINT (or after --count messages).

import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";

const VARIANTS = ["no-retry", "retry-new-id", "retry-after-fatal", "ignore-retry-after"];
const STANDARD_PATH = "/uae-fhir/r4/$process-message";
/** Sends of one message at most: the first and five retries. */
const MAX_SENDS = 6;

const { values: flags } = parseArgs({
  options: {
    sandbox: { type: "string" },
    operations: { type: "string", default: "add-allergy" },
    variant: { type: "string" },
    "time-scale": { type: "string", default: "1" },
    timeout: { type: "string" },
    interval: { type: "string" },
    backoff: { type: "string" },
    auth: { type: "string" },
    "client-id": { type: "string" },
    "client-secret": { type: "string", default: process.env.CLIENT_SECRET },
    "token-url": { type: "string" },
    patient: { type: "string", default: "784-1981-9226594-4" },
    count: { type: "string" },
    help: { type: "boolean", short: "h" },
  },
});

function usage(problem) {
  if (problem) console.error(`reference-sender: ${problem}`);
  console.error(
    "usage: reference-sender.mjs --sandbox URL [--operations a,b] [--variant NAME] [--time-scale F] [--auth oauth2 --client-id ID --client-secret S] [--count N]",
  );
  process.exit(problem ? 2 : 0);
}

if (flags.help) usage();
if (!flags.sandbox || !URL.canParse(flags.sandbox)) usage("--sandbox needs the sandbox's URL");
if (flags.variant !== undefined && !VARIANTS.includes(flags.variant)) usage(`--variant is one of ${VARIANTS.join(", ")}`);
const scale = Number(flags["time-scale"]);
if (!(scale > 0)) usage("--time-scale is a number above 0");
const oauth = flags.auth === "oauth2";
if (flags.auth !== undefined && !oauth) usage("--auth takes oauth2");
if (oauth && (!flags["client-id"] || !flags["client-secret"])) usage("--auth oauth2 needs --client-id and --client-secret");

const ms = (flag, fallback) => (flag === undefined ? Math.round(fallback * scale) : Number(flag));
/** How long it waits for an answer before it gives up on the send (and sends again). */
const TIMEOUT_MS = ms(flags.timeout, 1000);
/** Between messages, and before a retry when the answer gives no Retry-After. */
const INTERVAL_MS = ms(flags.interval, 500);
const BACKOFF_MS = ms(flags.backoff, 500);

const base = flags.sandbox.replace(/\/+$/, "");
const messageUrl = base.endsWith("$process-message") ? base : `${base}${STANDARD_PATH}`;
const tokenUrl = flags["token-url"] ?? `${new URL(base).origin}/oauth2/token`;
const variant = flags.variant;

// --- Messages: two templates, as `uae-fhir-sandbox example <operation>` writes them. -----------------------------

const TEMPLATES = {
  "add-allergy": (patient) => ({
    resourceType: "AllergyIntolerance",
    clinicalStatus: {
      coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", code: "active" }],
    },
    verificationStatus: {
      coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-verification", code: "confirmed" }],
    },
    type: "allergy",
    category: ["food"],
    criticality: "low",
    code: { coding: [{ system: "http://snomed.info/sct", code: "3718001", display: "Cow's milk (substance)" }], text: "Cow's milk" },
    patient: { reference: patient },
    recordedDate: new Date().toISOString(),
  }),
  "add-measurement": (patient) => ({
    resourceType: "Observation",
    status: "final",
    category: [
      {
        coding: [
          { system: "http://terminology.hl7.org/CodeSystem/observation-category", code: "vital-signs", display: "Vital Signs" },
        ],
      },
    ],
    code: { coding: [{ system: "http://loinc.org", code: "29463-7", display: "Body weight" }], text: "Body weight" },
    subject: { reference: patient },
    effectiveDateTime: new Date().toISOString(),
    valueQuantity: { value: 60 + Math.round(Math.random() * 400) / 10, unit: "kg", system: "http://unitsofmeasure.org", code: "kg" },
  }),
};

const operations = flags.operations.split(",").map((s) => s.trim()).filter(Boolean);
for (const op of operations) if (!TEMPLATES[op]) usage(`no template for ${op}: this example sends ${Object.keys(TEMPLATES).join(", ")}`);

/** A new message of `operation`: new ids for the Bundle, the MessageHeader and every entry. */
function newMessage(operation) {
  const headerId = randomUUID();
  const patientUrl = `urn:uuid:${randomUUID()}`;
  const focusUrl = `urn:uuid:${randomUUID()}`;
  return {
    resourceType: "Bundle",
    id: randomUUID(),
    type: "message",
    timestamp: new Date().toISOString(),
    entry: [
      {
        fullUrl: `urn:uuid:${headerId}`,
        resource: {
          resourceType: "MessageHeader",
          id: headerId,
          eventCoding: { system: "urn:uae-fhir-sandbox:events", code: operation },
          source: { endpoint: "https://clinic.example.ae/ehr" },
          focus: [{ reference: focusUrl }],
        },
      },
      { fullUrl: focusUrl, resource: TEMPLATES[operation](patientUrl) },
      {
        fullUrl: patientUrl,
        resource: { resourceType: "Patient", identifier: [{ system: "urn:ae:emirates-id", value: flags.patient }] },
      },
    ],
  };
}

/** The same message under a new MessageHeader id: what a sender must NOT do on a retry (--variant retry-new-id). */
function withNewId(message) {
  const copy = structuredClone(message);
  const id = randomUUID();
  copy.entry[0].fullUrl = `urn:uuid:${id}`;
  copy.entry[0].resource.id = id;
  return copy;
}

const headerIdOf = (message) => message.entry[0].resource.id;
const envelope = (message) => JSON.stringify({ content: JSON.stringify(message) });

// --- Tokens ---------------------------------------------------------------------------------------------------

let token;

async function newToken() {
  const basic = Buffer.from(`${flags["client-id"]}:${flags["client-secret"]}`).toString("base64");
  const res = await fetch(tokenUrl, {
    method: "POST",
    headers: { authorization: `Basic ${basic}`, "content-type": "application/x-www-form-urlencoded" },
    body: "grant_type=client_credentials",
    signal: AbortSignal.timeout(Math.max(TIMEOUT_MS, 5000)),
  });
  const body = await res.json().catch(() => ({}));
  if (!res.ok || typeof body.access_token !== "string") throw new Error(`token request answered ${res.status}: ${JSON.stringify(body)}`);
  token = body.access_token;
}

// --- Sending ----------------------------------------------------------------------------------------------------

/** The MessageHeader.response.code of an answer, if it is a response message (bare, or in the envelope). */
function responseCodeOf(text) {
  try {
    let body = JSON.parse(text);
    if (typeof body?.content === "string") body = JSON.parse(body.content);
    return body?.entry?.[0]?.resource?.response?.code;
  } catch {
    return undefined;
  }
}

/** Retry-After in ms: delta-seconds, or an HTTP date. */
function retryAfterMs(value) {
  if (value === null) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** One POST, and what its answer means to a sender. */
async function send(message) {
  const headers = { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) };
  let res;
  try {
    res = await fetch(messageUrl, { method: "POST", headers, body: envelope(message), signal: AbortSignal.timeout(TIMEOUT_MS) });
  } catch (error) {
    return { kind: "transient", what: error?.name === "TimeoutError" ? "no answer (timeout)" : `no answer (${error?.message})` };
  }
  const text = await res.text().catch(() => "");
  const code = responseCodeOf(text);
  const what = `${res.status}${code ? ` ${code}` : ""}`;
  if (res.status === 401) return { kind: "unauthorized", what };
  if (res.status === 409) return { kind: "conflict", what };
  if (res.status === 429 || res.status >= 500 || code === "transient-error") {
    return { kind: "transient", what, retryAfterMs: retryAfterMs(res.headers.get("retry-after")) };
  }
  if (res.status >= 400 || code === "fatal-error") return { kind: "fatal", what };
  return { kind: "ok", what };
}

/** Sends one message until it is answered for good, as a reliable sender does (or as the variant breaks it). */
async function deliver(operation) {
  let message = newMessage(operation);
  for (let sends = 1; sends <= MAX_SENDS && !stopping; sends++) {
    const answer = await send(message);
    console.log(`${operation} ${headerIdOf(message)} -> ${answer.what}${sends > 1 ? ` (send ${sends})` : ""}`);
    if (answer.kind === "ok" || answer.kind === "conflict") return;
    if (answer.kind === "fatal") {
      // A fatal-error says the content is wrong: sending it again changes nothing.
      if (variant === "retry-after-fatal" && sends === 1) {
        await sleep(BACKOFF_MS);
        continue;
      }
      return;
    }
    if (variant === "no-retry") return;
    if (answer.kind === "unauthorized") {
      if (!oauth) return;
      try {
        await newToken();
      } catch (error) {
        console.error(`reference-sender: ${error.message}`);
        return;
      }
    } else {
      const wait = answer.retryAfterMs !== undefined && variant !== "ignore-retry-after" ? answer.retryAfterMs : BACKOFF_MS;
      await sleep(wait);
    }
    // The same Bundle again: the receiver tells the resend by its MessageHeader id, and processes it once.
    if (variant === "retry-new-id") message = withNewId(message);
  }
}

let stopping = false;
const stop = () => {
  stopping = true;
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);

const count = flags.count === undefined ? Number.POSITIVE_INFINITY : Number(flags.count);
console.log(`sending to ${messageUrl}${variant ? ` (variant ${variant})` : ""}`);
if (oauth) await newToken();
for (let sent = 0; sent < count && !stopping; sent++) {
  await deliver(operations[sent % operations.length]);
  if (!stopping) await sleep(INTERVAL_MS);
}
