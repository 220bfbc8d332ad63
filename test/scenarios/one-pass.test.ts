import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type SandboxApp, type SandboxDeps } from "../../src/app.js";
import { admin } from "../admin/admin-client.js";
import { killStray, ROOT, runToExit } from "../cli/cli-process.js";

// Every problem of a scenario file in one pass: schema, operation ids, templates, values, each where it is written
// and with the fix where one is close. Before, a file whose values broke the schema reported only those; the unknown
// operation and the template typo appeared once they were fixed.

afterEach(killStray);

const DIR = "test/fixtures/scenarios/one-pass";
const FOUR = `${DIR}/four-mistakes.yaml`;
const KEYS = `${DIR}/misspelt-keys.yaml`;

/** The four mistakes of four-mistakes.yaml, at the line and column counted by hand in the file. */
const FOUR_MISTAKES = [
  `${FOUR}:5:18: rules.0.when.operation: unknown operation "add-alergy"; did you mean "add-allergy"?`,
  `${FOUR}:7:15: rules.0.respond.status: an HTTP status from 200 to 599`,
  `${FOUR}:8:14: rules.0.respond.delay: a duration such as 500, "250ms", "2s"; did you mean "5s"?`,
  `${FOUR}:11:22: rules.0.respond.outcome.diagnostics: `,
];
/** What the template mistake says after its place. */
const TEMPLATE = /unknown value "request\.messageid"; did you mean "request\.messageId"\?/;

/** The misspelt keys of misspelt-keys.yaml, each at the key, and the rule that lacks its respond. */
const KEY_MISTAKES = [
  `${KEYS}:3:5: rules.0: a rule needs exactly one of respond or sequence`,
  `${KEYS}:5:7: rules.0.when: unknown key "operaton"; did you mean "operation"?`,
  `${KEYS}:6:5: rules.0: unknown key "respnd"; did you mean "respond"?`,
];

/** Lines that start with one of `starts`, in that order, and nothing else. */
function expectLines(lines: string[], starts: string[]) {
  expect(lines).toHaveLength(starts.length);
  for (const [i, start] of starts.entries()) {
    expect(lines[i]?.startsWith(start), `${lines[i]} starts with ${start}`).toBe(true);
  }
}

describe("validate: every problem of a file in one pass", { timeout: 30_000 }, () => {
  it("the schema's problems and the rule's (operation, template) together, in file order, each with its fix", async () => {
    const run = await runToExit(["validate", FOUR]);
    expect(run.code).toBe(1);
    const lines = run.stderr.split("\n").filter(Boolean);
    expectLines(lines, FOUR_MISTAKES);
    expect(lines[0]).toContain("Known operations: ");
    expect(lines[3]).toMatch(TEMPLATE);
    expect(run.stdout).toContain("validation failed (1 file checked)");
  });

  it("unknown keys: did you mean the key of that place", async () => {
    const run = await runToExit(["validate", KEYS]);
    expect(run.code).toBe(1);
    expect(run.stderr.split("\n").filter(Boolean)).toEqual(KEY_MISTAKES);
  });
});

describe("the server's loaders report the same problems", () => {
  const dirs: string[] = [];
  const open: SandboxApp[] = [];
  const quiet: Partial<SandboxDeps> = { logger: { info: () => undefined, error: () => undefined } };
  afterEach(() => {
    for (const s of open.splice(0)) s.close();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const folder = (file?: string) => {
    const dir = mkdtempSync(join(tmpdir(), "one-pass-"));
    dirs.push(dir);
    if (file) cpSync(join(ROOT, file), join(dir, "four-mistakes.yaml"));
    return dir;
  };
  /** The mistakes as a loader names the file: relative to the scenarios folder. */
  const inFolder = FOUR_MISTAKES.map((m) => m.replace(`${DIR}/`, ""));

  it("at start: the sandbox refuses to start, naming all four", () => {
    const dir = folder(FOUR);
    let said = "";
    try {
      open.push(createApp({ scenarios: dir, watch: false }, quiet));
    } catch (error) {
      said = (error as Error).message;
    }
    const lines = said.split("\n").slice(1);
    expectLines(lines, inFolder);
    expect(lines[3]).toMatch(TEMPLATE);
  });

  it("on reload: 400, naming all four", async () => {
    const dir = folder();
    const sandbox = createApp({ scenarios: dir, watch: false }, quiet);
    open.push(sandbox);
    writeFileSync(join(dir, "four-mistakes.yaml"), readFileSync(join(ROOT, FOUR)));
    const reply = await admin(sandbox.app, "POST", "/scenarios/reload");
    expect(reply.status).toBe(400);
    const diagnostics = (reply.body.issue as Array<{ diagnostics: string }>).map((i) => i.diagnostics);
    expectLines(diagnostics, inFolder);
    expect(diagnostics[3]).toMatch(TEMPLATE);
  });

  it("POST /__admin/scenarios: 400 with an issue for each of the four", async () => {
    const sandbox = createApp({ scenarios: folder(), watch: false }, quiet);
    open.push(sandbox);
    const reply = await admin(sandbox.app, "POST", "/scenarios", {
      body: readFileSync(join(ROOT, FOUR), "utf8"),
      headers: { "content-type": "application/yaml" },
    });
    expect(reply.status).toBe(400);
    const diagnostics = (reply.body.issue as Array<{ diagnostics: string }>).map((i) => i.diagnostics);
    // A document sent at run time is named "runtime-N".
    expectLines(
      diagnostics.map((d) => d.replace(/^runtime-\d+/, "doc")),
      FOUR_MISTAKES.map((m) => m.replace(FOUR, "doc")),
    );
    expect(diagnostics[3]).toMatch(TEMPLATE);
  });
});
