import type { AllergyIntolerance, Bundle, Patient, Task } from "fhir/r4.js";
import { envelope, example, focusOf, messageBundle, STANDARD } from "../support/messages.js";

export const EID = "urn:ae:emirates-id";
export const PATIENT_ID = "784-1979-7000001-0";

/** One message a client sent, with what it got back. */
export interface Exchange {
  step: string;
  messageId: string | undefined;
  source: string;
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary FHIR JSON
  body: any;
  text: string;
}

const patient = (): Patient => ({
  resourceType: "Patient",
  // A fresh id per message, as many clients do: the identifier is the key.
  id: crypto.randomUUID(),
  identifier: [{ system: EID, value: PATIENT_ID }],
});

const allergy = (): AllergyIntolerance => ({
  ...example<AllergyIntolerance>("allergyintolerance-example.json"),
  // An id the client chose: the key of this record on the client's side.
  id: "client-allergy-cashew",
  patient: { identifier: { system: EID, value: PATIENT_ID } },
});

const task = (): Task => ({
  resourceType: "Task",
  id: crypto.randomUUID(),
  status: "requested",
  intent: "order",
  priority: "routine",
  code: { coding: [{ system: "urn:uae-fhir-sandbox:task-kind", code: "measure" }], text: "Measure blood pressure" },
  description: "Measure blood pressure at home for 7 days",
  for: { identifier: { system: EID, value: PATIENT_ID } },
  performerType: [{ coding: [{ system: "http://snomed.info/sct", code: "224535009", display: "Registered nurse" }] }],
});

/**
 * A patient-profile and health-program session as an integrator's client
 * runs it: every message has fresh MessageHeader ids and fullUrls, the same
 * content otherwise; a later message uses an id from an earlier answer.
 * `source` is the client's MessageHeader.source.endpoint.
 */
export async function runSession(baseUrl: string, source: string): Promise<Exchange[]> {
  const exchanges: Exchange[] = [];
  const send = async (step: string, bundle: Bundle | string): Promise<Exchange> => {
    const res = await fetch(`${baseUrl}${STANDARD}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer client-secret-token" },
      body: typeof bundle === "string" ? bundle : envelope(bundle),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    const messageId = typeof bundle === "string" ? undefined : bundle.entry?.[0]?.resource?.id;
    const exchange = { step, messageId, source, status: res.status, body: JSON.parse(text), text };
    exchanges.push(exchange);
    return exchange;
  };
  const options = { source };
  const added = await send("add-allergy", messageBundle("add-allergy", [allergy()], options));
  const stored = focusOf(added.body)[0] as AllergyIntolerance;
  await send("view-patient-profile", messageBundle("view-patient-profile", [patient()], options));
  await send("add-task", messageBundle("add-task", [task()], options));
  await send("get-pending-tasks", messageBundle("get-pending-tasks", [patient()], options));
  await send(
    "update-allergy",
    messageBundle("update-allergy", [{ ...stored, criticality: "low" } as AllergyIntolerance], options),
  );
  // The profile again: same key content as before, a different answer (the allergy changed).
  await send("view-patient-profile again", messageBundle("view-patient-profile", [patient()], options));
  // Bad messages: a business refusal (unknown record) and one that cannot be routed (unknown event).
  await send(
    "update unknown allergy",
    messageBundle("update-allergy", [{ ...allergy(), id: "no-such-allergy" } as AllergyIntolerance], options),
  );
  await send("unknown event", messageBundle("no-such-event", [patient()], options));
  return exchanges;
}
