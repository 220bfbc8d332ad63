// Benchmark section: R4 validation of inbound messages, in-process, per message
// (src/validation/validate-message.ts under the default policy). What the
// pipeline spends on "is this valid R4" for a typical message, and for a large one.
import { validateMessage } from "../../dist/validation/validate-message.js";
import { fmt, median } from "./load.mjs";
import { addAllergyEnvelope, MESSAGE_ID } from "./messages.mjs";

const POLICY = { validation: "strict", emiratesIdCheck: "error", emiratesIdSystem: "urn:ae:emirates-id" };
const ROUNDS = 5;
/** ≤ 20 µs for a typical 3-resource message (issue: "Say no where the exchange would"). */
const TARGET_US = 20;

const bundleOf = (envelope) => JSON.parse(JSON.parse(envelope).content.replace(MESSAGE_ID, "bench-message"));

const header = (code, focus) => ({
  fullUrl: "urn:uuid:6f1d2c3b-4a5e-4f6a-8b7c-9d0e1f2a3b41",
  resource: {
    resourceType: "MessageHeader",
    id: "bench-message",
    eventCoding: { system: "https://sandbox.example.ae/events", code },
    source: { endpoint: "https://clinic.example.ae/ehr" },
    focus: focus.map((reference) => ({ reference })),
  },
});
const message = (code, entries, focus) => ({
  resourceType: "Bundle",
  type: "message",
  timestamp: "2026-01-15T09:30:00+04:00",
  entry: [header(code, focus), ...entries],
});
const patientEntry = {
  fullUrl: "urn:uuid:2a4b6c8d-0e1f-4a3b-9c5d-7e9f1a3b5c03",
  resource: { resourceType: "Patient", identifier: [{ system: "urn:ae:emirates-id", value: "784-1990-1234567-6" }] },
};

function addMeasurement() {
  const url = "urn:uuid:7c1e2d3f-4a5b-4c6d-8e9f-0a1b2c3d4e51";
  return message(
    "add-measurement",
    [
      {
        fullUrl: url,
        resource: {
          resourceType: "Observation",
          status: "final",
          category: [
            {
              coding: [{ system: "http://terminology.hl7.org/CodeSystem/observation-category", code: "vital-signs" }],
            },
          ],
          code: { coding: [{ system: "http://loinc.org", code: "85354-9", display: "Blood pressure panel" }] },
          subject: { reference: patientEntry.fullUrl },
          effectiveDateTime: "2026-01-15T09:30:00+04:00",
          component: [
            {
              code: { coding: [{ system: "http://loinc.org", code: "8480-6" }] },
              valueQuantity: { value: 120, unit: "mmHg", system: "http://unitsofmeasure.org", code: "mm[Hg]" },
            },
            {
              code: { coding: [{ system: "http://loinc.org", code: "8462-4" }] },
              valueQuantity: { value: 80, unit: "mmHg", system: "http://unitsofmeasure.org", code: "mm[Hg]" },
            },
          ],
        },
      },
      patientEntry,
    ],
    [url],
  );
}

function confirmDrugs() {
  const task = "urn:uuid:8d2e3f4a-5b6c-4d7e-8f9a-0b1c2d3e4f61";
  const org = "urn:uuid:9e3f4a5b-6c7d-4e8f-9a0b-1c2d3e4f5a71";
  return message(
    "confirm-drugs-availability",
    [
      {
        fullUrl: task,
        resource: {
          resourceType: "Task",
          id: "fulfil-1",
          status: "accepted",
          intent: "order",
          businessStatus: { coding: [{ system: "urn:uae-fhir-sandbox:availability", code: "available" }] },
          owner: { reference: org },
          output: [
            {
              type: { coding: [{ system: "urn:uae-fhir-sandbox:fulfillment-part", code: "delivery-option" }] },
              valueCodeableConcept: { coding: [{ system: "urn:uae-fhir-sandbox:delivery-method", code: "pickup" }] },
            },
          ],
        },
      },
      {
        fullUrl: org,
        resource: {
          resourceType: "Organization",
          identifier: [{ system: "urn:ae:pharmacy-licence", value: "PH-1" }],
          name: "Pharmacy",
        },
      },
    ],
    [task],
  );
}

/** A 50-entry message: 49 AllergyIntolerances (of one patient) after the header. */
function fiftyEntries() {
  const allergy = bundleOf(addAllergyEnvelope()).entry[1].resource;
  const entries = Array.from({ length: 48 }, (_, i) => ({
    fullUrl: `urn:uuid:00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
    resource: { ...allergy, patient: { reference: patientEntry.fullUrl } },
  }));
  return message("add-allergy", [...entries, patientEntry], [entries[0].fullUrl]);
}

function timeOne(bundle, iterations) {
  const problems = validateMessage(bundle, POLICY).errors;
  if (problems.length > 0) throw new Error(`benchmark message is invalid: ${JSON.stringify(problems).slice(0, 400)}`);
  for (let i = 0; i < iterations; i++) validateMessage(bundle, POLICY);
  const rounds = [];
  for (let r = 0; r < ROUNDS; r++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) validateMessage(bundle, POLICY);
    rounds.push(Number(process.hrtime.bigint() - started) / 1000 / iterations);
  }
  return median(rounds);
}

export const validation = {
  id: "validation",
  title: "R4 validation of a message, in-process",
  async run() {
    const cases = [
      ["add-allergy (MessageHeader, AllergyIntolerance, Patient)", bundleOf(addAllergyEnvelope()), 20_000],
      ["add-measurement (blood pressure panel, Patient)", addMeasurement(), 20_000],
      ["confirm-drugs-availability (Task, Organization)", confirmDrugs(), 20_000],
      ["a 50-entry message (49 AllergyIntolerances, Patient)", fiftyEntries(), 1_000],
    ];
    const rows = cases.map(([name, bundle, n]) => ({ name, us: timeOne(bundle, n), entries: bundle.entry.length }));
    const typical = rows[0].us;
    return {
      markdown: [
        "validateMessage (strict, Emirates IDs checked) in this process, one message at a time; per message a warm-up " +
          `as long as one round is discarded, then the median of ${ROUNDS} rounds. Each message is valid, so every ` +
          "check runs to the end.",
        "",
        "| message | entries | µs per message |",
        "|---|---|---|",
        ...rows.map((r) => `| ${r.name} | ${r.entries} | ${fmt(r.us)} |`),
      ].join("\n"),
      summary: [
        {
          what: "R4 validation of a 3-resource add-allergy message",
          value: `${fmt(typical)} µs`,
          target: `≤ ${TARGET_US} µs`,
          met: typical <= TARGET_US,
        },
      ],
    };
  },
};
