import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { loadPlans } from "../../src/conformance/load-plans.js";
import { buildCatalogue } from "../../src/routing/catalogue.js";

// The committed conformance/conformance.schema.json (what editors use through yaml-language-server), by a standard
// draft-2020-12 validator, against the fixture plans and broken variants of one: the schema and the loader are one
// format.

const SCHEMA = fileURLToPath(new URL("../../conformance/conformance.schema.json", import.meta.url));
const PLANS = fileURLToPath(new URL("./fixtures/plans/", import.meta.url));
const schema = JSON.parse(readFileSync(SCHEMA, "utf8"));
// strict: an unknown keyword or format in the emitted schema fails here, not silently in an editor.
const validate = new Ajv2020({ allErrors: true, strict: true }).compile(schema);
const errorsOf = (doc: unknown) => (validate(doc) ? [] : (validate.errors ?? []));

const sender = () => parse(readFileSync(`${PLANS}sender-mini.yaml`, "utf8"));
type Doc = Record<string, unknown> & {
  tests: Array<Record<string, unknown> & { steps: Array<Record<string, unknown>> }>;
};

const BROKEN: Array<{ name: string; breakIt(doc: Doc): void; at: string }> = [
  { name: "an unknown top-level key", breakIt: (d) => Object.assign(d, { rulez: {} }), at: "" },
  { name: "a role that does not exist", breakIt: (d) => Object.assign(d, { role: "pharmacy" }), at: "/role" },
  {
    name: "a test without steps",
    breakIt: (d) => Object.assign(d.tests[0] ?? {}, { steps: [] }),
    at: "/tests/0/steps",
  },
  {
    name: "a step of no kind",
    breakIt: (d) => {
      const step = d.tests[0]?.steps[0] ?? {};
      delete step.expectOperations;
    },
    at: "/tests/0/steps/0",
  },
  {
    name: 'a wait of "soon"',
    breakIt: (d) => Object.assign(d.tests[1]?.steps[1] ?? {}, { expectRetry: { within: "soon" } }),
    at: "/tests/1/steps/1",
  },
  {
    name: "a step id with capitals",
    breakIt: (d) => Object.assign(d.tests[0]?.steps[0] ?? {}, { id: "Each" }),
    at: "/tests/0/steps/0",
  },
];

describe("conformance/conformance.schema.json (draft 2020-12, ajv)", () => {
  it.each(["sender-mini.yaml", "receiver-mini.yaml"])("accepts the fixture plan %s", (file) => {
    expect(errorsOf(parse(readFileSync(`${PLANS}${file}`, "utf8")))).toEqual([]);
  });

  it("takes the keys whose defaults the loader fills as optional (the schema of what is written)", () => {
    const doc = sender() as Doc;
    // expectRetry: {} (sameId, sameContent default to true) and a test without required (default true).
    expect(doc.tests[1]?.steps[1]).toMatchObject({ expectRetry: { within: "30s" } });
    expect(doc.tests[0]?.required).toBeUndefined();
    expect(errorsOf(doc)).toEqual([]);
  });

  it.each(BROKEN)("rejects $name, at $at, as the loader does", ({ breakIt, at }) => {
    const doc = sender() as Doc;
    breakIt(doc);

    const errors = errorsOf(doc);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.map((e) => e.instancePath)).toContain(at);
  });
});

describe("the loader refuses what the schema refuses", () => {
  it.each(BROKEN)("$name", ({ breakIt }) => {
    const doc = sender() as Doc;
    breakIt(doc);
    // Through a real file (JSON is YAML): the loader reads files.
    const dir = mkdtempSync(join(tmpdir(), "plan-"));
    try {
      writeFileSync(join(dir, "plan.yaml"), JSON.stringify(doc));
      expect(loadPlans({ catalogue: buildCatalogue(), shipped: null, folder: dir }).ok).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
