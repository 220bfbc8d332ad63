import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Child, http, killStray, PROCESS_TIMEOUT_MS, spawnCommand, startCli } from "../cli/cli-process.js";
import { expectValidOutputs } from "./session-outputs.js";

/**
 * The receiver plan against the reference pharmacy (conformance/examples/reference-pharmacy.mjs), well-behaved and
 * broken one way at a time, each in its own workspace of one real `serve`, all at once: the well-behaved one passes
 * every step, each variant fails exactly the steps of the table below, saying what was expected and what happened.
 */

/**
 * Every wait and window of the plan × 0.25: its 5 s acknowledgement limit is 1.25 s, its 30 s deadline 7.5 s. At 0.1
 * (500 ms) a well-behaved pharmacy's first answer, a cold process on a busy 2-core machine, took up to 590 ms.
 */
const TIME_SCALE = 0.25;
/** How late the late-ack variant answers: past the scaled 1.25 s limit, well inside the sandbox's 5 s push timeout. */
const LATE_ACK_MS = 2_500;

/** What each variant breaks, by hand from the plan: `test/step` ids that fail, and those then not run. */
const EXPECTED: Record<string, { fail: string[]; skip: string[]; messages: Record<string, RegExp> }> = {
  "well-behaved": { fail: [], skip: [], messages: {} },
  "late-ack": {
    fail: ["fulfillment-request-acknowledged/acknowledged", "duplicate-push-ignored/acknowledged-again"],
    skip: ["duplicate-push-ignored/no-second-confirmation"],
    messages: {
      "fulfillment-request-acknowledged/acknowledged":
        /^expected the order-fulfillment-request push of order \d+ \(MessageHeader [0-9a-f]{8}…\) to be answered 2xx within 1\.25 s; (it answered 200 after [\d.]+ s: too late|the first attempt got no answer \(no answer within 5000 ms\) after [\d.]+ s)$/,
      "duplicate-push-ignored/acknowledged-again":
        /^expected the repeated order-fulfillment-request push of order \d+ .* to be answered 2xx within 1\.25 s; (it answered 200 after [\d.]+ s: too late|the first attempt got no answer \(no answer within 5000 ms\) after [\d.]+ s)$/,
    },
  },
  "ack-500": {
    fail: ["fulfillment-request-acknowledged/acknowledged", "duplicate-push-ignored/acknowledged-again"],
    skip: ["duplicate-push-ignored/no-second-confirmation"],
    messages: {
      "fulfillment-request-acknowledged/acknowledged":
        /^expected the order-fulfillment-request push of order \d+ .* to be answered 2xx within 1\.25 s; it answered 500 after [\d.]+ m?s$/,
      "duplicate-push-ignored/acknowledged-again":
        /^expected the repeated order-fulfillment-request push .* within 1\.25 s; it answered 500 after [\d.]+ m?s$/,
    },
  },
  "late-confirm": {
    fail: ["availability-confirmed-before-deadline/confirmed"],
    // Nothing to allocate: the order expired unconfirmed, so the allocation and what follows it cannot be checked.
    skip: [
      "allocation-and-dispense-summary/allocate",
      "allocation-and-dispense-summary/allocation-received",
      "allocation-and-dispense-summary/dispense-summary",
    ],
    messages: {
      "availability-confirmed-before-deadline/confirmed":
        /^expected a confirm-drugs-availability about Task\/[0-9a-f-]{36} \(order \d+\), accepted by the sandbox before the order's deadline \(.+Z\), within 11\.25 s; it came [\d.]+ m?s after the deadline and the sandbox refused it as the exchange does: refused \(200 fatal-error\): Order \d+ is expired: it no longer takes confirmations\.$/,
    },
  },
  "confirm-duplicate": {
    fail: ["duplicate-push-ignored/no-second-confirmation"],
    skip: [],
    messages: {
      "duplicate-push-ignored/no-second-confirmation":
        /^expected no second confirm-drugs-availability about Task\/[0-9a-f-]{36} \(order \d+\) for 2\.5 s; it sent another: confirm-drugs-availability [0-9a-f]{8}… .*, refused \(200 fatal-error\): /,
    },
  },
  "no-dispense": {
    fail: ["allocation-and-dispense-summary/dispense-summary"],
    skip: [],
    messages: {
      "allocation-and-dispense-summary/dispense-summary":
        /^expected a send-dispense-summary about order \d+, accepted by the sandbox, within 7\.5 s; none came$/,
    },
  },
};

