import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { loadScenarioText } from "../../src/scenarios/load.js";

// The committed JSON Schema (what editors use through yaml-language-server) against
// the shipped scenario files, with a standard draft-2020-12 validator.

const SCENARIOS = fileURLToPath(new URL("../../scenarios/", import.meta.url));
const SHIPPED = readdirSync(SCENARIOS)
  .filter((f) => /\.ya?ml$/.test(f))
  .sort();
const SCHEMA_COMMENT = "# yaml-language-server: $schema=./scenario.schema.json";

const schema = JSON.parse(readFileSync(`${SCENARIOS}scenario.schema.json`, "utf8"));
// strict: an unknown keyword or format in the emitted schema fails here, not silently in an editor.
const validate = new Ajv2020({ allErrors: true, strict: true }).compile(schema);

const errorsOf = (doc: unknown) => (validate(doc) ? [] : (validate.errors ?? []));

/** A small valid document; each broken case changes one thing in it. */
const valid = () => ({
  name: "broken on purpose",
  rules: [
    {
      name: "slow-then-reset",
      when: { operation: "add-allergy", path: "/uae-fhir/r4/$process-message" },
      respond: { builtIn: true, delay: "2s" },
    },
    { name: "reset", respond: { fault: "connection-reset" } },
  ],
});
type Doc = ReturnType<typeof valid> & Record<string, unknown>;
type Rule = Doc["rules"][number] & Record<string, unknown>;

const BROKEN: Array<{ name: string; breakIt(doc: Doc): void; at: string }> = [
  {
    name: "an unknown top-level key",
    breakIt: (doc) => {
      doc.rulez = [];
    },
    at: "",
  },
  {
    name: "a rule with an unknown key",
    breakIt: (doc) => {
      (doc.rules[0] as Rule).delay = "2s";
    },
    at: "/rules/0",
  },
  {
    name: "a fault name that does not exist",
    breakIt: (doc) => {
      (doc.rules[1] as Rule).respond = { fault: "connection-refused" } as never;
    },
    at: "/rules/1/respond/fault",
  },
  {
    name: 'delay "soon"',
    breakIt: (doc) => {
      (doc.rules[0] as Rule).respond = { builtIn: true, delay: "soon" };
    },
    at: "/rules/0/respond/delay",
  },
];

describe("scenarios/scenario.schema.json (draft 2020-12, ajv)", () => {
  it("lists the shipped scenario files", () => {
    expect(SHIPPED.length).toBeGreaterThanOrEqual(5);
  });

  it.each(SHIPPED)("accepts the shipped %s", (file) => {
    const doc = parse(readFileSync(`${SCENARIOS}${file}`, "utf8"));
    expect(errorsOf(doc)).toEqual([]);
  });

  it.each(SHIPPED)("%s starts with the yaml-language-server $schema comment", (file) => {
    expect(readFileSync(`${SCENARIOS}${file}`, "utf8").split("\n")[0]).toBe(SCHEMA_COMMENT);
  });

  it("accepts the valid document the broken cases start from", () => {
    expect(errorsOf(valid())).toEqual([]);
    expect(loadScenarioText(JSON.stringify(valid()), "valid").ok).toBe(true);
  });

  it.each(BROKEN)("rejects $name, at $at, as the loader does", ({ breakIt, at }) => {
    const doc = valid() as Doc;
    breakIt(doc);

    const errors = errorsOf(doc);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.map((e) => e.instancePath)).toContain(at);
    // The schema and the loader are one format: the loader refuses it too.
    expect(loadScenarioText(JSON.stringify(doc), "broken").ok).toBe(false);
  });
});
