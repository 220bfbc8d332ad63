import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { formatProblem } from "../../src/config/yaml-file.js";
import { loadPlans, PlanProblems, requirePlans } from "../../src/conformance/load-plans.js";
import { buildCatalogue } from "../../src/routing/catalogue.js";

// Plans as data: the fixture plans load; each broken file's one mistake is reported where it is written, with a
// message that says what is wrong (and the nearest name when one is close).

const HERE = fileURLToPath(new URL("./fixtures/", import.meta.url));
const PLANS = `${HERE}plans`;
const BROKEN = `${HERE}broken-plans`;
const catalogue = buildCatalogue();

/** The text at line:column (1-based) of a file. */
const textAt = (file: string, line: number, column: number) =>
  (readFileSync(file, "utf8").split("\n")[line - 1] ?? "").slice(column - 1);

/** Each broken file's mistake: what the line:column points at, and what the message says. Hand-written. */
const MISTAKES: Record<string, { at: RegExp; says: RegExp }> = {
  "10-unknown-operation.yaml": {
    at: /^add-alergy$/,
    says: /answerNext\.operation: unknown operation "add-alergy"; did you mean "add-allergy"\? Known operations: view-patient-profile, /,
  },
  "20-unknown-rule.yaml": {
    at: /^reliable-mesaging$/,
    says: /"reliable-mesaging" is not a rule of this plan; did you mean "reliable-messaging"\? Its rules: reliable-messaging\./,
  },
  "30-duplicate-test-id.yaml": {
    at: /^retried$/,
    says: /tests\.1\.id: test id "retried" is already given at line 12; each must be unique in its plan/,
  },
  "40-duplicate-step-id.yaml": {
    at: /^retry$/,
    says: /tests\.0\.steps\.1\.id: step id "retry" is already given at line 16; each must be unique in its test/,
  },
  "50-sender-kind-in-receiver-plan.yaml": {
    at: /^expectRetry: \{\}$/,
    says: /expectRetry is a sender step kind; this plan's role is receiver, whose kinds are expectSubscription, pushOrder, /,
  },
  "60-unknown-key.yaml": {
    at: /^withn: 5s \}$/,
    says: /unknown key "withn"; did you mean "within"\?/,
  },
  "70-shipped-plan-id.yaml": {
    at: /^sender-mini$/,
    says: /plan id "sender-mini" is already given at conformance\/sender-mini\.yaml:3:5; each plan id must be unique across the plans, the shipped ones included/,
  },
  "80-custom-tag.yaml": { at: /^!secret retried$/, says: /Unresolved tag: !secret/ },
  "90-receiver-kind-in-sender-plan.yaml": {
    at: /^expectAck: \{\}$/,
    says: /expectAck is a receiver step kind; this plan's role is sender, whose kinds are answerNext, expectOperations, expectRetry, expectRetryAfterHonoured, expectNoRetry, expectNewId$/,
  },
};

