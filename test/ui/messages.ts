import type { AllergyIntolerance, Bundle, Patient } from "fhir/r4.js";
import { http } from "../cli/cli-process.js";
import { envelope, messageBundle, STANDARD } from "../support/messages.js";

/** A patient by a valid Emirates ID (784-YYYY-NNNNNNN-C, Luhn check digit), as the README's example. */
export const EMIRATES_ID = "784-1990-1234567-6";

export const patient = (): Patient => ({
  resourceType: "Patient",
  identifier: [{ system: "urn:ae:emirates-id", value: EMIRATES_ID }],
});

/** add-allergy of penicillin for the patient; the allergy's `patient` refers to the Patient entry. */
export function addAllergy(change: (allergy: AllergyIntolerance) => void = () => undefined): Bundle {
  const allergy: AllergyIntolerance = {
    resourceType: "AllergyIntolerance",
    clinicalStatus: {
      coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", code: "active" }],
    },
    verificationStatus: {
      coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-verification", code: "confirmed" }],
    },
    code: { coding: [{ system: "http://snomed.info/sct", code: "91936005", display: "Allergy to penicillin" }] },
    patient: { reference: "" },
  };
  const bundle = messageBundle("add-allergy", [allergy, patient()], { focus: [0] });
  allergy.patient = { reference: bundle.entry?.[2]?.fullUrl as string };
  change(allergy);
  return bundle;
}

/** POSTs a message to a running sandbox; the answer and its journal call id. */
export async function send(url: string, bundle: Bundle) {
  const reply = await http(`${url}${STANDARD}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: envelope(bundle),
  });
  return { ...reply, callId: reply.headers.get("x-sandbox-call-id") as string };
}
