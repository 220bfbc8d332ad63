import type { Bundle, Patient, Reference, Resource } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { type Message, readMessage } from "../../src/envelope/message.js";
import { patientKeysOf } from "../../src/matching/patient-keys.js";
import { example, exampleFiles, messageBundle } from "../support/messages.js";

/** A Patient's keys as CONTRACT §6 gives them, written out: `system|value` per identifier with a value, then its id. */
function keysOf(patient: Patient): string[] {
  const keys = (patient.identifier ?? []).flatMap((i) => (i.value ? [`${i.system ?? ""}|${i.value}`] : []));
  return typeof patient.id === "string" ? [...keys, patient.id] : keys;
}

/**
 * The reference: every Patient entry's keys, then every focus resource's patient / subject / for reference resolved
 * (again, for one that names a Patient entry): the entry it names, a Patient/id, or an identifier.
 */
function reference(message: Message): string[] {
  const keys = new Set<string>();
  for (const entry of message.entries) {
    if (entry.resource.resourceType === "Patient") for (const key of keysOf(entry.resource as Patient)) keys.add(key);
  }
  for (const entry of message.focus) {
    for (const field of ["patient", "subject", "for"]) {
      const named = entry.resource[field] as Reference | undefined;
      if (!named) continue;
      const target = typeof named.reference === "string" ? message.resolve(named.reference) : undefined;
      const id = /(?:^|\/)Patient\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[^/]+)?$/.exec(named.reference ?? "")?.[1];
      const found =
        target?.resource.resourceType === "Patient"
          ? keysOf(target.resource as Patient)
          : id
            ? [id]
            : named.identifier?.value
              ? [`${named.identifier.system ?? ""}|${named.identifier.value}`]
              : [];
      for (const key of found) keys.add(key);
    }
  }
  return [...keys];
}

const EID = "urn:ae:emirates-id";
const patient = (id: string | undefined, ...values: string[]): Patient => ({
  resourceType: "Patient",
  ...(id ? { id } : {}),
  identifier: values.map((value) => ({ system: EID, value })),
});

/**
 * Messages naming patients every way there is: each HL7 example resource as the focus (its own references), the
 * same with its patient fields pointing at a Patient entry by fullUrl, by Patient/id, at a Patient that is not in the
 * message, by identifier; two patients; a Patient entry that is itself the focus.
 */
function messages(): Array<[string, Bundle]> {
  const cases: Array<[string, Bundle]> = [];
  for (const file of exampleFiles()) {
    const resource = example<Resource>(file);
    if (resource.resourceType === "Bundle") continue;
    cases.push([`${file} as it is`, messageBundle("add-allergy", [resource])]);
    const entryPatient = patient("p-1", "784-1990-1234567-6");
    for (const [how, ref] of [
      ["Patient/id of an entry", { reference: "Patient/p-1" }],
      ["Patient/id not in the message", { reference: "Patient/elsewhere" }],
      ["an identifier", { identifier: { system: EID, value: "784-1980-1111111-3" } }],
    ] as const) {
      const named = { ...resource, patient: ref, subject: ref, for: ref } as Resource;
      cases.push([`${file}, patient by ${how}`, messageBundle("add-allergy", [named, entryPatient], { focus: [0] })]);
    }
    // By the entry's fullUrl: the bundle's own urn:uuid.
    const focus = { ...resource } as Resource & { subject?: Reference };
    const bundle = messageBundle("add-allergy", [focus, patient(undefined, "784-1970-2222222-1")], { focus: [0] });
    focus.subject = { reference: bundle.entry?.[2]?.fullUrl as string };
    cases.push([`${file}, subject by fullUrl`, bundle]);
  }
  cases.push([
    "two patients, one the focus",
    messageBundle("view-patient-profile", [patient("a", "784-1990-1234567-6", "784-1980-1111111-3"), patient("b")]),
  ]);
  return cases;
}

describe("patientKeysOf", () => {
  it.each(messages())("%s: the same keys, in the same order, as resolving every reference", (_label, bundle) => {
    const message = readMessage(bundle as unknown as Record<string, unknown>).message as Message;
    expect(message).toBeDefined();
    expect(patientKeysOf(message)).toEqual(reference(message));
  });

  it.each([
    ["a string", "x"],
    ["an object", {}],
    ["a list holding null", [null]],
    ["a list of strings", ["x"]],
  ])(
    "a Patient.identifier that is %s (an invalid message): it fails, or not, as the reference does",
    (_label, identifier) => {
      const bundle = messageBundle("view-patient-profile", [{ resourceType: "Patient" }]);
      (bundle.entry?.[1]?.resource as unknown as Record<string, unknown>).identifier = identifier;
      const message = readMessage(bundle as unknown as Record<string, unknown>).message as Message;
      const outcome = (keys: () => string[]) => {
        try {
          return keys();
        } catch (error) {
          return `threw ${(error as Error).name}`;
        }
      };
      expect(outcome(() => patientKeysOf(message))).toEqual(outcome(() => reference(message)));
    },
  );
});
