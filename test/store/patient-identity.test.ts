import type { AllergyIntolerance, Bundle, Patient } from "fhir/r4.js";
import { describe, expect, it, vi } from "vitest";
import { type Message, readMessage } from "../../src/envelope/message.js";
import { patientKeysOf } from "../../src/matching/patient-keys.js";
import { identityOfEntry, identityOfPatient, identityOfReference } from "../../src/store/patient-identity.js";
import { messageBundle } from "../support/messages.js";

const patient: Patient = { resourceType: "Patient", identifier: [{ system: "urn:ae:emirates-id", value: "784-1" }] };

/** The allergy's patient Reference (the message's first focus). */
const patientRef = (message: Message) =>
  (message.focus[0]?.resource as unknown as AllergyIntolerance | undefined)?.patient;

function allergyMessage() {
  const bundle = messageBundle("add-allergy", [
    { resourceType: "AllergyIntolerance", patient: { reference: "urn:uuid:p" } } as never,
    patient,
  ]) as Bundle;
  (bundle.entry?.[2] as { fullUrl: string }).fullUrl = "urn:uuid:p";
  const message = readMessage(bundle as never).message;
  if (!message) throw new Error("not a message");
  return message;
}

describe("a message's patient identities", () => {
  it("are worked out once per message: the rules' patientKeys and the handler share them", () => {
    const message = allergyMessage();
    const resolve = vi.spyOn(message, "resolve");
    const reference = patientRef(message);

    expect(patientKeysOf(message)).toEqual(["urn:ae:emirates-id|784-1"]);
    const first = identityOfReference(reference, message);
    const again = identityOfReference(reference, message);

    expect(again).toBe(first);
    expect(first).toEqual(identityOfPatient(patient));
    expect(identityOfEntry(message.entries[2]?.resource as Patient, message)).toBe(first);
    expect(resolve).toHaveBeenCalledTimes(1);
  });

  it("of another message are its own", () => {
    const one = allergyMessage();
    const other = allergyMessage();
    const ref = patientRef;

    expect(identityOfReference(ref(other), other)).not.toBe(identityOfReference(ref(one), one));
    expect(identityOfReference(ref(other), other)).toEqual(identityOfReference(ref(one), one));
  });
});
