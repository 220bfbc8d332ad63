import { describe, expect, it } from "vitest";
import { compileInvariant } from "../../src/validation/invariants/compile-invariant.js";
import { NATIVE_INVARIANTS, nativeInvariant } from "../../src/validation/invariants/native.js";
import { outcomeOf, referenceEvaluator } from "../../src/validation/invariants/reference-check.js";
import { R4 } from "../../src/validation/r4/definitions.js";
import { type CorpusNode, exampleCorpus, walk } from "./invariants/corpus.js";
import { rng } from "./invariants/generate.js";
import { issueCases } from "./issue-cases.js";

/**
 * The native checks (invariants/native.ts) give the verdict the fhirpath library gives on the invariant's R4
 * expression, wherever they decide; where they leave a node to the compiled FHIRPath, the validator's check (native,
 * else compiled) still gives the library's verdict. Over the HL7 examples, every message of issue-cases.ts (the
 * sandbox's example messages, the HL7 examples in a message, their mutations, hand-broken messages) and Bundles made
 * here to break each invariant (and AllergyIntolerances for ait-1/ait-2, Extensions for ext-1).
 */

type Json = Record<string, unknown>;
type Env = { resource: unknown; rootResource: unknown };

/** A node to check, with the env the validator gives it. */
interface Case {
  node: unknown;
  env: Env;
  where: string;
}

const TYPES = [
  "message",
  "history",
  "batch",
  "transaction",
  "batch-response",
  "transaction-response",
  "searchset",
  "collection",
  "document",
];

/** Entries that break bdl-3/4/5/7/8/12 in every way: request/response per type, duplicate fullUrls with and without versions. */
function handEntry(r: () => number, i: number): unknown {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const e: Json = {};
  const url = pick([
    undefined,
    undefined,
    "urn:uuid:1",
    "urn:uuid:1",
    "urn:uuid:2",
    `urn:uuid:${i}`,
    "http://example.org/fhir/Patient/1",
    "http://example.org/fhir/Patient/1/_history/2",
    "a",
    "ab",
    "",
    7,
    null,
  ]);
  if (url !== undefined) e.fullUrl = url;
  if (r() < 0.05) e._fullUrl = { extension: [{ url: "http://x", valueString: "y" }] };
  const version = pick([undefined, undefined, "1", "1", "2", "bc", "c", "", 3]);
  const meta =
    version === undefined ? pick([undefined, {}, { lastUpdated: "2026-01-01T00:00:00Z" }]) : { versionId: version };
  const resourceType = pick([
    "Patient",
    "Patient",
    "MessageHeader",
    "Composition",
    "Bundle",
    "AllergyIntolerance",
    "NotAType",
    undefined,
  ]);
  const resource = pick([
    undefined,
    { resourceType, id: "x", ...(meta ? { meta } : {}) },
    { resourceType, id: "x", ...(meta ? { meta } : {}) },
    { resourceType, meta: [meta ?? {}] },
    { resourceType, meta: { versionId: "1", _versionId: { extension: [] } } },
    "not an object",
    [],
  ]);
  if (resource !== undefined) e.resource = resource;
  const request = pick([undefined, undefined, { method: "POST", url: "Patient" }, {}, [], "x"]);
  if (request !== undefined) e.request = request;
  const response = pick([undefined, undefined, { status: "201 Created" }, {}, [{ status: "200" }]]);
  if (response !== undefined) e.response = response;
  if (r() < 0.1) e.search = { mode: "match" };
  if (r() < 0.03) e.resourceType = "Patient";
  return r() < 0.02 ? pick([null, "entry", 3]) : e;
}

function handBundle(seed: number): Json {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const b: Json = { resourceType: "Bundle" };
  const type = r() < 0.9 ? pick(TYPES) : pick([undefined, 5, ["message"]]);
  if (type !== undefined) b.type = type;
  if (r() < 0.05) b._type = { extension: [] };
  if (r() < 0.1) b.total = pick([3, "3"]);
  if (r() < 0.03) b._total = { extension: [] };
  if (r() < 0.1) b.identifier = { system: "urn:x", value: "1" };
  if (r() < 0.1) b.timestamp = "2026-01-15T09:30:00Z";
  const n = pick([0, 1, 2, 3, 4, 6]);
  if (r() < 0.95) {
    const entry: unknown[] = [];
    for (let i = 0; i < n; i++) entry.push(handEntry(r, i));
    b.entry = entry;
  } else {
    b.entry = pick([{}, "x", null]);
  }
  return b;
}

