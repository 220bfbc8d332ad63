import type {
  AllergyIntolerance,
  Bundle,
  Condition,
  MedicationDispense,
  MedicationRequest,
  Observation,
  Patient,
  Procedure,
  Resource,
  Subscription,
  Task,
} from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { EMIRATES_ID_SYSTEM as EID, emiratesId } from "../support/emirates-id.js";
import {
  detailsOutcome,
  type ExpectedIssue,
  expectIssueAt,
  expectNodeAt,
  expectRefused,
  expectWellFormedIssues,
} from "../support/fhir-issues.js";
import { example, messageBundle, post, responseHeader } from "../support/messages.js";
import { FOCUS, pharmacyMessage, pharmacyOrganization, sandboxWith } from "../support/validation-app.js";

/**
 * One table per rule family of R4 validation (CONTRACT §11), with the agreed
 * IssueType code and FHIRPath of each: every message below has exactly the
 * one problem named (the rest is valid R4) and is refused with 400.
 * Expected codes and allowed values come from the FHIR R4 specification.
 */

// biome-ignore lint/suspicious/noExplicitAny: the edits below write invalid R4 on purpose
type Edit = (r: any) => void;

const who = () => ({ identifier: { system: EID, value: emiratesId(1980, 5_550_001) } });
const SNOMED = "http://snomed.info/sct";
const LOINC = "http://loinc.org";
const UCUM = "http://unitsofmeasure.org";

const allergy = (): AllergyIntolerance => ({
  resourceType: "AllergyIntolerance",
  clinicalStatus: {
    coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", code: "active" }],
  },
  verificationStatus: {
    coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-verification", code: "confirmed" }],
  },
  type: "allergy",
  category: ["medication"],
  criticality: "high",
  code: { coding: [{ system: SNOMED, code: "91936005", display: "Allergy to penicillin" }] },
  patient: who(),
  recordedDate: "2026-01-15",
  reaction: [{ manifestation: [{ coding: [{ system: SNOMED, code: "247472004", display: "Hives" }] }] }],
});

const weight = (): Observation => ({
  resourceType: "Observation",
  status: "final",
  category: [
    { coding: [{ system: "http://terminology.hl7.org/CodeSystem/observation-category", code: "vital-signs" }] },
  ],
  code: { coding: [{ system: LOINC, code: "29463-7", display: "Body weight" }] },
  subject: who(),
  effectiveDateTime: "2026-01-15T09:30:00+04:00",
  valueQuantity: { value: 70, unit: "kg", system: UCUM, code: "kg" },
});

const patient = (): Patient => ({
  resourceType: "Patient",
  identifier: [{ system: EID, value: emiratesId(1980, 5_550_002) }],
  name: [{ family: "Al Mansoori", given: ["Aisha"] }],
  gender: "female",
  birthDate: "1980-04-12",
});

const condition = (): Condition => ({
  resourceType: "Condition",
  clinicalStatus: {
    coding: [{ system: "http://terminology.hl7.org/CodeSystem/condition-clinical", code: "active" }],
  },
  verificationStatus: {
    coding: [{ system: "http://terminology.hl7.org/CodeSystem/condition-ver-status", code: "confirmed" }],
  },
  category: [
    { coding: [{ system: "http://terminology.hl7.org/CodeSystem/condition-category", code: "problem-list-item" }] },
  ],
  code: { coding: [{ system: SNOMED, code: "195967001", display: "Asthma" }] },
  subject: who(),
});

const procedure = (): Procedure => ({
  resourceType: "Procedure",
  status: "completed",
  code: { coding: [{ system: SNOMED, code: "80146002", display: "Appendectomy" }] },
  subject: who(),
  performedDateTime: "2025-11-02",
});

const task = (): Task => ({
  resourceType: "Task",
  status: "ready",
  intent: "order",
  priority: "routine",
  code: { coding: [{ system: "urn:uae-fhir-sandbox:task-kind", code: "assessment" }], text: "Diabetic foot check" },
  for: who(),
  performerType: [{ text: "Physician" }],
});

const subscription = (): Subscription => ({
  resourceType: "Subscription",
  status: "requested",
  reason: "Drug order fulfillment requests",
  criteria: "Task?code=fulfill",
  channel: { type: "rest-hook", endpoint: "http://127.0.0.1:9/hook", payload: "application/fhir+json" },
});

