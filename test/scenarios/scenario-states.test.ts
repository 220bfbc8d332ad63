import { describe, expect, it } from "vitest";
import { formatProblem } from "../../src/config/yaml-file.js";
import { loadScenarioText } from "../../src/scenarios/load.js";

const problemsOf = (yaml: string) => {
  const load = loadScenarioText(yaml, "states.yaml");
  return load.ok ? [] : load.problems.map(formatProblem);
};

describe("scenario states in a scenario file", () => {
  it("accepts scenario, requiredState, newState and each kind of stateKey", () => {
    const yaml = `
rules:
  - { when: { operation: add-allergy }, scenario: s, requiredState: Started, newState: b, respond: { builtIn: true } }
  - { scenario: s, stateKey: workspace, respond: { builtIn: true } }
  - { scenario: s, stateKey: { fhirpath: "Bundle.entry.resource.ofType(Task).identifier.first()" }, respond: { builtIn: true } }
`;
    expect(problemsOf(yaml)).toEqual([]);
  });

  it.each([["requiredState: a"], ["newState: b"], ["stateKey: patient"]])(
    "refuses %s without scenario, at its line",
    (field) => {
      const [problem, ...more] = problemsOf(`rules:\n  - respond: { builtIn: true }\n    ${field}\n`);
      expect(more).toEqual([]);
      const key = field.split(":")[0];
      expect(problem).toContain(`${key} needs scenario`);
      expect(problem).toMatch(/^states\.yaml:3:/);
    },
  );

  it("refuses a stateKey that is not valid FHIRPath, and an unknown stateKey", () => {
    expect(
      problemsOf(`rules:\n  - { scenario: s, stateKey: { fhirpath: "((" }, respond: { builtIn: true } }\n`),
    ).toEqual([expect.stringContaining('stateKey.fhirpath "((" is not a valid FHIRPath expression')]);
    expect(problemsOf(`rules:\n  - { scenario: s, stateKey: order, respond: { builtIn: true } }\n`)).toHaveLength(1);
  });

  it.each([["0"], ["1.5"], ["-0.1"], ['"half"']])("refuses probability: %s (0 < p ≤ 1)", (p) => {
    const [problem, ...more] = problemsOf(`rules:\n  - respond: { builtIn: true }\n    probability: ${p}\n`);
    expect(more).toEqual([]);
    expect(problem).toMatch(/^states\.yaml:3:\d+: .*probability/);
  });

  it.each([["1"], ["0.1"], ["0.001"]])("accepts probability: %s", (p) => {
    expect(problemsOf(`rules:\n  - respond: { builtIn: true }\n    probability: ${p}\n`)).toEqual([]);
  });

  it.each([
    ["{ chunks: 1, over: 1s }", "at least 2 chunks"],
    ["{ chunks: 2.5, over: 1s }", "chunks"],
    ["{ chunks: 10, over: 6m }", "dribble.over must be at most 5m"],
    ["{ chunks: 10, over: 5 seconds }", "over"],
    ["{ chunks: 10 }", "over"],
  ])("refuses dribble: %s", (dribble, said) => {
    const [problem, ...more] = problemsOf(`rules:\n  - respond: { builtIn: true, dribble: ${dribble} }\n`);
    expect(more).toEqual([]);
    expect(problem).toContain(said);
  });

  it("accepts dribble: { chunks: 10, over: 5s }", () => {
    expect(problemsOf("rules:\n  - respond: { builtIn: true, dribble: { chunks: 10, over: 5s } }\n")).toEqual([]);
  });
});