const patient = (versionId?: string): Json => ({
  resourceType: "Patient",
  ...(versionId === undefined ? {} : { meta: { versionId } }),
});

/** Named Bundles for each way to break (or just keep) bdl-3, bdl-4, bdl-7, bdl-12. */
const NAMED: Record<string, Json> = {
  "history, same fullUrl and version": {
    resourceType: "Bundle",
    type: "history",
    entry: [
      { fullUrl: "urn:a", resource: patient("1"), request: { method: "PUT", url: "Patient/a" }, response: {} },
      { fullUrl: "urn:a", resource: patient("1"), request: { method: "PUT", url: "Patient/a" }, response: {} },
    ],
  },
  "history without request": {
    resourceType: "Bundle",
    type: "history",
    entry: [{ fullUrl: "urn:a", resource: patient("1"), response: { status: "200" } }],
  },
  "history without response": {
    resourceType: "Bundle",
    type: "history",
    entry: [{ fullUrl: "urn:a", resource: patient("1"), request: { method: "PUT", url: "Patient/a" } }],
  },
  "same fullUrl, no versions": {
    resourceType: "Bundle",
    type: "collection",
    entry: [
      { fullUrl: "urn:a", resource: patient() },
      { fullUrl: "urn:a", resource: patient() },
    ],
  },
  "same fullUrl, different versions": {
    resourceType: "Bundle",
    type: "collection",
    entry: [
      { fullUrl: "urn:a", resource: patient("1") },
      { fullUrl: "urn:a", resource: patient("2") },
    ],
  },
  "same fullUrl, one version": {
    resourceType: "Bundle",
    type: "collection",
    entry: [
      { fullUrl: "urn:a", resource: patient("1") },
      { fullUrl: "urn:a", resource: patient() },
    ],
  },
  "same fullUrl, same version": {
    resourceType: "Bundle",
    type: "collection",
    entry: [
      { fullUrl: "urn:a", resource: patient("1") },
      { fullUrl: "urn:a", resource: patient("1") },
    ],
  },
  "fullUrl and version joined alike (a+bc, ab+c)": {
    resourceType: "Bundle",
    type: "collection",
    entry: [
      { fullUrl: "a", resource: patient("bc") },
      { fullUrl: "ab", resource: patient("c") },
    ],
  },
  "same fullUrl, no resources": {
    resourceType: "Bundle",
    type: "batch",
    entry: [
      { fullUrl: "urn:a", request: { method: "DELETE", url: "Patient/a" } },
      { fullUrl: "urn:a", request: { method: "DELETE", url: "Patient/a" } },
    ],
  },
  "missing fullUrls": {
    resourceType: "Bundle",
    type: "transaction",
    entry: [
      { resource: patient(), request: { method: "POST", url: "Patient" } },
      { resource: patient(), request: { method: "POST", url: "Patient" } },
    ],
  },
  "transaction, one entry without request": {
    resourceType: "Bundle",
    type: "transaction",
    entry: [{ resource: patient(), request: { method: "POST", url: "Patient" } }, { resource: patient() }],
  },
  "message with a request": {
    resourceType: "Bundle",
    type: "message",
    entry: [{ fullUrl: "urn:h", resource: { resourceType: "MessageHeader" }, request: { method: "POST", url: "x" } }],
  },
  "message with a response": {
    resourceType: "Bundle",
    type: "message",
    entry: [{ fullUrl: "urn:h", resource: { resourceType: "MessageHeader" }, response: { status: "200" } }],
  },
  "transaction-response without response": {
    resourceType: "Bundle",
    type: "transaction-response",
    entry: [{ fullUrl: "urn:a", resource: patient() }],
  },
  "batch-response with responses": {
    resourceType: "Bundle",
    type: "batch-response",
    entry: [{ response: { status: "200" } }, { response: { status: "404" } }],
  },
  "message, Patient first": {
    resourceType: "Bundle",
    type: "message",
    entry: [{ resource: patient() }, { resource: { resourceType: "MessageHeader" } }],
  },
  "message, no entries": { resourceType: "Bundle", type: "message" },
  "message, first entry without resource": {
    resourceType: "Bundle",
    type: "message",
    entry: [{ fullUrl: "urn:h" }, { resource: { resourceType: "MessageHeader" } }],
  },
  "document, Composition first": {
    resourceType: "Bundle",
    type: "document",
    entry: [{ resource: { resourceType: "Composition" } }],
  },
  "document, Patient first": { resourceType: "Bundle", type: "document", entry: [{ resource: patient() }] },
  "no type, duplicates": {
    resourceType: "Bundle",
    entry: [
      { fullUrl: "urn:a", resource: patient() },
      { fullUrl: "urn:a", resource: patient() },
    ],
  },
};

