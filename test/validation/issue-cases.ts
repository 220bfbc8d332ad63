import {
  EXAMPLE_ENDPOINT,
  EXAMPLE_OPERATIONS,
  EXAMPLE_PHARMACY,
  exampleMessage,
} from "../../src/examples/example-message.js";
import type { Issue } from "../../src/fhir/outcome.js";
import type { MessageValidation, ValidationPolicy } from "../../src/validation/validate-message.js";
import { example, exampleFiles } from "../support/messages.js";
import { MUTATION_KINDS, mutate, mutationSites } from "../support/mutations.js";

/**
 * Inputs for the issue snapshot (issues-unchanged.test.ts): every HL7 example
 * (alone, and as the focus of a message), each mutated the ways
 * test/support/mutations.ts knows, the sandbox's own example messages, and
 * hand-broken messages that reach every rule family of the validator. All
 * deterministic: the same names and bodies every run, so the snapshot made
 * from one build can judge another.
 */

type Json = Record<string, unknown>;
// biome-ignore lint/suspicious/noExplicitAny: the edits below write invalid R4 on purpose
type Edit = (m: any) => void;

export interface IssueCase {
  name: string;
  bundle: () => Json;
  /** Also under the warn and off policies (the examples are valid: strict alone says all). */
  allPolicies: boolean;
}

export const POLICIES: Record<string, ValidationPolicy> = {
  strict: { validation: "strict", emiratesIdCheck: "error", emiratesIdSystem: "urn:ae:emirates-id" },
  warn: { validation: "warn", emiratesIdCheck: "warning", emiratesIdSystem: "urn:ae:emirates-id" },
  off: { validation: "off", emiratesIdCheck: "off", emiratesIdSystem: "urn:ae:emirates-id" },
};

/** What the snapshot keeps of one validation: every issue of both lists, in order. */
export function outcomeOf(v: MessageValidation): { errors: Issue[]; warnings: Issue[] } {
  return JSON.parse(JSON.stringify({ errors: v.errors, warnings: v.warnings }));
}