// biome-ignore lint/suspicious/noExplicitAny: the session report as JSON
type Report = any;

let sandbox: { child: Child; url: string };
const pharmacies: Child[] = [];
const sessions = new Map<string, Promise<Report>>();

/** Starts the reference pharmacy; resolves with its hook URL once it listens. */
async function pharmacy(args: string[]): Promise<{ child: Child; url: string }> {
  const child = spawnCommand([process.execPath, "conformance/examples/reference-pharmacy.mjs", "--port", "0", ...args]);
  pharmacies.push(child);
  const [, url] = await child.waitForOutput(/listening on (http:\/\/127\.0\.0\.1:\d+\/fhir-hook)/);
  return { child, url: url as string };
}

/** POST /__admin/conformance/sessions in a workspace. */
function start(workspace: string, body: Record<string, unknown>) {
  return http(`${sandbox.url}/w/${workspace}/__admin/conformance/sessions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** The session's report once it ended: GET it (long-polling) until it is no longer running, within a bound. */
async function ended(workspace: string, id: string): Promise<Report> {
  const until = Date.now() + 60_000;
  for (;;) {
    const got = await http(`${sandbox.url}/w/${workspace}/__admin/conformance/sessions/${id}?wait=20s`);
    expect(got.status).toBe(200);
    if (got.json.state !== "running") {
      await expectValidOutputs(`${sandbox.url}/w/${workspace}/__admin/conformance/sessions/${id}`, got.json);
      return got.json;
    }
    if (Date.now() > until) throw new Error(`session ${id} still running: ${got.text}`);
  }
}

/** Starts a variant's pharmacy; resolves with its URL once it listens and has answered one request. */
async function variantPharmacy(variant: string): Promise<string> {
  const args = ["--licence", licenceOf(variant), ...(variant === "well-behaved" ? [] : ["--variant", variant])];
  if (variant === "late-ack") args.push("--delay", String(LATE_ACK_MS));
  const { url } = await pharmacy(args);
  // A first request warms its HTTP path: the sessions' first acknowledgement then times the pharmacy, not its start.
  expect((await http(url, { method: "POST", body: "{}" })).status).toBe(400);
  return url;
}

const licenceOf = (variant: string) => `PH-REF-${variant.toUpperCase()}`;

async function runVariant(variant: string, url: string): Promise<Report> {
  const workspace = `receiver-${variant}`;
  const started = await start(workspace, {
    role: "receiver",
    pharmacyUrl: url,
    pharmacyLicence: licenceOf(variant),
    timeScale: TIME_SCALE,
  });
  expect(started.status, started.text).toBe(201);
  return ended(workspace, started.json.id);
}

/** Each step's `test/step` id with its status. */
const stepsOf = (report: Report) =>
  report.tests.flatMap((t: Report) => t.steps.map((s: Report) => ({ key: `${t.id}/${s.id}`, ...s })));

describe("the receiver plan against the reference pharmacy", () => {
  beforeAll(async () => {
    // 10.0.0.0/8 stays out: a pharmacyUrl there is refused as a Subscription endpoint there would be.
    sandbox = await startCli(["--push-allow", "127.0.0.1,pharmacy.example.ae"]);
    // Every pharmacy up before any session: seven processes starting must not slow the first acknowledgements.
    const variants = Object.keys(EXPECTED);
    const urls = await Promise.all(variants.map(variantPharmacy));
    for (const [i, variant] of variants.entries()) sessions.set(variant, runVariant(variant, urls[i] as string));
    // Reported by each test below; not here, where one failure would hide the others.
    for (const session of sessions.values()) session.catch(() => undefined);
  }, PROCESS_TIMEOUT_MS);

  afterAll(async () => {
    for (const child of pharmacies) child.process.kill("SIGTERM");
    await Promise.all(pharmacies.map((child) => child.waitForExit().catch(() => undefined)));
    sandbox?.child.process.kill("SIGTERM");
    await sandbox?.child.waitForExit().catch(() => undefined);
    await killStray();
  });

  for (const [variant, expected] of Object.entries(EXPECTED)) {
    it(`${variant}: fails exactly ${expected.fail.length === 0 ? "no step" : expected.fail.join(", ")}`, async () => {
      const report = await sessions.get(variant);
      const steps = stepsOf(report);
      const with_ = (status: string) => steps.filter((s: Report) => s.status === status).map((s: Report) => s.key);
      const failures = steps.filter((s: Report) => s.status === "fail").map((s: Report) => `${s.key}: ${s.message}`);
      expect({ fail: with_("fail"), skip: with_("skip"), warning: with_("warning") }, failures.join("\n")).toEqual({
        fail: expected.fail,
        skip: expected.skip,
        warning: [],
      });
      expect(steps.length).toBe(14);
      expect(with_("pass").length).toBe(14 - expected.fail.length - expected.skip.length);
      expect(report.state).toBe(expected.fail.length === 0 ? "passed" : "failed");
      for (const step of steps.filter((s: Report) => s.status === "fail")) {
        expect(step.message, step.key).toMatch(expected.messages[step.key] as RegExp);
      }
      for (const step of steps.filter((s: Report) => s.status === "skip")) expect(step.message).toMatch(/^not run/);
    }, 60_000);
  }

  it("the failures carry the journal calls that decided them", async () => {
    const report = await sessions.get("ack-500");
    const acknowledged = stepsOf(report).find((s: Report) => s.key === "fulfillment-request-acknowledged/acknowledged");
    expect(acknowledged.evidence).toHaveLength(1);
    expect(acknowledged.evidence[0]).toMatchObject({
      direction: "outbound",
      operation: "order-fulfillment-request",
      status: 500,
    });
    const call = await http(`${sandbox.url}/w/receiver-ack-500/__admin/calls/${acknowledged.evidence[0].callId}`);
    expect(call.status).toBe(200);
    expect(call.json.attempt).toBe(1);
  }, 60_000);

  it("a pharmacy that subscribes itself: the session waits for it and takes its licence", async () => {
    const started = await start("receiver-subscribing", { role: "receiver", timeScale: TIME_SCALE });
    expect(started.status, started.text).toBe(201);
    await pharmacy([
      "--licence",
      "PH-REF-SUBSCRIBER",
      "--sandbox",
      `${sandbox.url}/w/receiver-subscribing`,
      "--subscribe",
    ]);
    const report = await ended("receiver-subscribing", started.json.id);
    expect(stepsOf(report).filter((s: Report) => s.status !== "pass")).toEqual([]);
    expect(report.tests[0].steps[0].message).toMatch(
      /^subscribed as PH-REF-SUBSCRIBER with the endpoint http:\/\/127\.0\.0\.1:\d+\/fhir-hook$/,
    );
    expect(report.state).toBe("passed");
    // The report names the pharmacy as it subscribed: the TestReport's participant.
    expect(report.participants.system).toMatchObject({
      pharmacyLicence: "PH-REF-SUBSCRIBER",
      pharmacyUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/fhir-hook$/),
    });
    // A later session naming that licence finds it subscribed already, and runs against it.
    const again = await start("receiver-subscribing", {
      role: "receiver",
      pharmacyLicence: "PH-REF-SUBSCRIBER",
      timeScale: TIME_SCALE,
    });
    expect(again.status, again.text).toBe(201);
    const second = await ended("receiver-subscribing", again.json.id);
    expect(second.tests[0].steps[0].message).toMatch(
      /^subscribed already, before the session: PH-REF-SUBSCRIBER with the endpoint http:\/\/127\.0\.0\.1:\d+\/fhir-hook$/,
    );
    expect(stepsOf(second).filter((s: Report) => s.status !== "pass")).toEqual([]);
  }, 60_000);

  it("a pharmacyUrl the sandbox would not push to is refused as a Subscription endpoint would be", async () => {
    for (const [pharmacyUrl, says] of [
      ["ftp://127.0.0.1/fhir-hook", /http:\/\/ or https:\/\//],
      [
        "http://10.1.2.3:9090/fhir-hook",
        /10\.1\.2\.3:9090.*allowed hosts are 127\.0\.0\.1, pharmacy\.example\.ae \(--push-allow\)/,
      ],
    ] as const) {
      const refused = await start("receiver-refused", { role: "receiver", pharmacyUrl, timeScale: TIME_SCALE });
      expect(refused.status, refused.text).toBe(400);
      expect(refused.json.resourceType).toBe("OperationOutcome");
      expect(JSON.stringify(refused.json.issue)).toMatch(/pharmacyUrl/);
      expect(refused.json.issue[0].diagnostics).toMatch(says);
    }
    // Nothing was registered in the workspace for a refused session.
    const listed = await http(`${sandbox.url}/w/receiver-refused/__admin/pharmacies`);
    expect(listed.json.pharmacies.map((p: Report) => p.licence)).not.toContain("PH-CONFORMANCE-0001");
  }, 30_000);
});

describe("the reference pharmacy on a sandbox with --auth oauth2", () => {
  let dir: string;
  let oauthSandbox: { child: Child; url: string };
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "conformance-receiver-"));
    const clients = join(dir, "clients.yaml");
    writeFileSync(clients, "clients:\n  - { id: pharmacy, secret: pharmacy-secret, workspace: receiver-oauth }\n");
    // The pharmacy listens on loopback, which --auth oauth2 refuses to push to unless --push-allow names it.
    oauthSandbox = await startCli(["--auth", "oauth2", "--clients", clients, "--push-allow", "127.0.0.1"]);
  }, PROCESS_TIMEOUT_MS);
  afterAll(async () => {
    for (const child of pharmacies) child.process.kill("SIGTERM");
    oauthSandbox?.child.process.kill("SIGTERM");
    await killStray();
    rmSync(dir, { recursive: true, force: true });
  });

  it("subscribes and sends every message with a token of its client: every step passes", async () => {
    const base = `${oauthSandbox.url}/w/receiver-oauth`;
    const started = await http(`${base}/__admin/conformance/sessions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ role: "receiver", pharmacyLicence: "PH-REF-OAUTH", timeScale: TIME_SCALE }),
    });
    expect(started.status, started.text).toBe(201);
    const { child } = await pharmacy([
      ...["--licence", "PH-REF-OAUTH", "--sandbox", base, "--subscribe"],
      ...["--auth", "oauth2", "--client-id", "pharmacy", "--client-secret", "pharmacy-secret"],
    ]);
    let report: Report;
    for (;;) {
      const got = await http(`${base}/__admin/conformance/sessions/${started.json.id}?wait=20s`);
      report = got.json;
      if (report.state !== "running") break;
    }
    const notPassed = stepsOf(report).filter((s: Report) => s.status !== "pass");
    expect(notPassed, child.stdout).toEqual([]);
    // The subscription itself went through with the token (the session would wait for it in vain otherwise).
    expect(child.stdout).toMatch(/^sent subscribe-order-notifications → 200 ok$/m);
  }, 60_000);
});