/** Local, relative and absent references, with and without contained resources to match. */
const REFERENCES: unknown[] = [
  {},
  { reference: "Patient/1" },
  { reference: "#p1" },
  { reference: "#missing" },
  { reference: "#" },
  { reference: "" },
  { reference: 5 },
  { reference: "Patient/1", _reference: { extension: [] } },
  { _reference: { extension: [] } },
  { display: "x" },
  { reference: "urn:uuid:1" },
];

const AIT = "http://terminology.hl7.org/CodeSystem/allergyintolerance-verification";

/** AllergyIntolerances entered in error or not, with and without clinicalStatus, in odd shapes too (ait-1, ait-2). */
function handAllergies(): Json[] {
  const clinical: unknown[] = [undefined, { coding: [{ code: "active" }] }, {}, [{ text: "x" }], "active"];
  const codings: unknown[] = [
    undefined,
    [],
    [{ system: AIT, code: "entered-in-error" }],
    [{ system: AIT, code: "confirmed" }],
    [{ system: "http://other", code: "entered-in-error" }],
    [{ code: "entered-in-error" }],
    [{ system: AIT }],
    [
      { system: AIT, code: "confirmed" },
      { system: AIT, code: "entered-in-error" },
    ],
    [{ system: AIT, code: "entered-in-error", _code: { extension: [] } }],
    [{ system: AIT, code: 5 }],
    { system: AIT, code: "entered-in-error" },
    ["entered-in-error"],
  ];
  const out: Json[] = [];
  for (const c of clinical)
    for (const coding of codings)
      for (const verification of [true, false]) {
        const a: Json = { resourceType: "AllergyIntolerance", patient: { reference: "Patient/1" } };
        if (c !== undefined) a.clinicalStatus = c;
        if (verification) a.verificationStatus = coding === undefined ? { text: "x" } : { coding };
        out.push(a);
      }
  out.push({ resourceType: "AllergyIntolerance", verificationStatus: "entered-in-error" });
  return out;
}

/** Extensions with and without values and nested extensions, in odd shapes too (ext-1). */
function handExtensions(): Json[] {
  const nested: unknown[] = [undefined, [], [{ url: "a", valueString: "x" }], [{}], [null], { url: "a" }, "x"];
  const values: Json[] = [
    {},
    { valueString: "x" },
    { valueString: "" },
    { valueBoolean: false },
    { valueInteger: 0 },
    { valueCoding: { code: "c" } },
    { valueCoding: {} },
    { valueString: null },
    { valueString: ["x"] },
    { _valueString: { extension: [{ url: "b", valueString: "y" }] } },
    { valueString: "x", _valueString: { id: "1" } },
    { valueString: "x", valueBoolean: true },
    { valueFoo: "x" },
    { value: "x" },
  ];
  const out: Json[] = [];
  for (const e of nested)
    for (const v of values) {
      const x: Json = { url: "http://example.org/x", ...v };
      if (e !== undefined) x.extension = e;
      out.push(x);
    }
  return out;
}