const uuid = (n: number) => `urn:uuid:00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;

/** A message Bundle with `resources` after its MessageHeader, fullUrls numbered from 1, every one the focus. */
function message(event: string, resources: Json[]): Json {
  const entries = resources.map((resource, i) => ({ fullUrl: uuid(i + 1), resource }));
  return {
    resourceType: "Bundle",
    id: "snapshot-bundle",
    type: "message",
    timestamp: "2026-01-15T09:30:00+04:00",
    entry: [
      {
        fullUrl: uuid(0),
        resource: {
          resourceType: "MessageHeader",
          id: "snapshot-message",
          eventCoding: { system: "https://sandbox.example.ae/events", code: event },
          source: { endpoint: "https://clinic.example.ae/ehr" },
          focus: entries.map((e) => ({ reference: e.fullUrl })),
        },
      },
      ...entries,
    ],
  };
}

const EID = "urn:ae:emirates-id";
const patient = (): Json => ({
  resourceType: "Patient",
  identifier: [{ system: EID, value: "784-1990-1234567-6" }],
});

/** The benchmarks' add-allergy message (test/bench/messages.mjs): AllergyIntolerance at entry 1, Patient at 2. */
export function addAllergy(): Json {
  return message("add-allergy", [
    {
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
      patient: { reference: uuid(2) },
    },
    patient(),
  ]);
}

function observation(): Json {
  return message("add-measurement", [
    {
      resourceType: "Observation",
      status: "final",
      category: [
        { coding: [{ system: "http://terminology.hl7.org/CodeSystem/observation-category", code: "vital-signs" }] },
      ],
      code: { coding: [{ system: "http://loinc.org", code: "29463-7", display: "Body weight" }] },
      subject: { reference: uuid(2) },
      effectiveDateTime: "2026-01-15T09:30:00+04:00",
      valueQuantity: { value: 70, unit: "kg", system: "http://unitsofmeasure.org", code: "kg" },
    },
    patient(),
  ]);
}

const NS = 'xmlns="http://www.w3.org/1999/xhtml"';

/** Hand-broken messages: one or a few problems each, over every rule family the validator has. */
const BROKEN: Array<[string, () => Json, Edit, "strict only"?]> = [
  ["valid add-allergy", addAllergy, () => {}],
  ["valid weight", observation, () => {}],
  ["binding: criticality severe", addAllergy, (m) => (m.entry[1].resource.criticality = "severe")],
  ["binding: clinicalStatus bogus", addAllergy, (m) => (m.entry[1].resource.clinicalStatus.coding[0].code = "bogus")],
  [
    "binding: clinicalStatus of another system",
    addAllergy,
    (m) => (m.entry[1].resource.clinicalStatus.coding[0].system = "http://example.org/cs"),
  ],
  [
    "ait-2: entered-in-error with a clinical status",
    addAllergy,
    (m) => (m.entry[1].resource.verificationStatus.coding[0].code = "entered-in-error"),
  ],
  ["ait-1: no clinical status", addAllergy, (m) => delete m.entry[1].resource.clinicalStatus],
  ["date: not a calendar day", addAllergy, (m) => (m.entry[1].resource.recordedDate = "2026-02-30")],
  ["date: month 13", addAllergy, (m) => (m.entry[1].resource.recordedDate = "2026-13-01")],
  ["date: a number", addAllergy, (m) => (m.entry[1].resource.recordedDate = 20260101)],
  ["date: leap day", addAllergy, (m) => (m.entry[1].resource.recordedDate = "2024-02-29")],
  ["date: not a leap year", addAllergy, (m) => (m.entry[1].resource.recordedDate = "1900-02-29")],
  ["instant: no zone", addAllergy, (m) => (m.timestamp = "2026-01-15T09:30:00")],
  ["array where single", addAllergy, (m) => (m.entry[1].resource.patient = [m.entry[1].resource.patient])],
  ["single where array", addAllergy, (m) => (m.entry[1].resource.category = "medication")],
  ["empty array", addAllergy, (m) => (m.entry[1].resource.category = [])],
  ["null in an array", addAllergy, (m) => (m.entry[1].resource.category = ["medication", null])],
  [
    "null in an array held by _category",
    addAllergy,
    (m) => {
      m.entry[1].resource.category = ["medication", null];
      m.entry[1].resource._category = [null, { extension: [{ url: "http://example.org/x", valueString: "y" }] }];
    },
  ],
  ["null value", addAllergy, (m) => (m.entry[1].resource.criticality = null)],
  ["empty string", addAllergy, (m) => (m.entry[1].resource.note = [{ text: "  " }])],
  ["control character", addAllergy, (m) => (m.entry[1].resource.note = [{ text: "a\u0001b" }])],
  ["markdown too long", addAllergy, (m) => (m.entry[1].resource.note = [{ text: "x".repeat(1_048_577) }])],
  ["unknown element", addAllergy, (m) => (m.entry[1].resource.foo = 1)],
  ["misspelt element", addAllergy, (m) => (m.entry[1].resource.patinet = { reference: uuid(2) })],
  ["name FHIRPath cannot spell", addAllergy, (m) => (m.entry[1].resource["a b"] = 1)],
  ["bare choice name", addAllergy, (m) => (m.entry[1].resource.onset = "2020")],
  [
    "choice given twice",
    addAllergy,
    (m) => {
      m.entry[1].resource.onsetDateTime = "2020";
      m.entry[1].resource.onsetString = "childhood";
      m.entry[1].resource.onsetAge = { value: 3, unit: "a", system: "http://unitsofmeasure.org", code: "a" };
    },
  ],
  [
    "two choices given twice",
    observation,
    (m) => {
      const o = m.entry[1].resource;
      o.valueString = "70";
      o.effectivePeriod = { start: "2026" };
      o.valueBoolean = true;
    },
  ],
  ["empty object", addAllergy, (m) => (m.entry[1].resource.onsetAge = {})],
  ["element with only an id", addAllergy, (m) => (m.entry[1].resource.onsetAge = { id: "x" })],
  ["object where a string belongs", addAllergy, (m) => (m.entry[1].resource.criticality = { code: "high" })],
  ["string where an object belongs", addAllergy, (m) => (m.entry[1].resource.code = "penicillin")],
  ["reference to no entry", addAllergy, (m) => (m.entry[1].resource.patient = { reference: uuid(99) })],
  ["oid reference to no entry", addAllergy, (m) => (m.entry[1].resource.patient = { reference: "urn:oid:1.2.3" })],
  ["reference of the wrong type", addAllergy, (m) => (m.entry[1].resource.patient = { reference: "Practitioner/1" })],
  ["reference to no resource type", addAllergy, (m) => (m.entry[1].resource.patient = { reference: "Foo/1" })],
  [
    "absolute reference of the wrong type",
    addAllergy,
    (m) => (m.entry[1].resource.patient = { reference: "http://example.org/fhir/Observation/1" }),
  ],
  ["entry of the wrong type", addAllergy, (m) => (m.entry[1].resource.patient = { reference: uuid(1) })],
  [
    "relative reference by type and id",
    addAllergy,
    (m) => {
      m.entry[2].resource.id = "p1";
      m.entry[1].resource.patient = { reference: "Patient/p1/_history/2" };
    },
  ],
  [
    "relative reference against a RESTful fullUrl",
    addAllergy,
    (m) => {
      m.entry[1].fullUrl = "http://example.org/fhir/AllergyIntolerance/a1";
      m.entry[2].fullUrl = "http://example.org/fhir/Patient/p1";
      m.entry[0].resource.focus = [{ reference: "http://example.org/fhir/AllergyIntolerance/a1" }];
      m.entry[1].resource.patient = { reference: "Patient/p1" };
    },
  ],
  ["empty reference", addAllergy, (m) => (m.entry[1].resource.patient = {})],
  ["ref-1: local reference to nothing", addAllergy, (m) => (m.entry[1].resource.recorder = { reference: "#nobody" })],
  [
    "unknown code of an HL7 code system, example binding",
    addAllergy,
    (m) =>
      m.entry[1].resource.code.coding.push({
        system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical",
        code: "bogus",
      }),
  ],
  ["ref-1: display only", addAllergy, (m) => (m.entry[1].resource.recorder = { display: "Dr A" })],
  ["Emirates ID: bad check digit", addAllergy, (m) => (m.entry[2].resource.identifier[0].value = "784-1990-1234567-0")],
  ["Emirates ID: no format", addAllergy, (m) => (m.entry[2].resource.identifier[0].value = "123")],
  [
    "patient: gender and birth date",
    addAllergy,
    (m) => {
      m.entry[2].resource.gender = "M";
      m.entry[2].resource.birthDate = "15/01/1990";
    },
  ],
  [
    "narrative without namespace",
    addAllergy,
    (m) => (m.entry[2].resource.text = { status: "generated", div: "<div>no namespace</div>" }),
  ],
  [
    "narrative with a script and onclick",
    addAllergy,
    (m) =>
      (m.entry[2].resource.text = {
        status: "generated",
        div: `<div ${NS}><script>x()</script><p onclick="y()">a</p></div>`,
      }),
  ],
  [
    "narrative empty",
    addAllergy,
    (m) => (m.entry[2].resource.text = { status: "generated", div: `<div ${NS}> &nbsp; </div>` }),
  ],
  [
    "narrative of an image",
    addAllergy,
    (m) => (m.entry[2].resource.text = { status: "generated", div: `<div ${NS}><img src="a.png"/></div>` }),
  ],
  ["narrative not a string", addAllergy, (m) => (m.entry[2].resource.text = { status: "generated", div: 1 })],
  [
    "dom-3: contained not referred to",
    addAllergy,
    (m) => (m.entry[1].resource.contained = [{ resourceType: "Practitioner", id: "pr1" }]),
  ],
  [
    "contained referred to",
    addAllergy,
    (m) => {
      m.entry[1].resource.contained = [{ resourceType: "Practitioner", id: "pr1", active: true }];
      m.entry[1].resource.recorder = { reference: "#pr1" };
    },
  ],
  [
    "contained referring to its container",
    addAllergy,
    (m) => {
      m.entry[1].resource.id = "a1";
      m.entry[1].resource.contained = [
        {
          resourceType: "Provenance",
          id: "pv1",
          target: [{ reference: "#" }],
          recorded: "2026-01-15T09:30:00Z",
          agent: [{ who: { display: "x" } }],
        },
      ];
    },
  ],
  [
    "contained with meta, contained and a canonical",
    addAllergy,
    (m) => {
      m.entry[1].resource.contained = [
        {
          resourceType: "Practitioner",
          id: "pr1",
          meta: { versionId: "1", lastUpdated: "2026-01-15T09:30:00Z", security: [{ code: "x" }] },
          contained: [{ resourceType: "Practitioner", id: "pr2" }],
          text: { status: "generated", div: `<div ${NS}>a</div>` },
        },
      ];
      m.entry[1].resource.meta = { profile: ["#pr1"] };
    },
  ],
  ["contained without an id", addAllergy, (m) => (m.entry[1].resource.contained = [{ resourceType: "Practitioner" }])],
  [
    "primitive extension",
    addAllergy,
    (m) => (m.entry[1].resource._criticality = { extension: [{ url: "http://example.org/x", valueString: "y" }] }),
  ],
  ["primitive extension not an object", addAllergy, (m) => (m.entry[1].resource._criticality = "x")],
  ["primitive extension empty", addAllergy, (m) => (m.entry[1].resource._criticality = {})],
  [
    "primitive extension arrays of different lengths",
    addAllergy,
    (m) => {
      m.entry[1].resource.category = ["medication"];
      m.entry[1].resource._category = [null, { id: "x" }];
    },
  ],
  ["primitive extension array not an array", addAllergy, (m) => (m.entry[1].resource._category = { id: "x" })],
  ["primitive extension item not an object", addAllergy, (m) => (m.entry[1].resource._category = [1])],
  ["extension of an unknown element", addAllergy, (m) => (m.entry[1].resource._foo = { id: "x" })],
  ["extension of a complex element", addAllergy, (m) => (m.entry[1].resource._code = { id: "x" })],
  [
    "ext-1: value and extensions",
    addAllergy,
    (m) =>
      (m.entry[1].resource.extension = [
        { url: "http://example.org/x", valueString: "a", extension: [{ url: "b", valueString: "c" }] },
      ]),
  ],
  ["extension without url", addAllergy, (m) => (m.entry[1].resource.extension = [{ valueString: "a" }])],
  ["bdl-7: duplicate fullUrl", addAllergy, (m) => (m.entry[2].fullUrl = m.entry[1].fullUrl)],
  [
    "bdl-3: request in a message",
    addAllergy,
    (m) => (m.entry[1].request = { method: "POST", url: "AllergyIntolerance" }),
  ],
  ["bdl-2: search in a message", addAllergy, (m) => (m.entry[1].search = { mode: "match" })],
  ["bdl-1: total in a message", addAllergy, (m) => (m.total = 1)],
  ["bdl-5: entry without resource", addAllergy, (m) => m.entry.push({ fullUrl: uuid(50) })],
  [
    "bdl-8: fullUrl with a version",
    addAllergy,
    (m) => (m.entry[2].fullUrl = "http://example.org/fhir/Patient/1/_history/1"),
  ],
  ["bdl-12: header not first", addAllergy, (m) => m.entry.reverse()],
  ["document without identifier", addAllergy, (m) => (m.type = "document")],
  ["collection", addAllergy, (m) => (m.type = "collection")],
  ["bundle type unknown", addAllergy, (m) => (m.type = "letter")],
  ["unknown resource type in an entry", addAllergy, (m) => (m.entry[2].resource = { resourceType: "Foo" })],
  ["no resource type in an entry", addAllergy, (m) => (m.entry[2].resource = { id: "x" })],
  ["resource a string", addAllergy, (m) => (m.entry[2].resource = "Patient")],
  [
    "header without source and event",
    addAllergy,
    (m) => {
      delete m.entry[0].resource.source;
      delete m.entry[0].resource.eventCoding;
    },
  ],
  [
    "header with eventUri",
    addAllergy,
    (m) => {
      delete m.entry[0].resource.eventCoding;
      m.entry[0].resource.eventUri = "https://sandbox.example.ae/events/add-allergy";
    },
  ],
  ["uri with whitespace", addAllergy, (m) => (m.entry[0].resource.source.endpoint = "https://a b")],
  ["string value", observation, (m) => (m.entry[1].resource.valueQuantity.value = "70.0")],
  [
    "integer out of range",
    observation,
    (m) => (m.entry[1].resource.component = [{ code: { text: "x" }, valueInteger: 2 ** 31 }]),
  ],
  ["decimal not finite", observation, (m) => (m.entry[1].resource.valueQuantity.value = Number.POSITIVE_INFINITY)],
  ["positiveInt zero", addAllergy, (m) => (m.total = 0)],
  ["unsignedInt negative", addAllergy, (m) => (m.total = -1)],
  ["boolean as string", addAllergy, (m) => (m.entry[2].resource.active = "true")],
  ["id too long", addAllergy, (m) => (m.entry[2].resource.id = "x".repeat(65))],
  ["base64 broken", addAllergy, (m) => (m.entry[2].resource.photo = [{ contentType: "image/png", data: "ab=c d" }])],
  ["base64 fine", addAllergy, (m) => (m.entry[2].resource.photo = [{ contentType: "image/png", data: "abcd efgh" }])],
  [
    "coding unknown in an HL7 code system",
    observation,
    (m) => (m.entry[1].resource.category[0].coding[0].code = "bogus"),
  ],
  [
    "coding system only",
    observation,
    (m) =>
      (m.entry[1].resource.category[0].coding[0] = {
        system: "http://terminology.hl7.org/CodeSystem/observation-category",
      }),
  ],
  ["codeable concept without codings", observation, (m) => (m.entry[1].resource.category[0] = { text: "vital signs" })],
  ["observation status done", observation, (m) => (m.entry[1].resource.status = "done")],
  [
    "keyword element div at a path",
    addAllergy,
    (m) => (m.entry[2].resource.text = { status: "bogus", div: `<div ${NS}>a</div>` }),
  ],
  ["root not a resource", addAllergy, (m) => (m.resourceType = "Nope")],
  ["root without resource type", addAllergy, (m) => delete m.resourceType],
  ["entry not an object", addAllergy, (m) => m.entry.push(7)],
  ["entry null", addAllergy, (m) => m.entry.push(null)],
  [
    "many problems: the walk stops at 1,000",
    addAllergy,
    (m) => {
      for (let i = 0; i < 1_200; i++) m.entry.push({});
    },
    "strict only",
  ],
  [
    "many unknown names: hints stop",
    addAllergy,
    (m) => {
      for (let i = 0; i < 150; i++) m.entry[2].resource[`gendr${i}`] = "x";
      m.entry[2].resource.gendr = "x";
    },
    "strict only",
  ],
];

function deterministicDeps() {
  let n = 0;
  return {
    newId: () => `00000000-0000-4000-9000-${String(n++).padStart(12, "0")}`,
    now: () => new Date("2026-01-15T09:30:00.000Z"),
  };
}

/** Every case, in a fixed order. */
export function issueCases(): IssueCase[] {
  const cases: IssueCase[] = [];
  for (const [name, base, edit, only] of BROKEN) {
    cases.push({
      name: `broken: ${name}`,
      bundle: () => {
        const m = base();
        edit(m);
        return m;
      },
      allPolicies: only === undefined,
    });
  }
  for (const operation of EXAMPLE_OPERATIONS) {
    const text = JSON.stringify(
      exampleMessage(
        {
          operation,
          event: operation,
          seed: "sandbox",
          emiratesIdSystem: EID,
          emiratesId: "784-1990-1234567-6",
          fhirBase: "http://localhost:8080/uae-fhir/r4",
          pharmacy: { ...EXAMPLE_PHARMACY, endpoint: EXAMPLE_ENDPOINT },
        },
        deterministicDeps(),
      ).bundle,
    );
    cases.push({ name: `sandbox example: ${operation}`, bundle: () => JSON.parse(text), allPolicies: true });
  }
  for (const file of exampleFiles()) {
    cases.push({ name: `HL7 example: ${file}`, bundle: () => example(file) as unknown as Json, allPolicies: true });
    cases.push({
      name: `HL7 example in a message: ${file}`,
      bundle: () => message("add-history", [example(file) as unknown as Json]),
      allPolicies: false,
    });
    const sites = mutationSites(example(file));
    for (const kind of MUTATION_KINDS) {
      for (let pick = 0; pick < Math.min(3, sites[kind]); pick++) {
        const mutation = mutate(example(file), kind, pick);
        if (!mutation) continue;
        cases.push({
          name: `HL7 example mutated: ${file} ${kind} ${pick}`,
          bundle: () => message("add-history", [mutation.resource]),
          allPolicies: kind === "unknown-element",
        });
      }
    }
  }
  return cases;
}
