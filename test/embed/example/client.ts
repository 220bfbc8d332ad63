// An integrator's client for the exchange's add-allergy operation: builds the FHIR message Bundle, sends it in
// the {"content": "<Bundle JSON string>"} envelope, retries 429 and 5xx answers, and reads the response message.
import { randomUUID } from "node:crypto";

export interface Allergy {
  /** SNOMED CT code of the allergy, e.g. 91936005 (allergy to penicillin). */
  code: string;
  display: string;
  criticality?: "low" | "high" | "unable-to-assess";
}

export interface ClientOptions {
  /** Attempts in all when the exchange answers 429 or 5xx (default 3). */
  attempts?: number;
  /** Waits before a retry (default: a timer); tests pass their own to run without waiting. */
  wait?: (ms: number) => Promise<void>;
  /** HTTP (default: the global fetch). */
  fetch?: typeof fetch;
  /** This system's address, sent as MessageHeader.source.endpoint. */
  source?: string;
}

export type AddAllergyResult =
  | { ok: true; allergyId: string; messageId: string; attempts: number }
  | { ok: false; status: number; code: string; diagnostics: string[]; messageId: string; attempts: number };

interface Entry {
  fullUrl?: string;
  resource?: { resourceType: string; id?: string; [key: string]: unknown };
}

/** Records an allergy for the patient with this Emirates ID. */
export async function addAllergy(
  baseUrl: string,
  emiratesId: string,
  allergy: Allergy,
  options: ClientOptions = {},
): Promise<AddAllergyResult> {
  const {
    attempts = 3,
    wait = (ms) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
    fetch: http = fetch,
    source = "https://clinic.example.ae/ehr",
  } = options;
  const messageId = randomUUID();
  const patientUrl = `urn:uuid:${randomUUID()}`;
  const allergyUrl = `urn:uuid:${randomUUID()}`;
  const bundle = {
    resourceType: "Bundle",
    type: "message",
    timestamp: new Date().toISOString(),
    entry: [
      {
        fullUrl: `urn:uuid:${messageId}`,
        resource: {
          resourceType: "MessageHeader",
          id: messageId,
          eventCoding: { system: "https://sandbox.example.ae/events", code: "add-allergy" },
          source: { endpoint: source },
          focus: [{ reference: allergyUrl }],
        },
      },
      {
        fullUrl: allergyUrl,
        resource: {
          resourceType: "AllergyIntolerance",
          clinicalStatus: {
            coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", code: "active" }],
          },
          code: { coding: [{ system: "http://snomed.info/sct", code: allergy.code, display: allergy.display }] },
          ...(allergy.criticality ? { criticality: allergy.criticality } : {}),
          patient: { reference: patientUrl },
        },
      },
      {
        fullUrl: patientUrl,
        resource: { resourceType: "Patient", identifier: [{ system: "urn:ae:emirates-id", value: emiratesId }] },
      },
    ],
  };
  // The same message, with the same MessageHeader id, on every attempt: the exchange processes it once.
  const body = JSON.stringify({ content: JSON.stringify(bundle) });

  for (let attempt = 1; ; attempt++) {
    const response = await http(`${baseUrl}/uae-fhir/r4/$process-message`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    const answer = (await response.json()) as { resourceType?: string; entry?: Entry[]; issue?: unknown[] };
    const transient = response.status === 429 || response.status >= 500;
    if (transient && attempt < attempts) {
      await wait(Number(response.headers.get("retry-after") ?? "1") * 1000);
      continue;
    }
    return { ...readAnswer(response.status, answer), messageId, attempts: attempt };
  }
}

/** A response message (ok, or refused with an OperationOutcome entry), or a bare OperationOutcome. */
function readAnswer(status: number, answer: { resourceType?: string; entry?: Entry[]; issue?: unknown[] }) {
  const diagnosticsOf = (outcome: { issue?: unknown[] } | undefined) =>
    (outcome?.issue ?? []).map((i) => String((i as { diagnostics?: string }).diagnostics ?? ""));
  if (answer.resourceType !== "Bundle") {
    return { ok: false as const, status, code: "not-processed", diagnostics: diagnosticsOf(answer) };
  }
  const entries = answer.entry ?? [];
  const byUrl = (reference: string | undefined) => entries.find((e) => e.fullUrl === reference)?.resource;
  const header = entries[0]?.resource as {
    response?: { code: string; details?: { reference?: string } };
    focus?: Array<{ reference?: string }>;
  };
  const code = header.response?.code ?? "unknown";
  const allergyId = byUrl(header.focus?.[0]?.reference)?.id;
  if (code === "ok" && allergyId) return { ok: true as const, allergyId };
  const details = byUrl(header.response?.details?.reference) as { issue?: unknown[] } | undefined;
  return { ok: false as const, status, code, diagnostics: diagnosticsOf(details) };
}