interface Case {
  name: string;
  event: string;
  base: () => Resource;
  edit: Edit;
  /** Builds the message around the edited resource; default messageBundle(event, [resource]). */
  message?: (resource: Resource) => Bundle;
  /** Expressions relative to the edited resource ("" = the resource) unless they start with "Bundle". */
  issues: ExpectedIssue[];
}

const at = (path: string) => (path.startsWith("Bundle") ? path : `${FOCUS}${path}`);

async function expectOnlyRefusal(c: Case) {
  const { app } = sandboxWith();
  const resource = c.base();
  c.edit(resource);
  const request = (c.message ?? ((r: Resource) => messageBundle(c.event, [r])))(resource);

  // The test's own FHIRPaths find the nodes it edited (checked before the sandbox answers).
  for (const issue of c.issues) expectNodeAt(request, { ...issue, expression: at(issue.expression) });

  const outcome = expectRefused(await post(app, request));

  for (const issue of c.issues) expectIssueAt(outcome, request, { ...issue, expression: at(issue.expression) });
  expectWellFormedIssues(outcome, request);
}

const run = (cases: Case[]) =>
  it.each(cases.map((c) => [c.name, c] as const))("%s", (_name, c) => expectOnlyRefusal(c));

describe("unknown elements: structure at the element", () => {
  run([
    {
      name: "AllergyIntolerance.severityScore",
      event: "add-allergy",
      base: allergy,
      edit: (r) => {
        r.severityScore = 3;
      },
      issues: [{ code: "structure", expression: ".severityScore", target: 3, says: [/severityScore/] }],
    },
    {
      name: "Patient.name[0].nickname (inside a datatype)",
      event: "view-patient-profile",
      base: patient,
      edit: (r) => {
        r.name[0].nickname = "Ash";
      },
      issues: [{ code: "structure", expression: ".name[0].nickname", target: "Ash", says: [/nickname/] }],
    },
    {
      name: 'a bare choice name: Observation "value": "70.0" (at the resource, naming the choices)',
      event: "add-measurement",
      base: weight,
      edit: (r) => {
        delete r.valueQuantity;
        r.value = "70.0";
      },
      issues: [{ code: "structure", expression: "", says: [/\bvalue\b/, /valueQuantity/, /valueString/] }],
    },
    {
      name: "a choice type the element does not allow: Observation.effectiveBoolean",
      event: "add-measurement",
      base: weight,
      edit: (r) => {
        delete r.effectiveDateTime;
        r.effectiveBoolean = true;
      },
      issues: [{ code: "structure", expression: ".effectiveBoolean", target: true, says: [/effectiveBoolean/] }],
    },
  ]);
});

describe("wrong JSON kind: structure at the node", () => {
  run([
    {
      name: "a string where a CodeableConcept belongs (AllergyIntolerance.code)",
      event: "add-allergy",
      base: allergy,
      edit: (r) => {
        r.code = "penicillin";
      },
      issues: [{ code: "structure", expression: ".code", target: "penicillin", says: [/CodeableConcept/] }],
    },
    {
      name: "a single object where an array belongs (Patient.name)",
      event: "view-patient-profile",
      base: patient,
      edit: (r) => {
        r.name = { family: "Al Mansoori" };
      },
      issues: [{ code: "structure", expression: ".name", target: { family: "Al Mansoori" }, says: [/name/, /array/i] }],
    },
    {
      name: "an array where a single value belongs (Observation.subject)",
      event: "add-measurement",
      base: weight,
      edit: (r) => {
        r.subject = [r.subject];
      },
      issues: [{ code: "structure", expression: ".subject", says: [/subject/] }],
    },
  ]);
});

describe("cardinality: a missing required element is `required` at its parent, too many values `structure`", () => {
  run([
    {
      name: "Observation without status",
      event: "add-measurement",
      base: weight,
      edit: (r) => {
        delete r.status;
      },
      issues: [{ code: "required", expression: "", says: [/status/] }],
    },
    {
      name: "Task without intent",
      event: "add-task",
      base: task,
      edit: (r) => {
        delete r.intent;
      },
      issues: [{ code: "required", expression: "", says: [/intent/] }],
    },
    {
      name: "AllergyIntolerance.reaction without manifestation (parent: the reaction)",
      event: "add-allergy",
      base: allergy,
      edit: (r) => {
        r.reaction = [{ severity: "mild" }];
      },
      issues: [{ code: "required", expression: ".reaction[0]", target: { severity: "mild" }, says: [/manifestation/] }],
    },
    {
      name: "two values for Patient.birthDate (max 1)",
      event: "view-patient-profile",
      base: patient,
      edit: (r) => {
        r.birthDate = ["1980-04-12", "1980-04-13"];
      },
      issues: [{ code: "structure", expression: ".birthDate", says: [/birthDate/] }],
    },
  ]);
});

