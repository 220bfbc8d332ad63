// The messages the benchmarks send, as envelope strings with a placeholder
// for the MessageHeader id (each request fills in its own, so no answer is a
// replay), and the canned answer of the bare Hono server.

export const MESSAGE_ID = "__MESSAGE_ID__";

/** A valid Emirates ID (Luhn check digit) for serial n of birth year 1990, for benchmark patients. */
export function benchEmiratesId(n) {
  const digits = `7841990${String(n).padStart(7, "0")}`;
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 0) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return `784-1990-${digits.slice(7)}-${(10 - (sum % 10)) % 10}`;
}

/** The add-allergy message every request sends, its MessageHeader id to be filled in. */
export function addAllergyEnvelope(emiratesId = "784-1990-1234567-6") {
  const bundle = {
    resourceType: "Bundle",
    type: "message",
    timestamp: "2026-01-15T09:30:00+04:00",
    entry: [
      {
        fullUrl: "urn:uuid:0c3a5a3e-6f3e-4b8e-9d3a-1f2b3c4d5e01",
        resource: {
          resourceType: "MessageHeader",
          id: MESSAGE_ID,
          eventCoding: { system: "https://sandbox.example.ae/events", code: "add-allergy" },
          source: { endpoint: "https://clinic.example.ae/ehr" },
          focus: [{ reference: "urn:uuid:7d9f1c2a-3b4e-4f5a-8b6c-9d0e1f2a3b02" }],
        },
      },
      {
        fullUrl: "urn:uuid:7d9f1c2a-3b4e-4f5a-8b6c-9d0e1f2a3b02",
        resource: {
          resourceType: "AllergyIntolerance",
          clinicalStatus: {
            coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", code: "active" }],
          },
          verificationStatus: {
            coding: [
              { system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-verification", code: "confirmed" },
            ],
          },
          code: { coding: [{ system: "http://snomed.info/sct", code: "91936005", display: "Allergy to penicillin" }] },
          patient: { reference: "urn:uuid:2a4b6c8d-0e1f-4a3b-9c5d-7e9f1a3b5c03" },
        },
      },
      {
        fullUrl: "urn:uuid:2a4b6c8d-0e1f-4a3b-9c5d-7e9f1a3b5c03",
        resource: {
          resourceType: "Patient",
          identifier: [{ system: "urn:ae:emirates-id", value: emiratesId }],
        },
      },
    ],
  };
  return JSON.stringify({ content: JSON.stringify(bundle) });
}

/**
 * Messages the sandbox refuses with a 400, for a mixed load: the add-allergy
 * message with a wrong Emirates ID check digit (an R4/Emirates-ID validation
 * error), with an unknown element, and a body that is not JSON.
 */
export function invalidEnvelopes() {
  const valid = addAllergyEnvelope();
  return [
    valid.replace("784-1990-1234567-6", "784-1990-1234567-0"),
    valid.replace('\\"clinicalStatus\\"', '\\"clinicalStatusX\\"'),
    `{"content": "{\\"resourceType\\": \\"Bundle\\", ${MESSAGE_ID}`,
  ];
}

/** A canned ok response message of about 2 KB, what the bare Hono server answers. */
export function cannedResponse() {
  const base = "http://127.0.0.1/uae-fhir/r4";
  const allergyId = "546673c5-7fc4-4593-a3fa-6495b681fe50";
  return JSON.stringify({
    resourceType: "Bundle",
    id: "b3c1e0a2-8f4d-4c6b-9a7e-2d5f1b3c4e6a",
    type: "message",
    timestamp: "2026-01-15T09:30:01.123Z",
    entry: [
      {
        fullUrl: "urn:uuid:9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b",
        resource: {
          resourceType: "MessageHeader",
          id: "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b",
          eventCoding: { system: "https://sandbox.example.ae/events", code: "add-allergy" },
          destination: [{ endpoint: "https://clinic.example.ae/ehr" }],
          source: {
            name: "uae-fhir-sandbox",
            software: "uae-fhir-sandbox",
            version: "0.1.0",
            endpoint: `${base}/$process-message`,
          },
          response: { identifier: "0c3a5a3e-6f3e-4b8e-9d3a-1f2b3c4d5e01", code: "ok" },
          focus: [{ reference: `${base}/AllergyIntolerance/${allergyId}` }],
        },
      },
      {
        fullUrl: `${base}/AllergyIntolerance/${allergyId}`,
        resource: {
          resourceType: "AllergyIntolerance",
          id: allergyId,
          meta: { versionId: "1", lastUpdated: "2026-01-15T09:30:01.120Z" },
          clinicalStatus: {
            coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", code: "active" }],
          },
          verificationStatus: {
            coding: [
              { system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-verification", code: "confirmed" },
            ],
          },
          type: "allergy",
          category: ["medication"],
          criticality: "high",
          code: { coding: [{ system: "http://snomed.info/sct", code: "91936005", display: "Allergy to penicillin" }] },
          patient: { reference: "Patient/6ac3d8d3-7344-57b0-96e2-ee32be267df0" },
          recordedDate: "2026-01-15T09:30:01.120Z",
          reaction: [
            {
              substance: {
                coding: [
                  { system: "http://www.nlm.nih.gov/research/umls/rxnorm", code: "7980", display: "Penicillin G" },
                ],
              },
              manifestation: [
                { coding: [{ system: "http://snomed.info/sct", code: "271807003", display: "Eruption of skin" }] },
              ],
              severity: "moderate",
            },
          ],
          note: [{ text: "Recorded by the clinic system during the benchmark; a canned answer of realistic size." }],
        },
      },
    ],
  });
}

/** Patients of the shipped scenarios (scenarios/00-test-patients.yaml); elsewhere they are generated on first use. */
export const PATIENTS = ["784-1985-1000001-5", "784-1992-1000002-4", "784-1960-1000004-8"];

/** view-patient-profile for an Emirates ID, its MessageHeader id to be filled in (MESSAGE_ID). */
export function viewProfileEnvelope(emiratesId) {
  const patientUrl = "urn:uuid:5b1f0c7e-2d4a-4e8b-9f3c-6a7d8e9f0a11";
  const bundle = {
    resourceType: "Bundle",
    type: "message",
    timestamp: "2026-01-15T09:30:00+04:00",
    entry: [
      {
        fullUrl: "urn:uuid:3c5e7a9b-1d2f-4a6c-8e0b-2c4d6e8f0a12",
        resource: {
          resourceType: "MessageHeader",
          id: MESSAGE_ID,
          eventCoding: { system: "https://sandbox.example.ae/events", code: "view-patient-profile" },
          source: { endpoint: "https://clinic.example.ae/ehr" },
          focus: [{ reference: patientUrl }],
        },
      },
      {
        fullUrl: patientUrl,
        resource: { resourceType: "Patient", identifier: [{ system: "urn:ae:emirates-id", value: emiratesId }] },
      },
    ],
  };
  return JSON.stringify({ content: JSON.stringify(bundle) });
}

/**
 * Request bodies for `count` messages that cycle through `envelopes`, each
 * with the MessageHeader id `${prefix}-${i}`: payload(i) for load.mjs's drive.
 */
export function uniqueIds(envelopes, prefix) {
  return (i) => envelopes[i % envelopes.length].replace(MESSAGE_ID, `${prefix}-${i}`);
}

/**
 * subscribe-order-notifications from pharmacy `licence`: a rest-hook
 * Subscription to `endpoint` and the pharmacy's Organization (identifier =
 * licence), as test/orders/pharmacy-client.ts builds it.
 */
export function subscribeEnvelope(licence, endpoint, messageId) {
  const subscriptionUrl = "urn:uuid:8a6b4c2d-0e1f-4a3b-9c5d-7e9f1a3b5c21";
  const organizationUrl = "urn:uuid:9b7c5d3e-1f2a-4b4c-8d6e-8f0a2b4c6d22";
  const bundle = {
    resourceType: "Bundle",
    type: "message",
    timestamp: "2026-01-15T09:30:00+04:00",
    entry: [
      {
        fullUrl: `urn:uuid:${messageId}`,
        resource: {
          resourceType: "MessageHeader",
          id: messageId,
          eventCoding: { system: "https://sandbox.example.ae/events", code: "subscribe-order-notifications" },
          source: { endpoint: "https://pharmacy.example.ae/fhir" },
          focus: [{ reference: subscriptionUrl }, { reference: organizationUrl }],
        },
      },
      {
        fullUrl: subscriptionUrl,
        resource: {
          resourceType: "Subscription",
          status: "requested",
          reason: "Drug order fulfillment requests",
          criteria: "Task?code=fulfill",
          channel: { type: "rest-hook", endpoint, payload: "application/fhir+json", header: [`X-Api-Key: ${licence}`] },
        },
      },
      {
        fullUrl: organizationUrl,
        resource: {
          resourceType: "Organization",
          id: `org-${licence}`,
          identifier: [{ system: "urn:ae:pharmacy-licence", value: licence }],
          name: `Pharmacy ${licence}`,
        },
      },
    ],
  };
  return JSON.stringify({ content: JSON.stringify(bundle) });
}
