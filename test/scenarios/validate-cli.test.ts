import { readdirSync, readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { killStray, ROOT, runToExit } from "../cli/cli-process.js";

// `uae-fhir-sandbox validate` and `schema`, run as CI runs them: node dist/cli/main.js
// as a child process (npm test builds dist before vitest).

afterEach(killStray);

const BROKEN = "test/fixtures/scenarios/broken";
const SHIPPED = "scenarios";

const scenarioFiles = (dir: string) =>
  readdirSync(`${ROOT}${dir}`)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort();

/** A problem line: path:line:column: message. */
const PROBLEM = /^(.+?):(\d+):(\d+): (.+)$/;

function problems(stderr: string) {
  return stderr
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => {
      const m = PROBLEM.exec(l);
      if (!m) throw new Error(`not a path:line:column: message line: ${JSON.stringify(l)}`);
      return { file: m[1] as string, line: Number(m[2]), column: Number(m[3]), message: m[4] as string };
    });
}

/** The text at line:column (1-based) of a repository file. */
function textAt(file: string, line: number, column: number): string {
  return (readFileSync(`${ROOT}${file}`, "utf8").split("\n")[line - 1] ?? "").slice(column - 1);
}

/** The mistakes in test/fixtures/scenarios/broken, one per file, and where they are written. */
const MISTAKES = [
  {
    file: `${BROKEN}/10-respond-and-sequence.yaml`,
    at: "name: both",
    says: /exactly one of respond or sequence/,
  },
  { file: `${BROKEN}/20-unknown-key.yaml`, at: "delay: 2s", says: /unknown key "delay"/ },
  { file: `${BROKEN}/30-bad-fhirpath.yaml`, at: "when:", says: /not a valid FHIRPath/ },
  {
    file: `${BROKEN}/40-wrong-fixture-type.yaml`,
    at: "resourceType: Condition",
    says: /allergies holds AllergyIntolerance resources, not Condition/,
  },
  {
    file: `${BROKEN}/50-unknown-operation.yaml`,
    at: "add-alergy",
    says: /unknown operation "add-alergy"; did you mean "add-allergy"\? Known operations: view-patient-profile, .*cancel-task/,
  },
  {
    file: `${BROKEN}/60-backreference.yaml`,
    at: '"\\^\\(ab\\)',
    says: /rules\.0\.when\.headers\.X-Pair\.matches: \/\^\(ab\)\\1\$\/ cannot be used: \\1 is a backreference/,
  },
];

