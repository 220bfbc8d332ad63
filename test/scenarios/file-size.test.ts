import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { resolveServeConfig } from "../../src/cli/flags.js";
import { admin } from "../admin/admin-client.js";
import { killStray, runToExit } from "../cli/cli-process.js";
import { emiratesId } from "../support/emirates-id.js";

/**
 * `--max-scenario-file` (issue 10, defect 8): scenario files up to the limit
 * load — by default at least 16 MiB, so a 10,000-rule file or a large
 * recorded export loads — a larger one is refused naming the flag, and the
 * YAML protections (aliases, tags) stay whatever the limit.
 */

const MIB = 1024 * 1024;
const QUIET = { info: () => undefined, error: () => undefined };

const dirs: string[] = [];
afterEach(async () => {
  await killStray();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "scenario-size-"));
  dirs.push(dir);
  return dir;
}

/** A scenario file of `count` rules of about 280 bytes each, each for its own patient and header. */
function manyRules(count: number): string {
  const lines = ["name: many rules", "rules:"];
  for (let i = 0; i < count; i++) {
    const n = String(i).padStart(5, "0");
    lines.push(
      `  - name: scripted pending tasks ${n}`,
      "    when:",
      "      operation: get-pending-tasks",
      `      patient: "urn:ae:emirates-id|${emiratesId(1990, 1_000_000 + i)}"`,
      `      headers: { X-Sandbox-Case: "case-${n}" }`,
      "    respond: { status: 503, outcome: { code: transient, diagnostics: Try again later. } }",
    );
  }
  return `${lines.join("\n")}\n`;
}

/** The "billion laughs": nine levels of nine aliases. */
function aliasBomb(): string {
  const levels = "abcdefghi";
  const lines = ["rules:", "  - respond:", "      body:", `        a: &a [${Array(9).fill('"lol"').join(", ")}]`];
  for (let i = 1; i < levels.length; i++) {
    lines.push(
      `        ${levels[i]}: &${levels[i]} [${Array(9)
        .fill(`*${levels[i - 1]}`)
        .join(", ")}]`,
    );
  }
  return `${lines.join("\n")}\n`;
}

describe("--max-scenario-file", { timeout: 60_000 }, () => {
  it("defaults to 16 MiB on the CLI", () => {
    expect(resolveServeConfig({}, {}).sandbox.maxScenarioFile).toBe(16 * MIB);
  });

  it("a 10,000-rule file (over 2.5 MB) loads by default", async () => {
    const dir = tempDir();
    const file = join(dir, "many.yaml");
    writeFileSync(file, manyRules(10_000));
    expect(statSync(file).size).toBeGreaterThan(2.5 * 1000 * 1000);

    const s = createApp({ scenarios: dir, watch: false }, { logger: QUIET });
    try {
      const view = await admin(s.app, "GET", "/scenarios");
      expect(view.body.problems).toEqual([]);
      expect(view.body.rules).toHaveLength(10_000);
    } finally {
      s.close();
    }
  });

  it("a file over the limit is refused at start, naming the file, its size and the flag", () => {
    const dir = tempDir();
    const file = join(dir, "big.yaml");
    writeFileSync(file, manyRules(10));
    const size = statSync(file).size;
    expect(() => createApp({ scenarios: dir, watch: false, maxScenarioFile: 1024 }, { logger: QUIET })).toThrow(
      new RegExp(`big\\.yaml:1:1: file is ${size} bytes; the limit is 1024 \\(--max-scenario-file\\)`),
    );
  });

  it("through the CLI: serve exits 1 and validate fails, each naming the flag; a raised limit loads it", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "big.yaml"), manyRules(10));
    const serve = await runToExit(["serve", "--port", "0", "--scenarios", dir, "--max-scenario-file", "1kb"]);
    expect(serve.code).toBe(1);
    expect(serve.stderr).toMatch(/big\.yaml:1:1: file is \d+ bytes; the limit is 1024 \(--max-scenario-file\)/);
    const validate = await runToExit(["validate", dir], { MAX_SCENARIO_FILE: "1kb" });
    expect(validate.code).toBe(1);
    expect(validate.stderr).toMatch(/the limit is 1024 \(--max-scenario-file\)/);
    const raised = await runToExit(["validate", dir, "--max-scenario-file", "1mb"]);
    expect(raised.code, raised.stderr).toBe(0);
  });

  it("a scenario added at run time over the limit is a 400 naming the flag", async () => {
    const s = createApp({ maxBody: 64 * 1024, maxScenarioFile: 1024 }, { logger: QUIET });
    const reply = await admin(s.app, "POST", "/scenarios", {
      body: manyRules(10),
      headers: { "content-type": "text/yaml" },
    });
    expect(reply.status).toBe(400);
    expect(JSON.stringify(reply.body)).toMatch(/the limit is 1024 \(--max-scenario-file\)/);
  });

  it.each([
    ["the default limit", undefined],
    ["a raised limit", 64 * MIB],
  ])("an alias bomb is still refused under %s", (_, maxScenarioFile) => {
    const dir = tempDir();
    writeFileSync(join(dir, "bomb.yaml"), aliasBomb());
    const options = { scenarios: dir, watch: false, ...(maxScenarioFile ? { maxScenarioFile } : {}) };
    expect(() => createApp(options, { logger: QUIET })).toThrow(/bomb\.yaml:\d+:\d+: .*alias/i);
  });

  it("--max-scenario-file takes a size and refuses anything else with exit code 2", async () => {
    const run = await runToExit(["serve", "--port", "0", "--max-scenario-file", "huge"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--max-scenario-file "huge"');
  });
});
