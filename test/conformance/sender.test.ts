import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SessionReport } from "../../src/conformance/session-report.js";
import { type Child, http, killStray, spawnCommand, startCli } from "../cli/cli-process.js";

/**
 * The shipped sender plan against the reference sender (conformance/examples/reference-sender.mjs), each run in a
 * workspace of its own of a real sandbox, its session started through the admin API: the well-behaved sender passes
 * every step, and each broken variant fails exactly the steps of this hand-written table, with a message that says
 * what was expected and what happened.
 */

/** Every wait of the plan at a tenth: a run takes seconds. The sender keeps its own 1 s timeout (a slow answer under load must not look like none). */
const TIME_SCALE = 0.1;
const SENDER_SCALE = "1";
const OPERATIONS = ["add-allergy", "add-measurement"];
/** A broken run waits out each step it breaks (3 s each at this scale), under load a few times longer. */
const RUN_TIMEOUT_MS = 60_000;

/** The steps each variant breaks (test/step), and what each failure message must say (expected …; what happened). */
const BROKEN: Record<string, { failed: string[]; message: RegExp }> = {
  "no-retry": {
    failed: [
      "transient-error-retried/expect-retry",
      "timeout-retried/expect-retry",
      "retry-after-honoured/expect-retry",
    ],
    message:
      /^expected a retry of message \S+ with the same MessageHeader id \S+ and the same content within [\d.]+ s of its .+; saw (no message after|\d+ messages? after the .+, none with id)/,
  },
  "retry-new-id": {
    failed: [
      "transient-error-retried/expect-retry",
      "timeout-retried/expect-retry",
      "retry-after-honoured/expect-retry",
    ],
    message:
      /^expected a retry of message \S+ with the same MessageHeader id .+; retried with a new id \(\S+.*\): the exchange would process it twice$/,
  },
  "retry-after-fatal": {
    failed: ["fatal-error-not-retried/expect-no-retry"],
    message:
      /^expected no resend of message \S+ for [\d.]+ s after its 200 fatal-error; it was sent again [\d.]+ s after the answer \(call \d+\)$/,
  },
  "ignore-retry-after": {
    failed: ["retry-after-honoured/expect-retry-after"],
    message:
      /^expected the retry no sooner than 2 s \(Retry-After\) after the 429 transient-error; it came [\d.]+ s after$/,
  },
};

const steps = (report: SessionReport, status: string) =>
  report.tests.flatMap((t) => t.steps.filter((s) => s.status === status).map((s) => `${t.id}/${s.id}`));

const messagesOf = (report: SessionReport, ids: string[]) =>
  report.tests.flatMap((t) => t.steps.filter((s) => ids.includes(`${t.id}/${s.id}`)).map((s) => s.message ?? ""));

/** Starts a session in `workspace`, runs the reference sender against it until the session ends, and returns its report. */
async function runSender(url: string, workspace: string, args: string[]): Promise<SessionReport> {
  const admin = `${url}/w/${workspace}/__admin/conformance/sessions`;
  const started = await http(admin, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ role: "sender", operations: OPERATIONS, timeScale: TIME_SCALE }),
  });
  expect(started.status, started.text).toBe(201);
  const id = (started.json as SessionReport).id;
  const sender: Child = spawnCommand([
    process.execPath,
    "conformance/examples/reference-sender.mjs",
    "--sandbox",
    `${url}/w/${workspace}`,
    "--operations",
    OPERATIONS.join(","),
    "--time-scale",
    SENDER_SCALE,
    ...args,
  ]);
  try {
    await sender.waitForOutput(/sending to /);
    // Long-polled until the session ends: the plan's waits, scaled, come to well under a minute.
    for (let polls = 0; polls < 5; polls++) {
      const read = await fetch(`${admin}/${id}?wait=20s`, { signal: AbortSignal.timeout(30_000) });
      const report = (await read.json()) as SessionReport;
      if (report.state !== "running") return report;
    }
    throw new Error(`session ${id} still running; sender: ${sender.describe()}`);
  } finally {
    sender.process.kill("SIGTERM");
    await sender.waitForExit().catch(() => sender.process.kill("SIGKILL"));
  }
}

describe("the reference sender against the shipped sender plan", () => {
  let url: string;
  beforeAll(async () => {
    ({ url } = await startCli());
  });
  afterAll(killStray);

  it.concurrent(
    "well-behaved: every step passes but the 401's retry, which has no token to check without --auth oauth2",
    async () => {
      const report = await runSender(url, "good", []);
      expect(steps(report, "fail"), JSON.stringify(report.tests, null, 1)).toEqual([]);
      expect(steps(report, "skip")).toEqual(["expired-token/expect-retry"]);
      expect(messagesOf(report, ["expired-token/expect-retry"])[0]).toMatch(/carried no Authorization header/);
      expect(report.state).toBe("passed");
      expect(report.coverage.operations.exercised).toEqual(OPERATIONS);
      expect(report.coverage.operations.notExercised).toHaveLength(16);
    },
    RUN_TIMEOUT_MS,
  );

  // The variants run side by side, each in its own workspace: a session sees only its own workspace's calls.
  it.concurrent.each(Object.entries(BROKEN))(
    "--variant %s fails exactly the steps it breaks",
    async (variant, broken) => {
      const report = await runSender(url, `v-${variant}`, ["--variant", variant]);
      expect(steps(report, "fail"), JSON.stringify(report.tests, null, 1)).toEqual(broken.failed);
      for (const message of messagesOf(report, broken.failed)) expect(message).toMatch(broken.message);
      expect(report.state).toBe("failed");
    },
    RUN_TIMEOUT_MS,
  );
});

describe("the reference sender with --auth oauth2", () => {
  let url: string;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "conformance-sender-"));
    const clients = join(dir, "clients.yaml");
    // One client per run, each bound to its own workspace, where its session runs.
    writeFileSync(
      clients,
      [
        "clients:",
        "  - { id: sender-good, secret: sender-good-secret, workspace: auth-good }",
        "  - { id: sender-no-retry, secret: sender-no-retry-secret, workspace: auth-no-retry }",
        "",
      ].join("\n"),
    );
    ({ url } = await startCli(["--auth", "oauth2", "--clients", clients]));
  });
  afterAll(async () => {
    await killStray();
    rmSync(dir, { recursive: true, force: true });
  });

  const auth = (client: string) => ["--auth", "oauth2", "--client-id", client, "--client-secret", `${client}-secret`];

  it.concurrent.each([
    ["good", [], []],
    ["no-retry", ["--variant", "no-retry"], [...(BROKEN["no-retry"]?.failed ?? []), "expired-token/expect-retry"]],
  ])(
    "%s: the 401 is answered with a new token and the same message, or its step fails",
    async (name, args, failed) => {
      const report = await runSender(url, `auth-${name}`, [...auth(`sender-${name}`), ...args]);
      expect(steps(report, "fail"), JSON.stringify(report.tests, null, 1)).toEqual(failed);
      if (failed.length === 0) {
        // Every step of the shipped plan, the 401's retry with a new token included.
        expect(steps(report, "pass")).toEqual(report.tests.flatMap((t) => t.steps.map((s) => `${t.id}/${s.id}`)));
      } else {
        expect(messagesOf(report, ["expired-token/expect-retry"])[0]).toMatch(
          /^expected a retry of message \S+ with the same MessageHeader id \S+ and the same content and a new bearer token within [\d.]+ s of its 401; saw /,
        );
      }
    },
    RUN_TIMEOUT_MS,
  );
});