describe("two values for one choice element: structure at their parent (FHIRPath reaches only one)", () => {
  run([
    {
      name: "Observation valueQuantity and valueString",
      event: "add-measurement",
      base: weight,
      edit: (r) => {
        r.valueString = "seventy";
      },
      issues: [{ code: "structure", expression: "", says: [/value\[x\]/, /valueQuantity/, /valueString/] }],
    },
  ]);
});

const photo = { contentType: "image/png", url: "https://clinic.example.ae/photos/1.png" };

/**
 * [name, event, base, path from the resource, bad value, IssueType code, preparation]: each sets one primitive
 * to a bad value. The name starts with the R4 type, which the diagnostics must name (a JSON-kind error may name
 * the JSON kind instead).
 */
const PRIMITIVES: Array<[string, string, () => Resource, string, unknown, "value" | "structure", Edit?]> = [
  ["date 15/01/1990", "view-patient-profile", patient, ".birthDate", "15/01/1990", "value"],
  ["date 2023-02-30 (no such day)", "view-patient-profile", patient, ".birthDate", "2023-02-30", "value"],
  ["dateTime yesterday", "add-measurement", weight, ".effectiveDateTime", "yesterday", "value"],
  ["instant without a timezone", "add-measurement", weight, ".issued", "2026-01-15T09:30:00", "value"],
  [
    "time 25:00:00",
    "add-measurement",
    weight,
    ".valueTime",
    "25:00:00",
    "value",
    (r) => {
      delete r.valueQuantity;
    },
  ],
  ["code with a leading space", "add-measurement", weight, ".status", " final", "value"],
  ["id with an underscore", "add-measurement", weight, ".id", "obs_1", "value"],
  ["uri with a space", "add-measurement", weight, ".code.coding[0].system", "http://loinc .org", "value"],
  [
    "oid without urn:oid:",
    "view-patient-profile",
    patient,
    ".extension[0].valueOid",
    "1.2.3",
    "value",
    (r) => {
      r.extension = [{ url: "https://sandbox.example.ae/fhir/StructureDefinition/test-oid" }];
    },
  ],
  [
    "uuid that is not one",
    "view-patient-profile",
    patient,
    ".extension[0].valueUuid",
    "urn:uuid:1234",
    "value",
    (r) => {
      r.extension = [{ url: "https://sandbox.example.ae/fhir/StructureDefinition/test-uuid" }];
    },
  ],
  ["decimal given as a string", "add-measurement", weight, ".valueQuantity.value", "70.5", "structure"],
  [
    "integer given as a string",
    "add-measurement",
    weight,
    ".valueInteger",
    "70",
    "structure",
    (r) => {
      delete r.valueQuantity;
    },
  ],
  [
    "integer 1.5",
    "add-measurement",
    weight,
    ".valueInteger",
    1.5,
    "value",
    (r) => {
      delete r.valueQuantity;
    },
  ],
  [
    "positiveInt 0",
    "add-task",
    task,
    ".restriction.repetitions",
    0,
    "value",
    (r) => {
      r.restriction = {};
    },
  ],
  [
    "unsignedInt -1",
    "view-patient-profile",
    patient,
    ".photo[0].size",
    -1,
    "value",
    (r) => {
      r.photo = [{ ...photo }];
    },
  ],
  ['boolean "true" as a string', "view-patient-profile", patient, ".active", "true", "structure"],
  [
    "base64Binary that is not base64",
    "view-patient-profile",
    patient,
    ".photo[0].data",
    "not base64!",
    "value",
    (r) => {
      r.photo = [{ contentType: "image/png" }];
    },
  ],
  [
    "markdown empty",
    "add-allergy",
    allergy,
    ".note[0].text",
    "",
    "value",
    (r) => {
      r.note = [{}];
    },
  ],
  ["string of whitespace only", "view-patient-profile", patient, ".name[0].family", "   ", "value"],
];

