import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { loadPlans, shippedConformance } from "../../src/conformance/load-plans.js";
import { testScript } from "../../src/conformance/report/testscript.js";
import { buildCatalogue } from "../../src/routing/catalogue.js";
import { emittedProblems } from "../support/validator.js";

// The plans the package ships (conformance/*.yaml), whatever they are: they load without a problem, there is one for
// each role, each validates against the committed JSON Schema, and each exports as a valid R4 TestScript.

const FOLDER = fileURLToPath(new URL("../../conformance/", import.meta.url));
const SHIPPED = readdirSync(FOLDER)
  .filter((f) => /\.ya?ml$/.test(f))
  .sort();
const SCHEMA_COMMENT = "# yaml-language-server: $schema=./conformance.schema.json";

const schema = JSON.parse(readFileSync(`${FOLDER}conformance.schema.json`, "utf8"));
const validate = new Ajv2020({ allErrors: true, strict: true }).compile(schema);

describe("the shipped conformance plans", () => {
  const load = loadPlans({ catalogue: buildCatalogue() });

  it("are found where the package ships them, beside the code", () => {
    expect(shippedConformance()).toBe(FOLDER.replace(/\/$/, ""));
  });

  it("load without a problem, one plan per file, named conformance/NAME.yaml", () => {
    expect(load.ok ? [] : load.problems).toEqual([]);
    expect(load.plans.map((p) => p.source)).toEqual(SHIPPED.map((f) => `conformance/${f}`));
  });

  it("hold at least one plan for each role", () => {
    const roles = new Set(load.plans.map((p) => p.plan.role));
    expect([...roles].sort()).toEqual(["receiver", "sender"]);
  });

  it("each validates against conformance.schema.json and starts with the yaml-language-server comment", () => {
    for (const file of SHIPPED) {
      const text = readFileSync(`${FOLDER}${file}`, "utf8");
      expect(validate(parse(text)) ? [] : validate.errors, file).toEqual([]);
      expect(text.split("\n")[0], file).toBe(SCHEMA_COMMENT);
    }
  });

  it("each exports as a TestScript that is valid R4 by both validators", () => {
    for (const { plan } of load.plans) expect(emittedProblems(testScript(plan)), plan.id).toEqual([]);
  });
});
