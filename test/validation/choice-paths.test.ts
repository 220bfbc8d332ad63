import type { AllergyIntolerance, Bundle, Condition, Observation, Patient, Resource } from "fhir/r4.js";
import fhirpath from "fhirpath";
import r4 from "fhirpath/fhir-context/r4";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { example, messageBundle, post } from "../support/messages.js";

/**
 * Issue expressions name a choice element as FHIRPath does: the element and its type with `ofType()`
 * (`value.ofType(Quantity)`, R4's fhirpath.html), not the JSON key (`valueQuantity`). The expected expressions are
 * written by hand, and each one is evaluated with HL7's FHIRPath engine and its R4 model on the Bundle as sent: it
 * must find the node that was broken.
 */

// biome-ignore lint/suspicious/noExplicitAny: the cases break resources in ways their types forbid
type Loose = any;

interface Case {
  name: string;
  event: string;
  resources: () => Resource[];
  /** MessageHeader.focus: indexes into `resources` (default all). */
  focus?: number[];
  /** Which MessageHeader event to send, when not the case's own `event` (an unknown one). */
  code: string;
  expression: string;
  /** The node the expression must find: the value that was broken. */
  node: unknown;
}

const weight = (): Loose => example<Observation>("observation-example.json");
const pressure = (): Loose => example<Observation>("observation-example-bloodpressure.json");
const allergy = (): Loose => example<AllergyIntolerance>("allergyintolerance-example.json");
const condition = (): Loose => example<Condition>("condition-example.json");
const patient = (): Loose => example<Patient>("patient-example.json");

const cases: Case[] = [
  {
    name: "top-level value[x] (Observation.valueQuantity.value a string)",
    event: "add-measurement",
    resources: () => {
      const o = weight();
      o.valueQuantity.value = "70.0";
      return [o];
    },
    code: "structure",
    expression: "Bundle.entry[1].resource.value.ofType(Quantity).value",
    node: "70.0",
  },
  {
    name: "value[x] inside a backbone element (Observation.component[1].valueQuantity.value)",
    event: "add-measurement",
    resources: () => {
      const o = pressure();
      o.component[1].valueQuantity.value = "eighty";
      return [o];
    },
    code: "structure",
    expression: "Bundle.entry[1].resource.component[1].value.ofType(Quantity).value",
    node: "eighty",
  },
  {
    name: "an extension's value[x] (valueDateTime not a dateTime)",
    event: "add-allergy",
    resources: () => {
      const a = allergy();
      a.extension = [{ url: "https://sandbox.example.ae/x/recorded", valueDateTime: "yesterday" }];
      return [a];
    },
    code: "value",
    expression: "Bundle.entry[1].resource.extension[0].value.ofType(dateTime)",
    node: "yesterday",
  },
  {
    name: "a nested extension's value[x], then an element under it (valueCoding.code a number)",
    event: "add-allergy",
    resources: () => {
      const a = allergy();
      a.code.extension = [
        { url: "https://sandbox.example.ae/x/outer", extension: [{ url: "inner", valueCoding: { code: 42 } }] },
      ];
      return [a];
    },
    code: "structure",
    expression: "Bundle.entry[1].resource.code.extension[0].extension[0].value.ofType(Coding).code",
    node: 42,
  },
  {
    name: "deceased[x] (Patient.deceasedDateTime not a real date), a Patient entry that is not the focus",
    event: "add-allergy",
    resources: () => {
      const p = patient();
      delete p.deceasedBoolean;
      p.deceasedDateTime = "2020-02-30";
      return [allergy(), p];
    },
    focus: [0],
    code: "value",
    expression: "Bundle.entry[2].resource.deceased.ofType(dateTime)",
    node: "2020-02-30",
  },
  {
    name: "effective[x] (Observation.effectiveDateTime not a dateTime)",
    event: "add-measurement",
    resources: () => {
      const o = weight();
      o.effectiveDateTime = "last Tuesday";
      return [o];
    },
    code: "value",
    expression: "Bundle.entry[1].resource.effective.ofType(dateTime)",
    node: "last Tuesday",
  },
  {
    name: "onset[x] (Condition.onsetDateTime a number)",
    event: "add-history",
    resources: () => {
      const c = condition();
      c.onsetDateTime = 2012;
      return [c];
    },
    code: "structure",
    expression: "Bundle.entry[1].resource.onset.ofType(dateTime)",
    node: 2012,
  },
  {
    name: "onset[x] of a Quantity profile (AllergyIntolerance.onsetAge.value a string)",
    event: "add-allergy",
    resources: () => {
      const a = allergy();
      delete a.onsetDateTime;
      a.onsetAge = { value: "3", unit: "a", system: "http://unitsofmeasure.org", code: "a" };
      return [a];
    },
    code: "structure",
    expression: "Bundle.entry[1].resource.onset.ofType(Age).value",
    node: "3",
  },
  {
    name: "a choice primitive's extensions only (_effectiveDateTime with an empty extension, ext-1)",
    event: "add-measurement",
    resources: () => {
      const o = weight();
      delete o.effectiveDateTime;
      o._effectiveDateTime = { extension: [{ url: "http://hl7.org/fhir/StructureDefinition/data-absent-reason" }] };
      return [o];
    },
    code: "invariant",
    expression: "Bundle.entry[1].resource.effective.ofType(dateTime).extension[0]",
    node: { url: "http://hl7.org/fhir/StructureDefinition/data-absent-reason" },
  },
  {
    name: "MessageHeader.event[x] (an unknown event code)",
    event: "make-coffee",
    resources: () => [allergy()],
    code: "not-supported",
    expression: "Bundle.entry[0].resource.event.ofType(Coding).code",
    node: "make-coffee",
  },
  {
    name: "an operation's own check on value[x] (a body weight in cm)",
    event: "add-measurement",
    resources: () => {
      const o = weight();
      o.valueQuantity = { value: 80, unit: "cm", system: "http://unitsofmeasure.org", code: "cm" };
      return [o];
    },
    code: "value",
    expression: "Bundle.entry[1].resource.value.ofType(Quantity).code",
    node: "cm",
  },
];

describe("issue expressions name choice elements with ofType()", () => {
  it.each(cases)("$name", async (c) => {
    const bundle: Bundle = messageBundle(c.event, c.resources(), c.focus ? { focus: c.focus } : {});
    const reply = await post(createApp().app, bundle);
    expect(reply.status).toBe(400);
    const issues = reply.body.issue as Array<{ code: string; expression?: string[] }>;
    const found = issues.find((i) => i.expression?.includes(c.expression));
    expect(found, JSON.stringify(issues.map((i) => i.expression))).toBeDefined();
    expect(found?.code).toBe(c.code);
    // No expression of the answer names a choice element by its JSON key (valueQuantity, eventCoding, onsetAge …).
    for (const e of issues.flatMap((i) => i.expression ?? [])) {
      expect(e).not.toMatch(/\.(value|event|effective|onset|deceased)[A-Z]/);
    }
    // HL7's FHIRPath engine with its R4 model finds the broken node on the Bundle as sent.
    const result = fhirpath.evaluate(bundle, c.expression, undefined, r4);
    expect(result).toEqual([c.node]);
  });
});
