// The reference pipeline (issue 22): the work the contract asks of an
// add-allergy message, done by the sandbox's own modules on plain node:http
// with nothing around it, run as its own process (pinned by pinned.mjs):
// `node reference-server.mjs core|full`. The throughput section measures the
// sandbox against it, so "how close to the required work" is a ratio every run.
//
//   core: the body read, decodeEnvelope (both JSON parses), validateMessage
//         (strict R4, the sandbox's default policy), readMessage, a route on
//         the event code, the AllergyIntolerance stored in a SandboxStore
//         (its patient generated on first use, as the sandbox does), okMessage
//         (the sandbox's response message: MessageHeader, the allergy, its
//         Patient), JSON.stringify, one writeHead + end.
//   full: core + the duplicate memory (ReplayCache, messageIdentity,
//         PackedTexts shared with the journal), the Journal with its Redaction
//         (a call:completed event, as the sandbox's edge announces a call)
//         and the request log (createRequestLog, JSON lines to stdout, as the
//         CLI writes them when stdout is not a terminal).
//
// Only these dist/ modules, each used through exports that have stayed put
// (a change to one of them fails the bench's size and status check, loudly):
// config/options.js (DEFAULT_OPTIONS), envelope/envelope.js (decodeEnvelope),
// envelope/message.js (readMessage), validation/validate-message.js
// (validateMessage), store/sandbox-store.js (SandboxStore),
// store/patient-identity.js (identityOfReference), handlers/profile-records.js
// (patientReference), fhir/response-message.js (okMessage),
// routing/default-operations.js (STANDARD_PATH, STANDARD_FHIR_BASE), and for
// `full` pipeline/replay-cache.js (ReplayCache), pipeline/fingerprint.js
// (messageIdentity, sameMessage), text/packed-texts.js (PackedTexts),
// journal/journal.js (Journal), journal/redact.js (Redaction), events.js
// (SandboxEvents), log/request-log.js (createRequestLog).
//
// Anything else answers 404, a message it cannot take 400 or 422, a failure
// 500 (with the reason on stderr): the bench takes only 200s.
// Prints "listening on URL" like the CLI.
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import pino from "pino";
import { DEFAULT_OPTIONS } from "../../dist/config/options.js";
import { decodeEnvelope } from "../../dist/envelope/envelope.js";
import { readMessage } from "../../dist/envelope/message.js";
import { SandboxEvents } from "../../dist/events.js";
import { okMessage } from "../../dist/fhir/response-message.js";
import { patientReference } from "../../dist/handlers/profile-records.js";
import { Journal } from "../../dist/journal/journal.js";
import { Redaction } from "../../dist/journal/redact.js";
import { createRequestLog } from "../../dist/log/request-log.js";
import { messageIdentity, sameMessage } from "../../dist/pipeline/fingerprint.js";
import { ReplayCache } from "../../dist/pipeline/replay-cache.js";
import { STANDARD_FHIR_BASE, STANDARD_PATH } from "../../dist/routing/default-operations.js";
import { identityOfReference } from "../../dist/store/patient-identity.js";
import { SandboxStore } from "../../dist/store/sandbox-store.js";
import { PackedTexts } from "../../dist/text/packed-texts.js";
import { validateMessage } from "../../dist/validation/validate-message.js";

const [variant] = process.argv.slice(2);
if (variant !== "core" && variant !== "full")
  throw new Error(`unknown reference variant ${variant}; known: core, full`);

const options = DEFAULT_OPTIONS;
const policy = {
  validation: options.validation,
  emiratesIdCheck: options.emiratesIdCheck,
  emiratesIdSystem: options.emiratesIdSystem,
};
const deps = { now: () => new Date(), newId: randomUUID };
const store = new SandboxStore(
  { seed: options.seed, emiratesIdSystem: options.emiratesIdSystem, ...deps },
  { patients: options.maxPatients, recordsPerPatient: options.maxRecordsPerPatient },
);
/** The sandbox's headers on every answer (http/answer-headers.ts), and its content type. */
const ANSWER_HEADERS = {
  "content-type": "application/fhir+json; charset=utf-8",
  "x-content-type-options": "nosniff",
  "content-security-policy": "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
};

/** add-allergy as the sandbox's built-in behaviour does it: the patient found or generated, the allergy stored. */
function addAllergy(message) {
  const allergy = message.focus[0]?.resource;
  const identity = identityOfReference(allergy?.patient, message);
  if (allergy?.resourceType !== "AllergyIntolerance" || !identity) return undefined;
  const patient = store.ensurePatient(identity);
  const { id: _clientId, ...resource } = allergy;
  const stored = store.create({ ...resource, patient: patientReference(patient) }, patient.id);
  return { resources: [stored, patient], focus: [stored] };
}