describe("uae-fhir-sandbox validate", { timeout: 30_000 }, () => {
  it.each([
    ["the shipped folder", [SHIPPED]],
    ["no argument (./scenarios)", []],
  ])("%s: exit 0, one ok line per file", async (_, args) => {
    const run = await runToExit(["validate", ...args]);

    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const ok = run.stdout.split("\n").filter((l) => l.startsWith("ok "));
    const files = scenarioFiles(SHIPPED);
    expect(files.length).toBeGreaterThan(0);
    expect(ok.map((l) => /^ok (?:\.\/)?scenarios\/([^:]+):/.exec(l)?.[1])).toEqual(files);
    expect(run.stdout).toContain(`${files.length} scenario files valid`);
  });

  it("a folder with broken files: exit 1, path:line:column: message for each mistake, ok for the valid one", async () => {
    const run = await runToExit(["validate", BROKEN]);

    expect(run.code).toBe(1);
    const found = problems(run.stderr);
    expect(found.map((p) => p.file)).toEqual(MISTAKES.map((m) => m.file));
    for (const [i, mistake] of MISTAKES.entries()) {
      const problem = found[i] as (typeof found)[number];
      expect(problem.message).toMatch(mistake.says);
      // The line and column point where the mistake is written.
      expect(textAt(problem.file, problem.line, problem.column)).toMatch(new RegExp(`^(- )?${mistake.at}`));
    }
    expect(run.stdout.split("\n").filter((l) => l.startsWith("ok "))).toEqual([
      expect.stringMatching(new RegExp(`^ok ${BROKEN}/00-valid\\.yaml: 1 rule, 0 fixture patients, 0 pharmacies$`)),
    ]);
    expect(run.stdout).toContain("validation failed (7 files checked)");
  });

  it.each(MISTAKES)("a single broken file, $file: exit 1, its one problem", async ({ file, at, says }) => {
    const run = await runToExit(["validate", file]);

    expect(run.code).toBe(1);
    const [problem, ...more] = problems(run.stderr);
    expect(more).toEqual([]);
    expect(problem?.file).toBe(file);
    expect(problem?.message).toMatch(says);
    expect(textAt(file, problem?.line ?? 0, problem?.column ?? 0)).toMatch(new RegExp(`^(- )?${at}`));
  });

  it("a single valid file: exit 0, one ok line", async () => {
    const run = await runToExit(["validate", `${SHIPPED}/10-magic-patients.yaml`]);

    expect(run.code).toBe(0);
    expect(run.stderr).toBe("");
    expect(run.stdout).toMatch(/^ok scenarios\/10-magic-patients\.yaml: 6 rules/m);
    expect(run.stdout).toContain("1 scenario file valid");
  });

  it("names given twice across a folder's files: exit 1, each at its second place, naming the first", async () => {
    const dir = "test/fixtures/scenarios/duplicates";
    const run = await runToExit(["validate", dir]);

    expect(run.code).toBe(1);
    const found = problems(run.stderr);
    const second = `${dir}/20-second.yaml`;
    const first = `${dir}/10-first.yaml`;
    // [what, where it is written the second time, where the first time]
    const expected = [
      ["rule name", "allergy-down", "allergy-down", 19],
      ["fixture patient id", "fixture-amina", "fixture-amina", 7],
      ["fixture record", "AllergyIntolerance/amina-penicillin", "amina-penicillin", 12],
      ["pharmacy licence", "PH-DXB-0001", "PH-DXB-0001", 16],
    ] as const;
    expect(found).toHaveLength(expected.length);
    for (const [what, key, text, firstLine] of expected) {
      const problem = found.find((p) => p.message.startsWith(`${what} "${key}"`));
      expect(problem, `${what} ${key} in ${run.stderr}`).toBeDefined();
      expect(problem?.file).toBe(second);
      expect(textAt(second, problem?.line ?? 0, problem?.column ?? 0)).toMatch(new RegExp(`^${text}`));
      // Named as the folder names its files, as the sandbox does when it loads them.
      expect(problem?.message).toContain(`is already given at 10-first.yaml:${firstLine}:`);
      const [, , column] = /:(\d+):(\d+);/.exec(problem?.message ?? "") ?? [];
      expect(textAt(first, firstLine, Number(column))).toMatch(new RegExp(`^${text}`));
    }
    expect(run.stdout).toMatch(new RegExp(`^ok ${first}: 1 rule,`, "m"));
  });

  it("--operations: rules may name the event codes and aliases of an operations file", async () => {
    const yaml = "test/fixtures/scenarios/rules/renamed-operation.yaml";
    const plain = await runToExit(["validate", yaml]);
    expect(plain.code).toBe(1);
    expect(plain.stderr).toMatch(/unknown operation "AllergyIntolerance-Create"/);

    const renamed = await runToExit([
      "validate",
      "--operations",
      "test/fixtures/operations/rename-add-allergy.yaml",
      yaml,
    ]);
    expect(renamed.stderr).toBe("");
    expect(renamed.code).toBe(0);
    expect(renamed.stdout).toContain("1 scenario file valid");
  });

  it("a path that does not exist: exit 1, naming it", async () => {
    const run = await runToExit(["validate", "no/such/scenarios"]);

    expect(run.code).toBe(1);
    expect(run.stderr).toContain("no/such/scenarios: no such file or folder");
  });
});

describe("uae-fhir-sandbox schema", { timeout: 30_000 }, () => {
  it("prints the committed scenarios/scenario.schema.json (regenerate it when the format changes)", async () => {
    const run = await runToExit(["schema"]);

    expect(run.code).toBe(0);
    const committed = JSON.parse(readFileSync(`${ROOT}${SHIPPED}/scenario.schema.json`, "utf8"));
    // Compared as JSON: the committed file is formatted by biome.
    expect(JSON.parse(run.stdout)).toEqual(committed);
  });
});
