import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { cli, killStray, PROCESS_TIMEOUT_MS, ROOT, spawnCommand } from "../cli/cli-process.js";

// `conformance run --role receiver` through the real CLI, on port 0, against the reference pharmacy
// (conformance/examples): the well-behaved one passes (exit 0); one that answers its pushes 500 fails (exit 1)
// with the failed step on the terminal; the three report files are written either way.

/** A quarter of the plan's waits: the 5 s acknowledgement limit becomes 1.25 s, room for a cold first answer. */
const SCALE = "0.25";
const RUN_TIMEOUT_MS = 60_000;
const PHARMACY = join(ROOT, "conformance/examples/reference-pharmacy.mjs");
const LISTENING = /listening on (http:\/\/127\.0\.0\.1:\d+\/fhir-hook)/;

const dirs: string[] = [];
afterEach(killStray);
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** The reference pharmacy (a `variant`) on a free port, and `conformance run` pushing to it. */
async function runAgainstPharmacy(variant?: string) {
  const dir = mkdtempSync(join(tmpdir(), "conformance-receiver-"));
  dirs.push(dir);
  const out = join(dir, "out");
  const pharmacy = spawnCommand([
    process.execPath,
    PHARMACY,
    "--port",
    "0",
    ...(variant ? ["--variant", variant] : []),
  ]);
  const [, hook] = await pharmacy.waitForOutput(LISTENING);
  const run = cli([
    "conformance",
    "run",
    "--role",
    "receiver",
    "--pharmacy-url",
    hook as string,
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--time-scale",
    SCALE,
    "--out",
    out,
  ]);
  const exit = await run.waitForExit(RUN_TIMEOUT_MS);
  pharmacy.process.kill("SIGTERM");
  for (const name of ["testreport.json", "junit.xml", "report.json"])
    expect(existsSync(join(out, name)), `${name} in --out; ${run.describe()}`).toBe(true);
  return { exit, run, hook: hook as string, report: JSON.parse(readFileSync(join(out, "report.json"), "utf8")) };
}

describe("conformance run --role receiver", { timeout: RUN_TIMEOUT_MS + PROCESS_TIMEOUT_MS }, () => {
  it("passes the reference pharmacy: exit 0, says where it pushes, a line per step", async () => {
    const { exit, run, hook, report } = await runAgainstPharmacy();
    expect(exit.code, run.describe()).toBe(0);
    expect(run.stdout).toContain(`Pushing orders to ${hook} (pharmacy PH-CONFORMANCE-0001)`);
    expect(run.stdout).toMatch(/^✓ fulfillment-request-acknowledged \/ acknowledged: /m);
    expect(run.stdout).toMatch(/^✓ duplicate-push-ignored \/ no-second-confirmation: /m);
    expect(run.stdout).toMatch(/^PASSED: every required step passed$/m);
    expect(report.state).toBe("passed");
  });

  it("fails a pharmacy that answers its pushes 500: exit 1, the step, what it expected and what it got", async () => {
    const { exit, run, report } = await runAgainstPharmacy("ack-500");
    expect(exit.code, run.describe()).toBe(1);
    const failed = /^✗ fulfillment-request-acknowledged \/ acknowledged: (.+)$/m.exec(run.stdout);
    expect(failed, run.stdout).not.toBeNull();
    expect(failed?.[1]).toMatch(/500/);
    expect(run.stdout).toMatch(/^FAILED: a required step failed$/m);
    expect(report.state).toBe("failed");
  });
});