/** Sets the value at a simple path of the kind used above (.a.b[0].c). */
function setAt(resource: Resource, path: string, value: unknown): void {
  const steps = path
    .slice(1)
    .split(".")
    .flatMap((s) => {
      const m = /^(\w+)\[(\d+)\]$/.exec(s);
      return m ? [m[1] as string, Number(m[2])] : [s];
    });
  // biome-ignore lint/suspicious/noExplicitAny: walks arbitrary JSON
  let node: any = resource;
  for (const s of steps.slice(0, -1)) node = node[s];
  node[steps.at(-1) as string | number] = value;
}

describe("primitive formats (the R4 regular expressions): value at the node, structure for the wrong JSON kind", () => {
  run(
    PRIMITIVES.map(([name, event, base, path, bad, code, prepare]) => ({
      name: `${name}: ${path} = ${JSON.stringify(bad)}`,
      event,
      base,
      edit: (r) => {
        prepare?.(r);
        setAt(r, path, bad);
      },
      issues: [
        {
          code,
          expression: path,
          target: bad,
          says: [new RegExp(`${name.split(" ")[0]}${code === "structure" ? "|number|boolean" : ""}`)],
        },
      ],
    })),
  );
});

const dispenseWith = (request: MedicationRequest) => (dispense: Resource) => {
  const org = pharmacyOrganization();
  return messageBundle("send-dispense-summary", [dispense, org, request], {
    focus: [0],
    header: { sender: { reference: `Organization/${org.id}` } },
  });
};

const dispense = (): MedicationDispense => ({
  ...example<MedicationDispense>("medicationdispense0302.json"),
  status: "completed",
  authorizingPrescription: [{ reference: "MedicationRequest/medrx0302" }],
});

/** A MedicationRequest (HL7 medicationrequest0302) sent along a dispense summary, at Bundle.entry[3], edited. */
const medicationRequestCase = (field: "status" | "intent" | "priority", bad: string, allowed: RegExp[]): Case => {
  const request = example<MedicationRequest>("medicationrequest0302.json");
  (request as unknown as Record<string, unknown>)[field] = bad;
  return {
    name: `MedicationRequest.${field} ${bad} (an entry beside the focus)`,
    event: "send-dispense-summary",
    base: dispense,
    edit: () => undefined,
    message: dispenseWith(request),
    issues: [{ code: "code-invalid", expression: `Bundle.entry[3].resource.${field}`, target: bad, says: allowed }],
  };
};

const bindingCase = (
  name: string,
  event: string,
  base: () => Resource,
  path: string,
  bad: unknown,
  allowed: RegExp[],
  message?: (r: Resource) => Bundle,
): Case => ({
  name: `${name}: ${path} = ${JSON.stringify(bad)}`,
  event,
  base,
  edit: (r) => setAt(r, path, bad),
  ...(message ? { message } : {}),
  issues: [{ code: "code-invalid", expression: path, target: bad, says: allowed }],
});

