import { readdirSync, readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { killStray, ROOT, runToExit } from "../cli/cli-process.js";

// `uae-fhir-sandbox validate --conformance` and `schema conformance`, run as CI runs them: node dist/cli/main.js as
// a child process (npm test builds dist before vitest).

afterEach(killStray);

const PLANS = "test/conformance/fixtures/plans";
const BROKEN = "test/conformance/fixtures/broken-plans";

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
const textAt = (file: string, line: number, column: number) =>
  (readFileSync(`${ROOT}${file}`, "utf8").split("\n")[line - 1] ?? "").slice(column - 1);

/** The broken files' mistakes, where they are written (the shipped-id one is valid here: no shipped plan is sender-mini). */
const MISTAKES: Array<[string, RegExp, RegExp]> = [
  ["10-unknown-operation.yaml", /^add-alergy/, /unknown operation "add-alergy"; did you mean "add-allergy"\?/],
  ["20-unknown-rule.yaml", /^reliable-mesaging/, /is not a rule of this plan; did you mean "reliable-messaging"\?/],
  ["30-duplicate-test-id.yaml", /^retried/, /test id "retried" is already given at line 12/],
  ["40-duplicate-step-id.yaml", /^retry/, /step id "retry" is already given at line 16/],
  ["50-sender-kind-in-receiver-plan.yaml", /^expectRetry/, /expectRetry is a sender step kind/],
  ["60-unknown-key.yaml", /^withn/, /unknown key "withn"; did you mean "within"\?/],
  ["80-custom-tag.yaml", /^!secret/, /Unresolved tag: !secret/],
  ["90-receiver-kind-in-sender-plan.yaml", /^expectAck/, /expectAck is a receiver step kind/],
];

describe("uae-fhir-sandbox validate --conformance", { timeout: 30_000 }, () => {
  it("a folder of valid plans: exit 0, ok file: N tests, M steps for each, and no scenario files checked", async () => {
    const run = await runToExit(["validate", "--conformance", PLANS]);

    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout.split("\n").filter(Boolean)).toEqual([
      `ok ${PLANS}/receiver-mini.yaml: 2 tests, 9 steps`,
      `ok ${PLANS}/sender-mini.yaml: 3 tests, 7 steps`,
      "2 plan files valid",
    ]);
  });

  it("a folder of broken plans: exit 1, file:line:column: message at each mistake, ok for the valid one", async () => {
    const run = await runToExit(["validate", "--conformance", BROKEN]);

    expect(run.code).toBe(1);
    const found = problems(run.stderr);
    expect(found.map((p) => p.file)).toEqual(MISTAKES.map(([file]) => `${BROKEN}/${file}`));
    for (const [i, [, at, says]] of MISTAKES.entries()) {
      const problem = found[i] as (typeof found)[number];
      expect(problem.message).toMatch(says);
      expect(textAt(problem.file, problem.line, problem.column)).toMatch(at);
    }
    expect(run.stdout.split("\n").filter(Boolean)).toEqual([
      `ok ${BROKEN}/70-shipped-plan-id.yaml: 1 test, 1 step`,
      `validation failed (${readdirSync(`${ROOT}${BROKEN}`).length} plan files checked)`,
    ]);
  });

  it("a plan file given directly: exit 1 with its one problem", async () => {
    const file = `${BROKEN}/60-unknown-key.yaml`;
    const run = await runToExit(["validate", "--conformance", file]);

    expect(run.code).toBe(1);
    const [problem, ...more] = problems(run.stderr);
    expect(more).toEqual([]);
    expect(problem?.file).toBe(file);
    expect(textAt(file, problem?.line ?? 0, problem?.column ?? 0)).toMatch(/^withn: 5s/);
    expect(run.stdout).toContain("validation failed (1 plan file checked)");
  });

  it("with scenario paths too, both are checked; CONFORMANCE, the flag's variable, as --conformance", async () => {
    const both = await runToExit(["validate", "scenarios", "--conformance", `${PLANS}/sender-mini.yaml`]);
    expect(both.stderr).toBe("");
    expect(both.code).toBe(0);
    expect(both.stdout).toMatch(/^\d+ scenario files valid$/m);
    expect(both.stdout).toContain(`ok ${PLANS}/sender-mini.yaml: 3 tests, 7 steps\n1 plan file valid`);

    const env = await runToExit(["validate"], { CONFORMANCE: BROKEN });
    expect(env.code).toBe(1);
    expect(env.stdout).toMatch(/^\d+ scenario files valid$/m);
    expect(problems(env.stderr).map((p) => p.file)).toEqual(MISTAKES.map(([file]) => `${BROKEN}/${file}`));
  });

  it("a path that does not exist: exit 1, naming it", async () => {
    const run = await runToExit(["validate", "--conformance", "no/such/plans"]);

    expect(run.code).toBe(1);
    expect(run.stderr).toBe("no/such/plans: no such file or folder\n");
  });
});

describe("uae-fhir-sandbox serve --conformance", { timeout: 30_000 }, () => {
  it("a path that does not exist is a usage error (exit 2) naming the flag, or its variable", async () => {
    const flag = await runToExit(["--port", "0", "--conformance", "no/such/plans"]);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain('--conformance "no/such/plans": no such folder or file');

    const env = await runToExit(["--port", "0"], { CONFORMANCE: "no/such/plans" });
    expect(env.code).toBe(2);
    expect(env.stderr).toContain('CONFORMANCE "no/such/plans" (--conformance): no such folder or file');
  });
});

describe("uae-fhir-sandbox schema conformance", { timeout: 30_000 }, () => {
  it("prints the committed conformance/conformance.schema.json (regenerate it when the plan format changes)", async () => {
    const run = await runToExit(["schema", "conformance"]);

    expect(run.code).toBe(0);
    const committed = JSON.parse(readFileSync(`${ROOT}conformance/conformance.schema.json`, "utf8"));
    // Compared as JSON: the committed file is formatted by biome.
    expect(JSON.parse(run.stdout)).toEqual(committed);
  });

  it("an unknown schema name is a usage error listing the three", async () => {
    const run = await runToExit(["schema", "toString"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("schema takes one of scenarios, clients, conformance; not toString");
  });
});
