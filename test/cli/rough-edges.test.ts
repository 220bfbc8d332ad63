import type { AllergyIntolerance, OperationOutcome } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type SandboxDeps } from "../../src/app.js";
import { runCli } from "../../src/cli/main.js";
import { example, messageBundle, post } from "../support/messages.js";
import { killStray, startCli } from "./cli-process.js";

// The CLI's small courtesies: did you mean, each command's own --help, one-line errors, plural forms.

afterEach(killStray);

/** Runs the CLI in this process: its exit code and what it printed. */
async function run(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (l) => out.push(l), err: (l) => err.push(l), env: {} });
  return { code, stdout: out.join("\n"), stderr: err.join("\n") };
}

describe("did you mean", () => {
  it.each([
    ["servee", "serve"],
    ["valdiate", "validate"],
    ["shcema", "schema"],
  ])("a mistyped command, %s: exit 2, naming %s", async (typed, meant) => {
    const { code, stderr } = await run([typed]);
    expect(code).toBe(2);
    expect(stderr.split("\n")[0]).toBe(`Unknown command: ${typed}; did you mean "${meant}"?`);
  });

  it("a word that is no command gets no guess", async () => {
    const { code, stderr } = await run(["frobnicate"]);
    expect(code).toBe(2);
    expect(stderr.split("\n")[0]).toBe("Unknown command: frobnicate");
  });

  const quiet: Partial<SandboxDeps> = { logger: { info: () => undefined, error: () => undefined } };
  const allergy = () => example<AllergyIntolerance>("allergyintolerance-example.json");

  it("an unknown event code in a message: the closest of the 18 operations' codes", async () => {
    const sandbox = createApp({ watch: false }, quiet);
    try {
      const reply = await post(sandbox.app, messageBundle("add-alergy", [allergy()]));
      expect(reply.status).toBe(400);
      const said = (reply.body as OperationOutcome).issue[0]?.diagnostics ?? "";
      expect(said).toMatch(/^Unknown event "add-alergy"\. Did you mean "add-allergy"\? Known event codes: /);
      const other = await post(sandbox.app, messageBundle("make-coffee", [allergy()]));
      expect((other.body as OperationOutcome).issue[0]?.diagnostics).toMatch(
        /^Unknown event "make-coffee"\. Known event codes: /,
      );
    } finally {
      sandbox.close();
    }
  });
});

describe("each command's own --help", () => {
  /** A line of the serve help's options table: what a command's own help must not print. */
  const SERVE_OPTION = /--max-connections/;

  it.each([
    ["validate", /^Usage: uae-fhir-sandbox validate /],
    ["schema", /^Usage: uae-fhir-sandbox schema /],
    ["trigger", /^Usage: uae-fhir-sandbox trigger /],
    ["export", /^Usage: uae-fhir-sandbox export /],
    ["example", /^Usage: uae-fhir-sandbox example /],
    ["replay", /^Usage: uae-fhir-sandbox replay /],
    ["backup", /^uae-fhir-sandbox backup /],
  ])("%s --help: exit 0, its own usage", async (command, usage) => {
    for (const help of ["--help", "-h"]) {
      const { code, stdout } = await run([command, help]);
      expect(code).toBe(0);
      expect(stdout).toMatch(usage);
      expect(stdout).not.toMatch(SERVE_OPTION);
    }
  });

  it("serve --help and --help: the whole help, with serve's options", async () => {
    for (const argv of [["serve", "--help"], ["--help"]]) {
      const { code, stdout } = await run(argv);
      expect(code).toBe(0);
      expect(stdout).toMatch(SERVE_OPTION);
    }
  });
});

describe("plural forms", { timeout: 30_000 }, () => {
  it("validate: 1 rule, 1 fixture patient, 1 pharmacy, 1 file", async () => {
    const valid = await run(["validate", "test/fixtures/scenarios/duplicates/10-first.yaml"]);
    expect(valid.stdout.split("\n")).toEqual([
      "ok test/fixtures/scenarios/duplicates/10-first.yaml: 1 rule, 1 fixture patient, 1 pharmacy",
      "1 scenario file valid",
    ]);
    const invalid = await run(["validate", "test/fixtures/scenarios/one-pass/four-mistakes.yaml"]);
    expect(invalid.stdout).toBe("validation failed (1 file checked)");
  });
});

describe("example --order N of an order the sandbox does not have", { timeout: 30_000 }, () => {
  it("one line naming the order and what to do, not the raw OperationOutcome", async () => {
    const { url } = await startCli(["--no-watch"]);
    const { code, stdout, stderr } = await run([
      "example",
      "confirm-drugs-availability",
      "--order",
      "99",
      "--pharmacy",
      "PH-DXB-0001",
      "--url",
      url,
    ]);
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr.split("\n")).toHaveLength(1);
    expect(stderr).toMatch(
      new RegExp(
        `^Order "99": the sandbox at ${url} has no such order \\(.+\\)\\. --order takes the id of one of its orders`,
      ),
    );
    expect(stderr).not.toContain("resourceType");
  });
});
