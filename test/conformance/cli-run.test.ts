import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { type Child, cli, killStray, PROCESS_TIMEOUT_MS, ROOT, spawnCommand } from "../cli/cli-process.js";

// `conformance run` through the real CLI, on port 0, with the reference sender (conformance/examples) as the system
// under test: the well-behaved one passes (exit 0), a broken one fails (exit 1) with the failed step on the
// terminal, and the three report files are written either way. A signal stops the session: exit 1, files written.

/** Every wait of the plan a tenth as long: the sender plan's longest window (15 s) becomes 1.5 s. */
const SCALE = "0.1";
/** A broken sender waits out each retry window it misses (60 s as written): a twentieth of it, 3 s, is enough. */
const BROKEN_SCALE = "0.05";
/** The sender plan's waits at SCALE, with the reference sender's own pace, on a loaded machine. */
const RUN_TIMEOUT_MS = 60_000;
const SENDER = join(ROOT, "conformance/examples/reference-sender.mjs");
/** The line that says where the system under test sends (the design of conformance run: said before the steps). */
const SEND_TO = /^Send the system's messages to (http:\/\/127\.0\.0\.1:\d+)\/uae-fhir\/r4\/\$process-message$/m;

const dirs: string[] = [];
const outDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "conformance-cli-"));
  dirs.push(dir);
  return join(dir, "out");
};

afterEach(killStray);
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Starts `conformance run --role sender` and, once it says where, the reference sender (a `variant`) against it. */
async function runWithSender(out: string, variant?: string): Promise<{ run: Child; sender: Child }> {
  const scale = variant ? BROKEN_SCALE : SCALE;
  const run = cli([
    "conformance",
    "run",
    "--role",
    "sender",
    "--operations",
    "add-allergy",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--time-scale",
    scale,
    "--out",
    out,
  ]);
  const [, base] = await run.waitForOutput(SEND_TO);
  const sender = spawnCommand([
    process.execPath,
    SENDER,
    "--sandbox",
    base as string,
    "--time-scale",
    scale,
    ...(variant ? ["--variant", variant] : []),
  ]);
  return { run, sender };
}

/** The three files, each parsed or read: what --out must hold whatever the verdict. */
function filesIn(out: string) {
  for (const name of ["testreport.json", "junit.xml", "report.json"])
    expect(existsSync(join(out, name)), `${name} in --out`).toBe(true);
  return {
    testReport: JSON.parse(readFileSync(join(out, "testreport.json"), "utf8")),
    junit: readFileSync(join(out, "junit.xml"), "utf8"),
    report: JSON.parse(readFileSync(join(out, "report.json"), "utf8")),
  };
}

describe("conformance run --role sender", { timeout: RUN_TIMEOUT_MS + PROCESS_TIMEOUT_MS }, () => {
  it("passes the reference sender: exit 0, a line per step, the summary and the three files", async () => {
    const out = outDir();
    const { run, sender } = await runWithSender(out);
    const exit = await run.waitForExit(RUN_TIMEOUT_MS);
    sender.process.kill("SIGTERM");
    expect(exit.code, run.describe()).toBe(0);
    // A line per step as it ends: a retried transient error among them.
    expect(run.stdout).toMatch(/^✓ transient-error-retried \/ expect-retry: /m);
    expect(run.stdout).toMatch(/^✓ fatal-error-not-retried \/ expect-no-retry: /m);
    expect(run.stdout).not.toMatch(/^✗ /m);
    expect(run.stdout).toMatch(/^PASSED: every required step passed$/m);
    expect(run.stdout).toMatch(/^7 tests: 7 passed, 0 failed, 0 warnings, 0 skipped$/m);
    // Coverage: the one operation it sent, of the 18.
    expect(run.stdout).toMatch(/^Operations exercised: 1 of 18 \(add-allergy\)$/m);
    const { testReport, junit, report } = filesIn(out);
    expect(report.state).toBe("passed");
    expect(testReport.resourceType).toBe("TestReport");
    expect(testReport.result).toBe("pass");
    expect(junit).toMatch(/^<\?xml/);
  });

  it("fails a sender that does not retry: exit 1, the failed step and what was seen, the files written", async () => {
    const out = outDir();
    const { run, sender } = await runWithSender(out, "no-retry");
    const exit = await run.waitForExit(RUN_TIMEOUT_MS);
    sender.process.kill("SIGTERM");
    expect(exit.code, run.describe()).toBe(1);
    const failed = /^✗ transient-error-retried \/ expect-retry: (.+)$/m.exec(run.stdout);
    expect(failed, run.stdout).not.toBeNull();
    // What was expected and what happened instead.
    expect(failed?.[1]).toMatch(/expected .*same MessageHeader id/);
    expect(failed?.[1]).toMatch(/saw /);
    // The plan's fix under it.
    expect(run.stdout).toMatch(/^✗ transient-error-retried \/ expect-retry: .+\n {4}fix: .+$/m);
    expect(run.stdout).toMatch(/^FAILED: a required step failed$/m);
    const { testReport, junit, report } = filesIn(out);
    expect(report.state).toBe("failed");
    expect(testReport.result).toBe("fail");
    expect(junit).toContain("<failure");
  });

  it("stops on SIGINT: exit 1, the session stopped, the files still written", async () => {
    const out = outDir();
    const run = cli(["conformance", "run", "--role", "sender", "--port", "0", "--host", "127.0.0.1", "--out", out]);
    await run.waitForOutput(SEND_TO);
    run.process.kill("SIGINT");
    const exit = await run.waitForExit();
    expect(exit.code, run.describe()).toBe(1);
    expect(run.stdout).toMatch(/^STOPPED: interrupted \(SIGINT\)$/m);
    const { report } = filesIn(out);
    expect(report.state).toBe("stopped");
    expect(report.stopReason).toBe("interrupted (SIGINT)");
  });

  it("refuses an unknown plan before anything runs: exit 2 naming --plan", async () => {
    const run = cli(["conformance", "run", "--role", "sender", "--plan", "nope", "--port", "0", "--host", "127.0.0.1"]);
    const exit = await run.waitForExit();
    expect(exit.code, run.describe()).toBe(2);
    expect(run.stderr).toMatch(/^conformance run: --plan: no plan "nope"; the plans are .*sender/m);
  });
});