describe("required bindings: code-invalid at the code (a Coding's code; the CodeableConcept when no coding is from the value set)", () => {
  run([
    bindingCase(
      "AllergyIntolerance clinical status",
      "add-allergy",
      allergy,
      ".clinicalStatus.coding[0].code",
      "bogus",
      [/active/, /resolved/],
    ),
    bindingCase("AllergyIntolerance category", "add-allergy", allergy, ".category[0]", "drug", [/food/, /medication/]),
    bindingCase("AllergyIntolerance criticality", "add-allergy", allergy, ".criticality", "severe", [
      /low/,
      /unable-to-assess/,
    ]),
    bindingCase("AllergyIntolerance type", "add-allergy", allergy, ".type", "allergic", [/allergy/, /intolerance/]),
    bindingCase("AllergyIntolerance reaction severity", "add-allergy", allergy, ".reaction[0].severity", "extreme", [
      /mild/,
      /moderate/,
      /severe/,
    ]),
    bindingCase("Observation status", "add-measurement", weight, ".status", "done", [/final/, /amended/]),
    bindingCase("Condition clinical status", "add-history", condition, ".clinicalStatus.coding[0].code", "bogus", [
      /active/,
      /remission/,
    ]),
    bindingCase(
      "Condition verification status",
      "add-history",
      condition,
      ".verificationStatus.coding[0].code",
      "bogus",
      [/confirmed/, /refuted/],
    ),
    {
      name: "Condition clinical status coded only in another system: at the CodeableConcept",
      event: "add-history",
      base: condition,
      edit: (r) => {
        r.clinicalStatus = { coding: [{ system: "https://clinic.example.ae/status", code: "active" }] };
      },
      issues: [
        {
          code: "code-invalid",
          expression: ".clinicalStatus",
          target: { coding: [{ system: "https://clinic.example.ae/status", code: "active" }] },
          says: [/condition-clinical/],
        },
      ],
    },
    bindingCase("Procedure status", "add-history", procedure, ".status", "finished", [/completed/, /in-progress/]),
    bindingCase("Task status", "add-task", task, ".status", "whatever", [/requested/, /ready/]),
    bindingCase("Task intent", "add-task", task, ".intent", "whatever", [/order/, /plan/]),
    bindingCase("Task priority", "add-task", task, ".priority", "high", [/routine/, /stat/]),
    bindingCase("Patient gender", "view-patient-profile", patient, ".gender", "M", [/male/, /female/]),
    medicationRequestCase("status", "done", [/active/, /completed/]),
    medicationRequestCase("intent", "whatever", [/order/, /proposal/]),
    medicationRequestCase("priority", "high", [/routine/, /stat/]),
    bindingCase(
      "Subscription status",
      "subscribe-order-notifications",
      subscription,
      ".status",
      "on",
      [/requested/, /active/],
      (r) => pharmacyMessage("subscribe-order-notifications", [r]),
    ),
    bindingCase(
      "Subscription channel type",
      "subscribe-order-notifications",
      subscription,
      ".channel.type",
      "webhook",
      [/rest-hook/, /websocket/],
      (r) => pharmacyMessage("subscribe-order-notifications", [r]),
    ),
    {
      name: "MessageHeader.response.code of the request",
      event: "add-allergy",
      base: allergy,
      edit: () => undefined,
      message: (r) => {
        const bundle = messageBundle("add-allergy", [r]);
        (bundle.entry?.[0]?.resource as { response?: unknown }).response = {
          identifier: crypto.randomUUID(),
          code: "fine",
        };
        return bundle;
      },
      issues: [
        {
          code: "code-invalid",
          expression: "Bundle.entry[0].resource.response.code",
          target: "fine",
          says: [/ok/, /transient-error/, /fatal-error/],
        },
      ],
    },
  ]);
});

describe("extensible bindings only warn", () => {
  it("Condition.category coded only in another system: 200 ok, a code-invalid warning in response.details", async () => {
    const { app } = sandboxWith();
    const history = condition();
    history.category = [{ coding: [{ system: "https://clinic.example.ae/categories", code: "history" }] }];
    const request = messageBundle("add-history", [history]);

    const reply = await post(app, request);

    const outcome = detailsOutcome(reply);
    expectIssueAt(outcome, request, {
      code: "code-invalid",
      severity: "warning",
      expression: `${FOCUS}.category[0]`,
      target: history.category[0],
    });
    expect((outcome.issue ?? []).filter((i) => i.severity === "error" || i.severity === "fatal")).toEqual([]);
    expect(responseHeader(reply.body).focus?.length).toBeGreaterThan(0);
  });
});

const invariant = (key: string, expression: string, target?: unknown): ExpectedIssue => ({
  code: "invariant",
  expression,
  ...(target === undefined ? {} : { target }),
  says: [new RegExp(`^${key}: `)],
});

