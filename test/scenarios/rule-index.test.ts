import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import type { AllergyIntolerance, Bundle, Patient } from "fhir/r4.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp, type SandboxApp } from "../../src/app.js";
import type { Locate } from "../../src/config/yaml-file.js";
import type { RequestFacts } from "../../src/matching/matcher.js";
import { defaultOperationNames } from "../../src/scenarios/load.js";
import { type CompiledRule, compileRule, RuleSet } from "../../src/scenarios/rules.js";
import { Scenarios } from "../../src/scenarios/scenarios.js";
import { example, messageBundle, post, responseHeader } from "../support/messages.js";

const locate: Locate = (_path, message) => ({ file: "unit", line: 1, column: 1, message });

/** A compiled rule limited to these operations (none: any operation). */
function rule(name: string, operation?: string | string[]): CompiledRule {
  const compiled = compileRule(
    { name, ...(operation === undefined ? {} : { when: { operation } }), respond: { builtIn: true } },
    { source: "unit", index: 0, locate },
    defaultOperationNames(),
  );
  if (!compiled.rule) throw new Error(`rule ${name} did not compile: ${JSON.stringify(compiled.problems)}`);
  return compiled.rule;
}

const names = (rules: Iterable<CompiledRule>) => [...rules].map((r) => r.name);

const facts = (operation: string | null): RequestFacts => ({
  operation,
  direction: "inbound",
  path: "/uae-fhir/r4/$process-message",
  header: () => undefined,
  bundle: () => undefined,
  patientKeys: () => [],
});

describe("RuleSet: rules indexed by operation", () => {
  const RULES = [
    rule("a1", "add-allergy"),
    rule("any1"),
    rule("v1", "view-patient-profile"),
    rule("a2", "add-allergy"),
    rule("any2"),
    rule("both", ["view-patient-profile", "add-allergy"]),
    rule("v2", "view-patient-profile"),
  ];
  const set = new RuleSet(RULES);

  it.each([
    ["add-allergy", ["a1", "any1", "a2", "any2", "both"]],
    ["view-patient-profile", ["any1", "v1", "any2", "both", "v2"]],
    ["add-task", ["any1", "any2"]],
    [null, ["any1", "any2"]],
  ])("candidates(%s) yields that operation's rules and the operation-less ones, in overall order", (op, expected) => {
    expect(names(set.candidates(op))).toEqual(expected);
  });

  it("keeps every rule, in order, for the admin view", () => {
    expect(set.rules.map((r) => r.name)).toEqual(["a1", "any1", "v1", "a2", "any2", "both", "v2"]);
  });

  it("a rule that names an operation twice is a candidate once, and counted once", () => {
    const twice = rule("twice", ["add-allergy", "add-allergy"]);
    expect(names(new RuleSet([twice]).candidates("add-allergy"))).toEqual(["twice"]);

    const scenarios = new Scenarios();
    scenarios.add(
      "rules:\n  - { name: twice, when: { operation: [add-allergy, add-allergy] }, times: 1, respond: { builtIn: true } }\n",
    );
    scenarios.decide(facts("add-allergy"));
    expect(scenarios.decide(facts("add-allergy"))).toBeUndefined();
    expect(scenarios.view().rules).toMatchObject([{ name: "twice", matched: 2, answered: 1 }]);
  });

  it("an empty set, one with only operation rules, one with only operation-less rules", () => {
    expect(names(new RuleSet([]).candidates("add-allergy"))).toEqual([]);
    expect(names(new RuleSet([rule("a", "add-allergy")]).candidates("add-task"))).toEqual([]);
    expect(names(new RuleSet([rule("x"), rule("y")]).candidates("add-task"))).toEqual(["x", "y"]);
  });

  it("yields exactly the rules a linear scan would consider, in the same order (any mix of rules)", () => {
    const OPS = ["add-allergy", "view-patient-profile", "add-task", "get-pending-tasks"] as const;
    const spec = fc.option(fc.array(fc.constantFrom(...OPS), { minLength: 1, maxLength: 3 }), { nil: undefined });
    fc.assert(
      fc.property(fc.array(spec, { maxLength: 25 }), fc.option(fc.constantFrom(...OPS), { nil: null }), (specs, op) => {
        const rules = specs.map((ops, i) => rule(`r${i}`, ops));
        const linear = rules.filter((r) => {
          const limited = r.matcher.operations;
          return limited === undefined || (op !== null && limited.includes(op));
        });
        expect(names(new RuleSet(rules).candidates(op))).toEqual(names(linear));
      }),
      { numRuns: 200 },
    );
  });
});