/** The route: event code → the work. */
const ROUTES = new Map([["add-allergy", addAllergy]]);

/** The duplicate memory, the journal and the request log (`full` only), wired as a workspace wires them. */
function keeping() {
  const events = new SandboxEvents();
  const texts = new PackedTexts();
  const journal = new Journal({ maxCalls: options.journalLimit, maxBytes: options.journalMaxBytes }, events, {
    redaction: new Redaction(options.redactHeaders),
    texts,
  });
  // As the workspace bounds it: the last 2,000 answers, within the journal's budget of characters.
  const replays = new ReplayCache(Math.min(options.journalLimit, 2_000), {
    maxChars: options.journalMaxBytes,
    sizeOf: (answer) => answer.body.length + ("text" in answer.identity ? answer.identity.text.length : 0),
  });
  const log = createRequestLog(
    { format: "json", level: "info", colours: false },
    { out: pino.destination({ dest: 1, sync: true }), err: pino.destination({ dest: 2, sync: true }) },
  );
  log.observe(events);
  return { events, texts, journal, replays };
}

const kept = variant === "full" ? keeping() : undefined;
let calls = 0;

/** One message, start to answer: status, body text and what the journal records. `call`: its journal id and start. */
function processMessage(text, host, call) {
  const envelope = decodeEnvelope(text, false);
  if (!envelope.ok) return { status: 400, body: JSON.stringify(envelope.issues) };
  const checked = validateMessage(envelope.bundle, policy);
  if (checked.errors.length > 0) return { status: 400, body: JSON.stringify(checked.errors) };
  const { message } = readMessage(envelope.bundle);
  const route = message ? ROUTES.get(message.event) : undefined;
  const messageId = message?.header.id;
  if (!route || typeof messageId !== "string") return { status: 400, body: '"not an add-allergy message"' };
  let identity;
  if (kept) {
    const earlier = kept.replays.get(messageId);
    if (earlier) {
      const same = sameMessage(earlier.identity, envelope.bundle, envelope.text);
      return same ? { status: earlier.status, body: earlier.body.text, messageId } : { status: 409, body: '"reused"' };
    }
    identity = messageIdentity(envelope.bundle, envelope.text, kept.texts);
  }
  const result = route(message);
  if (!result) return { status: 422, body: '"the allergy names no patient"' };
  const fhirBase = `http://${host}${STANDARD_FHIR_BASE}`;
  const correlation = { request: message.header, endpoint: `http://${host}${STANDARD_PATH}`, fhirBase };
  const body = JSON.stringify(okMessage(correlation, result.resources, deps, result.focus, [], checked.warnings));
  if (kept) {
    kept.replays.remember(messageId, {
      status: 200,
      body: kept.texts.keep(body),
      identity,
      callId: call.id,
      at: call.at,
    });
  }
  return { status: 200, body, messageId };
}

/** The headers of an answer, as the sandbox sends them. */
function headersOf(answer, call) {
  return {
    ...ANSWER_HEADERS,
    "content-length": String(Buffer.byteLength(answer.body)),
    "x-sandbox-call-id": call.id,
  };
}

/** Announces the call to the journal (and through it the request log), as the sandbox's edge does before writing. */
function record(req, text, call, answer, headers, started) {
  kept.events.emit("call:completed", {
    id: call.id,
    direction: "inbound",
    at: call.at,
    durationMs: Math.round((performance.now() - started) * 1000) / 1000,
    operation: answer.messageId === undefined ? null : "add-allergy",
    messageId: answer.messageId ?? null,
    rule: null,
    jsonBodies: true,
    request: {
      method: req.method,
      url: `http://${req.headers.host}${req.url}`,
      path: req.url,
      headers: req.headers,
      body: text,
    },
    response: { status: answer.status, headers, body: answer.body },
  });
}

const server = createServer((req, res) => {
  const started = performance.now();
  const call = { id: kept ? kept.journal.reserveId() : String(++calls), at: deps.now() };
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", () => {
    const text = Buffer.concat(chunks).toString("utf8");
    let answer;
    let headers;
    try {
      answer =
        req.method === "POST" && req.url === STANDARD_PATH
          ? processMessage(text, req.headers.host ?? "127.0.0.1", call)
          : { status: 404, body: '"not found"' };
      headers = headersOf(answer, call);
      if (kept) record(req, text, call, answer, headers, started);
    } catch (error) {
      // A module whose API moved, say: a 500 the bench reports, not a figure of less work.
      console.error(error);
      answer = { status: 500, body: JSON.stringify(String(error?.stack ?? error)) };
      headers = headersOf(answer, call);
    }
    res.writeHead(answer.status, headers);
    res.end(answer.body);
  });
});

server.listen(0, "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${server.address().port}`));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