describe("loadPlans", () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it("loads the fixture plans as shipped ones, named conformance/NAME.yaml, operation names as their ids", () => {
    const load = loadPlans({ catalogue, shipped: PLANS });

    expect(load.ok ? [] : load.problems.map(formatProblem)).toEqual([]);
    expect(load.plans.map((p) => [p.source, p.plan.id, p.plan.role])).toEqual([
      ["conformance/receiver-mini.yaml", "receiver-mini", "receiver"],
      ["conformance/sender-mini.yaml", "sender-mini", "sender"],
    ]);
    const sender = load.plans[1]?.plan;
    // AllergyIntolerance-Create is add-allergy's event code: the engine compares ids.
    expect(sender?.tests[1]?.steps[0]).toMatchObject({ answerNext: { operation: "add-allergy" } });
    // Defaults of the schema are there for the engine.
    expect(sender?.tests[1]?.steps[1]).toMatchObject({ expectRetry: { sameId: true, sameContent: true } });
    expect(sender?.tests[0]?.required).toBe(true);
  });

  it("a host folder's plans come after the shipped ones, named by their path", () => {
    const dir = mkdtempSync(join(tmpdir(), "plans-"));
    dirs.push(dir);
    const own = readFileSync(`${PLANS}/receiver-mini.yaml`, "utf8").replace("id: receiver-mini", "id: my-pharmacy");
    writeFileSync(join(dir, "mine.yml"), own);
    writeFileSync(join(dir, "notes.txt"), "not a plan");

    const load = loadPlans({ catalogue, shipped: PLANS, folder: dir });

    expect(load.ok).toBe(true);
    expect(load.plans.map((p) => [p.source, p.plan.id])).toEqual([
      ["conformance/receiver-mini.yaml", "receiver-mini"],
      ["conformance/sender-mini.yaml", "sender-mini"],
      [join(dir, "mine.yml"), "my-pharmacy"],
    ]);
  });

  it("the shipped folder given as the host's too is read once (no id clashes with itself)", () => {
    const load = loadPlans({ catalogue, shipped: PLANS, folder: PLANS });
    expect(load.ok).toBe(true);
    expect(load.plans).toHaveLength(2);
    const file = loadPlans({ catalogue, shipped: PLANS, folder: `${PLANS}/sender-mini.yaml` });
    expect(file.ok).toBe(true);
  });

  it("a broken folder: each file's one mistake, at file:line:column where it is written; the valid plans still listed", () => {
    const load = loadPlans({ catalogue, shipped: PLANS, folder: BROKEN });

    expect(load.ok).toBe(false);
    const problems = load.ok ? [] : load.problems;
    expect(problems.map((p) => p.file.slice(BROKEN.length + 1))).toEqual(Object.keys(MISTAKES));
    for (const problem of problems) {
      const mistake = MISTAKES[problem.file.slice(BROKEN.length + 1)];
      expect(problem.message, formatProblem(problem)).toMatch(mistake?.says ?? /never/);
      expect(textAt(problem.file, problem.line, problem.column), formatProblem(problem)).toMatch(
        mistake?.at ?? /never/,
      );
    }
    expect(load.plans.map((p) => p.plan.id)).toEqual(["receiver-mini", "sender-mini"]);
  });

  it("a schema problem and the checks beyond the schema in one pass", () => {
    const dir = mkdtempSync(join(tmpdir(), "plans-"));
    dirs.push(dir);
    const text = readFileSync(`${BROKEN}/10-unknown-operation.yaml`, "utf8").replace('version: "1"', "version: 1");
    writeFileSync(join(dir, "two.yaml"), text);

    const load = loadPlans({ catalogue, shipped: null, folder: dir });

    const messages = load.ok ? [] : load.problems.map((p) => `${p.line}: ${p.message}`);
    expect(messages).toEqual([
      expect.stringMatching(/^4: version: Invalid input: expected string, received number$/),
      expect.stringMatching(/^19: tests\.0\.steps\.0\.answerNext\.operation: unknown operation "add-alergy"/),
    ]);
  });

  it.each([
    [
      "a key unknown deep in a step",
      ["diagnostics: try again", "text: try again"],
      "text: try again",
      [
        /^tests\.1\.steps\.0\.answerNext\.respond\.outcome: unknown key "text"/,
        /^tests\.1\.steps\.0\.answerNext\.respond\.outcome\.diagnostics: Invalid input: expected string/,
      ],
    ],
    [
      "a misspelt kind",
      ["expectRetry: { within: 30s }", "expectRetri: { within: 30s }"],
      "expectRetri:",
      [/^tests\.1\.steps\.1: unknown key "expectRetri"; did you mean "expectRetry"\?$/],
    ],
    [
      "two kinds in one step",
      ["expectNewId: {}", "expectNewId: {}\n        expectNoRetry: { for: 1s }"],
      "id: new-id",
      [/^tests\.2\.steps\.2: a step is one kind; found expectNoRetry and expectNewId \(make them two steps\)/],
    ],
  ])("%s: said precisely, where it is written (not a failed union's 'Invalid input')", (_, [from, to], at, says) => {
    const dir = mkdtempSync(join(tmpdir(), "plans-"));
    dirs.push(dir);
    const text = readFileSync(`${PLANS}/sender-mini.yaml`, "utf8").replace(from as string, to as string);
    writeFileSync(join(dir, "step.yaml"), text);

    const load = loadPlans({ catalogue, shipped: null, folder: dir });

    const problems = load.ok ? [] : load.problems;
    expect(problems).toHaveLength(says.length);
    const [first, ...others] = says;
    const problem = problems.find((p) => first?.test(p.message));
    expect(problem, JSON.stringify(problems)).toBeDefined();
    for (const more of others) expect(problems.map((p) => p.message)).toContainEqual(expect.stringMatching(more));
    const line = text.split("\n")[(problem?.line ?? 0) - 1] ?? "";
    expect(line.slice((problem?.column ?? 0) - 1)).toMatch(new RegExp(`^${at.replace(/[{}]/g, "\\$&")}`));
    // Never a failed union's message.
    expect(problems.map((p) => p.message).join("\n")).not.toMatch(/Invalid input$/m);
  });

  it("an answer's respond is checked as a scenario rule's: a template typo, where it is written", () => {
    const dir = mkdtempSync(join(tmpdir(), "plans-"));
    dirs.push(dir);
    const text = readFileSync(`${PLANS}/sender-mini.yaml`, "utf8").replace(
      "diagnostics: try again",
      'diagnostics: "again {{ request.mesageId }}"',
    );
    writeFileSync(join(dir, "typo.yaml"), text);

    const load = loadPlans({ catalogue, shipped: null, folder: dir });

    const problems = load.ok ? [] : load.problems;
    expect(problems).toHaveLength(1);
    expect(problems[0]?.message).toMatch(
      /^tests\.1\.steps\.0\.answerNext\.respond\.outcome\.diagnostics: .*unknown value "request\.mesageId"; did you mean "request\.messageId"\?/,
    );
    expect(problems[0]?.line).toBe(text.split("\n").findIndex((l) => l.includes("mesageId")) + 1);
  });

  it("a folder or file that does not exist, and a folder with no plans, are problems of the whole path", () => {
    const empty = mkdtempSync(join(tmpdir(), "plans-"));
    dirs.push(empty);
    for (const [folder, says] of [
      ["no/such/plans", "no such folder or file (--conformance)"],
      [empty, "no *.yaml or *.yml plan files (--conformance)"],
    ] as const) {
      const load = loadPlans({ catalogue, shipped: PLANS, folder });
      expect(load.ok ? [] : load.problems).toEqual([{ file: folder, line: 0, column: 0, message: says }]);
    }
  });

  it("a plan file that is a link to nowhere is a problem of that file, and the others load", () => {
    const dir = mkdtempSync(join(tmpdir(), "plans-"));
    dirs.push(dir);
    symlinkSync(join(dir, "gone.yaml"), join(dir, "a-link.yaml"));
    writeFileSync(
      join(dir, "b.yaml"),
      readFileSync(`${PLANS}/sender-mini.yaml`, "utf8").replace("sender-mini", "mine"),
    );

    const load = loadPlans({ catalogue, shipped: null, folder: dir });

    expect(load.ok ? [] : load.problems.map(formatProblem)).toEqual([
      `${join(dir, "a-link.yaml")}: cannot be read: no such file`,
    ]);
    expect(load.plans.map((p) => p.plan.id)).toEqual(["mine"]);
  });

  it("refuses a file larger than the limit before parsing it, and bounds YAML aliases", () => {
    const dir = mkdtempSync(join(tmpdir(), "plans-"));
    dirs.push(dir);
    writeFileSync(join(dir, "big.yaml"), `# ${"x".repeat(3 * 1024 * 1024)}\n`);
    const bomb = [
      "a: &a [x, x, x, x, x, x, x, x, x, x]",
      ...Array.from(
        { length: 8 },
        (_, i) =>
          `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(10)
            .fill(`*${String.fromCharCode(97 + i)}`)
            .join(", ")}]`,
      ),
    ].join("\n");
    writeFileSync(join(dir, "laughs.yaml"), bomb);

    const load = loadPlans({ catalogue, shipped: null, folder: dir });

    const messages = load.ok ? [] : load.problems.map((p) => `${p.file.slice(dir.length + 1)}: ${p.message}`);
    expect(messages).toEqual([
      expect.stringMatching(/^big\.yaml: file is \d+ bytes; the limit is 2097152$/),
      expect.stringMatching(/^laughs\.yaml: .*(alias|Excessive)/i),
    ]);
  });

  it("requirePlans: the plans, or an error listing every problem as file:line:column: message", () => {
    expect(requirePlans({ catalogue, shipped: PLANS }).map((p) => p.plan.id)).toEqual(["receiver-mini", "sender-mini"]);
    const thrown = (() => {
      try {
        requirePlans({ catalogue, shipped: PLANS, folder: `${BROKEN}/60-unknown-key.yaml` });
      } catch (error) {
        return error;
      }
    })();
    expect(thrown).toBeInstanceOf(PlanProblems);
    expect((thrown as PlanProblems).message).toBe(
      `conformance plans with problems (uae-fhir-sandbox validate --conformance checks them):\n${BROKEN}/60-unknown-key.yaml:21:22: tests.0.steps.1.expectAck: unknown key "withn"; did you mean "within"?`,
    );
  });
});