describe("a message never evaluates the rules of other operations", () => {
  it("RuleSet with 1,000 add-allergy rules: a view-patient-profile candidate scan meets none of them", () => {
    const allergyRules = Array.from({ length: 1000 }, (_, i) => rule(`allergy-${i}`, "add-allergy"));
    const viewRule = rule("view", "view-patient-profile");
    const spies = allergyRules.map((r) => vi.spyOn(r.matcher, "matches"));
    const set = new RuleSet([...allergyRules.slice(0, 500), viewRule, ...allergyRules.slice(500)]);

    const candidates = names(set.candidates("view-patient-profile"));

    expect(candidates).toEqual(["view"]);
    expect(names(set.candidates("add-allergy"))).toHaveLength(1000);
    expect(spies.reduce((n, s) => n + s.mock.calls.length, 0)).toBe(0);
  });

  it("Scenarios.decide: 1,000 add-allergy rules are not evaluated for view-patient-profile, all are for add-allergy", () => {
    const scenarios = new Scenarios();
    const yaml = `rules:\n${Array.from(
      { length: 1000 },
      (_, i) =>
        `  - { name: allergy-${i}, when: { operation: add-allergy, headers: { X-Never: n-${i} } }, respond: { builtIn: true } }\n`,
    ).join("")}  - { name: catch-all, respond: { builtIn: true } }\n`;
    const added = scenarios.add(yaml);
    if (!added.ok) throw new Error(JSON.stringify(added.problems));
    const spies = added.scenario.rules.slice(0, 1000).map((r) => vi.spyOn(r.matcher, "matches"));
    const evaluated = () => spies.reduce((n, s) => n + s.mock.calls.length, 0);

    expect(scenarios.decide(facts("view-patient-profile"))?.rule.name).toBe("catch-all");
    expect(evaluated()).toBe(0);

    expect(scenarios.decide(facts("add-allergy"))?.rule.name).toBe("catch-all");
    expect(evaluated()).toBe(1000);
  });

  it("end to end: a view-patient-profile message evaluates none of 1,000 add-allergy rules", async () => {
    const dir = mkdtempSync(join(tmpdir(), "rule-index-test-"));
    let sandbox: SandboxApp | undefined;
    try {
      const lines = Array.from(
        { length: 1000 },
        (_, i) =>
          `  - { name: allergy-${i}, when: { operation: add-allergy, headers: { X-Never: n-${i} } }, respond: { status: 418, body: {} } }`,
      );
      writeFileSync(join(dir, "many.yaml"), `rules:\n${lines.join("\n")}\n`);
      sandbox = createApp({ scenarios: dir }, { logger: { info: () => undefined, error: () => undefined } });
      const rules = sandbox.scenarios.scenarios.flatMap((s) => s.rules);
      expect(rules).toHaveLength(1000);
      const spies = rules.map((r) => vi.spyOn(r.matcher, "matches"));
      const evaluated = () => spies.reduce((n, s) => n + s.mock.calls.length, 0);

      const view = await post(
        sandbox.app,
        messageBundle("view-patient-profile", [
          { resourceType: "Patient", identifier: [{ system: "urn:ae:emirates-id", value: "784-1980-1111111-3" }] },
        ] as Patient[]),
      );
      expect(view.status).toBe(200);
      expect(responseHeader(view.body as Bundle).response?.code).toBe("ok");
      expect(evaluated()).toBe(0);

      const add = await post(
        sandbox.app,
        messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")]),
      );
      expect(add.status).toBe(200);
      expect(evaluated()).toBe(1000);
    } finally {
      sandbox?.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("Scenarios.decide order and counting", () => {
  afterEach(() => vi.restoreAllMocks());

  it("runtime documents come first, in the order added; each call meets rules in order until one answers", () => {
    const scenarios = new Scenarios();
    const first = scenarios.add(
      "rules:\n  - { name: first, when: { operation: add-task }, respond: { builtIn: true } }\n",
    );
    const second = scenarios.add("rules:\n  - { name: second, respond: { builtIn: true } }\n");
    expect(first.ok && second.ok).toBe(true);

    expect(scenarios.decide(facts("add-task"))?.rule.name).toBe("first");
    expect(scenarios.decide(facts("add-allergy"))?.rule.name).toBe("second");
    expect(scenarios.view().rules).toMatchObject([
      { name: "first", matched: 1, answered: 1 },
      { name: "second", matched: 1, answered: 1 },
    ]);
    expect(scenarios.clearRuntime()).toBe(2);
    expect(scenarios.decide(facts("add-task"))).toBeUndefined();
  });
});
