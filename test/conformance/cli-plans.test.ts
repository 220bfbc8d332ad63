import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT, runToExit } from "../cli/cli-process.js";

// conformance plans, testscript and examples through the real CLI: what a reader of the conformance page runs
// before a session. Expected ids are the shipped sender plan's test ids, fixed by the design the plans follow.

const SENDER_TESTS = [
  "declared-operations",
  "transient-error-retried",
  "timeout-retried",
  "fatal-error-not-retried",
  "conflict-new-id",
  "retry-after-honoured",
  "expired-token",
];

const dir = mkdtempSync(join(tmpdir(), "conformance-plans-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("conformance plans, testscript, examples", () => {
  it("plans lists the shipped sender plan with its role, version and source", async () => {
    const { code, stdout, stderr } = await runToExit(["conformance", "plans"]);
    expect(code, stderr).toBe(0);
    expect(stdout).toMatch(/^sender +sender +1\.0\.0 +.+\(7 tests; conformance\/sender\.yaml\)$/m);
  });

  it("testscript prints the plan as an R4 TestScript, a test per plan test", async () => {
    const { code, stdout, stderr } = await runToExit(["conformance", "testscript", "--plan", "sender"]);
    expect(code, stderr).toBe(0);
    const script = JSON.parse(stdout);
    expect(script.resourceType).toBe("TestScript");
    expect(script.test.map((t: { name: string }) => t.name)).toEqual(SENDER_TESTS);
  });

  it("testscript of an unknown plan: exit 2 naming --plan and the plans there are", async () => {
    const { code, stderr } = await runToExit(["conformance", "testscript", "--plan", "nope"]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/^--plan: no plan "nope"; the plans are .*sender/m);
  });

  it("examples copies the reference systems, and never over a file that is there", async () => {
    const out = join(dir, "examples");
    const first = await runToExit(["conformance", "examples", "--out", out]);
    expect(first.code, first.stderr).toBe(0);
    const copied = join(out, "reference-sender.mjs");
    expect(existsSync(copied)).toBe(true);
    expect(readFileSync(copied, "utf8")).toBe(
      readFileSync(join(ROOT, "conformance/examples/reference-sender.mjs"), "utf8"),
    );
    const again = await runToExit(["conformance", "examples", "--out", out]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`${copied} exists already: nothing copied`);
  });
});