describe("invariants: `invariant` at the node the invariant is about, diagnostics starting with its key", () => {
  run([
    {
      name: "ait-2: an entered-in-error AllergyIntolerance with a clinicalStatus",
      event: "add-allergy",
      base: allergy,
      edit: (r) => {
        r.verificationStatus.coding[0].code = "entered-in-error";
      },
      issues: [invariant("ait-2", "")],
    },
    {
      name: "con-4: an abated Condition still active",
      event: "add-history",
      base: condition,
      edit: (r) => {
        r.abatementDateTime = "2025-12-01";
      },
      issues: [invariant("con-4", "")],
    },
    {
      name: "con-5: an entered-in-error Condition with a clinicalStatus",
      event: "add-history",
      base: condition,
      edit: (r) => {
        r.verificationStatus.coding[0].code = "entered-in-error";
      },
      issues: [invariant("con-5", "")],
    },
    {
      name: "obs-6: dataAbsentReason together with a value",
      event: "add-measurement",
      base: weight,
      edit: (r) => {
        r.dataAbsentReason = {
          coding: [{ system: "http://terminology.hl7.org/CodeSystem/data-absent-reason", code: "unknown" }],
        };
      },
      issues: [invariant("obs-6", "")],
    },
    {
      name: "obs-7: a value and a component with the Observation's own code",
      event: "add-measurement",
      base: weight,
      edit: (r) => {
        r.component = [
          { code: structuredClone(r.code), valueQuantity: { value: 70, unit: "kg", system: UCUM, code: "kg" } },
        ];
      },
      issues: [invariant("obs-7", "")],
    },
    {
      name: "ref-1: a #x reference with no contained x (at the Reference)",
      event: "add-allergy",
      base: allergy,
      edit: (r) => {
        r.recorder = { reference: "#x" };
      },
      issues: [invariant("ref-1", ".recorder", { reference: "#x" })],
    },
    {
      name: "qty-3: a Quantity code without a system (at the Quantity)",
      event: "add-measurement",
      base: weight,
      edit: (r) => {
        delete r.valueQuantity.system;
      },
      issues: [invariant("qty-3", ".valueQuantity", { value: 70, unit: "kg", code: "kg" })],
    },
    {
      name: "per-1: a Period that ends before it starts (at the Period)",
      event: "add-measurement",
      base: weight,
      edit: (r) => {
        delete r.effectiveDateTime;
        r.effectivePeriod = { start: "2026-01-15T10:00:00+04:00", end: "2026-01-15T09:00:00+04:00" };
      },
      issues: [
        invariant("per-1", ".effectivePeriod", {
          start: "2026-01-15T10:00:00+04:00",
          end: "2026-01-15T09:00:00+04:00",
        }),
      ],
    },
    {
      name: "bdl-7: two entries with the same fullUrl (at the Bundle)",
      event: "add-allergy",
      base: allergy,
      edit: () => undefined,
      message: (r) => {
        const bundle = messageBundle("add-allergy", [r, patient()], { focus: [0] });
        const entries = bundle.entry ?? [];
        (entries[2] as { fullUrl?: string }).fullUrl = entries[1]?.fullUrl as string;
        return bundle;
      },
      issues: [invariant("bdl-7", "Bundle")],
    },
  ]);
});

describe("references inside the Bundle", () => {
  run([
    {
      name: "a urn:uuid reference no entry's fullUrl matches: not-found at the reference",
      event: "add-allergy",
      base: allergy,
      edit: (r) => {
        r.patient = { reference: "urn:uuid:9d2f6a51-3c1e-4e8a-b2b4-0f4c1d2e3a4b" };
      },
      issues: [
        {
          code: "not-found",
          expression: ".patient.reference",
          target: "urn:uuid:9d2f6a51-3c1e-4e8a-b2b4-0f4c1d2e3a4b",
          says: [/urn:uuid:9d2f6a51-3c1e-4e8a-b2b4-0f4c1d2e3a4b/],
        },
      ],
    },
    {
      // bundle.html#references: a urn:oid reference, like a urn:uuid one, can only name an entry's fullUrl.
      name: "a urn:oid reference no entry's fullUrl matches: not-found at the reference, as for urn:uuid",
      event: "add-allergy",
      base: allergy,
      edit: (r) => {
        r.patient = { reference: "urn:oid:2.16.784.1.999" };
      },
      issues: [
        {
          code: "not-found",
          expression: ".patient.reference",
          target: "urn:oid:2.16.784.1.999",
          says: [/urn:oid:2\.16\.784\.1\.999/, /fullUrl/],
        },
      ],
    },
    {
      name: "a reference to a type the element does not allow (AllergyIntolerance.patient → Practitioner): structure",
      event: "add-allergy",
      base: allergy,
      edit: (r) => {
        r.patient = { reference: "Practitioner/1" };
      },
      issues: [{ code: "structure", expression: ".patient.reference", target: "Practitioner/1", says: [/Patient/] }],
    },
  ]);

  it("a urn:oid reference that is an entry's fullUrl resolves to it: accepted", async () => {
    const oid = "urn:oid:2.16.784.1.7";
    const request = messageBundle(
      "add-allergy",
      [{ ...allergy(), patient: { reference: oid } } as Resource, patient()],
      {
        focus: [0],
      },
    );
    (request.entry?.[2] as { fullUrl?: string }).fullUrl = oid;
    const reply = await post(sandboxWith().app, request);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  });

  it("a relative reference to a resource not in the Bundle (Patient/example) is allowed", async () => {
    const { app } = sandboxWith();
    const request = messageBundle("add-allergy", [
      { ...allergy(), patient: { reference: "Patient/example" } } as AllergyIntolerance,
    ]);
    const reply = await post(app, request);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(responseHeader(reply.body).response?.code).toBe("ok");
  });
});