function casesFor(context: string, corpus: CorpusNode[]): Case[] {
  const out: Case[] = corpus
    .filter((n) => n.type === context)
    .map((n) => ({ node: n.node, env: { resource: n.resource, rootResource: n.rootResource }, where: n.where }));
  for (const [name, b] of Object.entries(NAMED)) {
    const env = { resource: b, rootResource: b };
    if (context === "Bundle") out.push({ node: b, env, where: name });
    if (context === "Bundle.entry" && Array.isArray(b.entry))
      for (const [i, e] of b.entry.entries()) out.push({ node: e, env, where: `${name} entry ${i}` });
  }
  for (let seed = 1; seed <= 3000; seed++) {
    const b = handBundle(seed);
    const env = { resource: b, rootResource: b };
    if (context === "Bundle") out.push({ node: b, env, where: `hand bundle ${seed}` });
    if (context === "Bundle.entry" && Array.isArray(b.entry))
      for (const [i, e] of b.entry.entries()) out.push({ node: e, env, where: `hand bundle ${seed} entry ${i}` });
  }
  if (context === "AllergyIntolerance")
    for (const [i, a] of handAllergies().entries())
      out.push({ node: a, env: { resource: a, rootResource: a }, where: `hand allergy ${i}` });
  if (context === "Extension") {
    const root = { resourceType: "Patient" };
    for (const [i, x] of handExtensions().entries())
      out.push({ node: x, env: { resource: root, rootResource: root }, where: `hand extension ${i}` });
  }
  if (context === "Reference") {
    const root = { resourceType: "Patient", contained: [{ resourceType: "Organization", id: "p1" }] };
    for (const ref of REFERENCES) {
      out.push({ node: ref, env: { resource: root, rootResource: root }, where: JSON.stringify(ref) });
      const bare = { resourceType: "Patient" };
      out.push({
        node: ref,
        env: { resource: bare, rootResource: bare },
        where: `${JSON.stringify(ref)} (none contained)`,
      });
    }
  }
  return out;
}

function messageCorpus(): CorpusNode[] {
  const out: CorpusNode[] = [...exampleCorpus()];
  for (const c of issueCases()) {
    const b = c.bundle();
    walk(b, "Resource", b, b, c.name, out);
  }
  return out;
}

describe("native invariant checks agree with the fhirpath library", () => {
  const corpus = messageCorpus();
  for (const id of NATIVE_INVARIANTS) {
    const [key, context] = id.split("@") as [string, string];
    it(`${key} on ${context}`, () => {
      const def = R4.constraints[key];
      if (!def) throw new Error(key);
      const native = nativeInvariant(key, context);
      if (!native) throw new Error(id);
      const library = referenceEvaluator(def.expression, context);
      const compiled = compileInvariant(def.expression, context).check;
      const mismatches: string[] = [];
      const verdicts = { true: 0, false: 0, deferred: 0 };
      const undecided: string[] = [];
      for (const { node, env, where } of casesFor(context, corpus)) {
        // The independent reference: the library's outcome, failing only on exactly false.
        const expected = outcomeOf(() => library(node, env)) !== "false";
        const ours = native(node, env);
        if (ours === undefined) {
          verdicts.deferred++;
          // The sandbox's own messages are the hot path: the native check must decide all of them.
          if (where.startsWith("sandbox example") && undecided.length < 5) undecided.push(where);
        } else verdicts[ours ? "true" : "false"]++;
        const verdict = ours ?? compiled(node, env);
        if (verdict !== expected && mismatches.length < 5)
          mismatches.push(`${where}: native ${ours}, library ${expected}: ${JSON.stringify(node).slice(0, 300)}`);
      }
      expect(mismatches).toEqual([]);
      expect(undecided).toEqual([]);
      // The cases do break the invariant, and the native check decides those.
      expect(verdicts.true).toBeGreaterThan(0);
      if (key !== "bdl-1" && key !== "bdl-2" && key !== "bdl-9" && key !== "bdl-10" && key !== "ref-1")
        expect(verdicts.false).toBeGreaterThan(0);
    });
  }
});
