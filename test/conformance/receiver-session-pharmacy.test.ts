import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Child, http, killStray, startCli } from "../cli/cli-process.js";
import { subscriptionMessage } from "../orders/pharmacy-client.js";
import { envelope } from "../support/messages.js";

/**
 * The pharmacy a receiver session registers (its pharmacyUrl) is the session's only: listed while the session runs
 * (source "conformance"), gone when it ends however it ends (stopped, the sandbox restarted or killed), never in the
 * state file, taking no --max-pharmacies place afterwards; and a licence the workspace holds an active subscription
 * of is not taken over (refused, unless the URL is that subscription's own endpoint, which is then left as it is).
 */

// biome-ignore lint/suspicious/noExplicitAny: the admin API's JSON
type Json = any;

let dir: string;
let hookUrl: string;
let server: Server;
let sandbox: { child: Child; url: string } | undefined;

/**
 * Starts (or starts again) the sandbox on the test's state file: by default with no scenario fixtures (an empty
 * folder) and room for one pharmacy per workspace; `scenarios`: the repository's (whose fixtures hold PH-DXB-0001).
 */
async function startSandbox(scenarios: "none" | "shipped" = "none"): Promise<string> {
  const args = ["--state-file", join(dir, "sandbox.db"), "--push-allow", "127.0.0.1,localhost"];
  if (scenarios === "none") args.push("--scenarios", join(dir, "scenarios"), "--max-pharmacies", "1");
  sandbox = await startCli(args);
  return sandbox.url;
}

async function stopSandbox(signal: NodeJS.Signals): Promise<void> {
  sandbox?.child.process.kill(signal);
  await sandbox?.child.waitForExit();
  sandbox = undefined;
}

const admin = (url: string, workspace: string, path: string, init: RequestInit = {}) =>
  http(`${url}/w/${workspace}/__admin${path}`, init);

const postJson = (body: unknown): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});

/** A receiver session of one hour's waits: it runs until the test stops it. */
const startSession = (url: string, workspace: string, body: Record<string, unknown>) =>
  admin(url, workspace, "/conformance/sessions", postJson({ role: "receiver", timeScale: 1, ...body }));

const pharmaciesOf = async (url: string, workspace: string): Promise<Json[]> =>
  (await admin(url, workspace, "/pharmacies")).json.pharmacies;

/** A pharmacy as registered, without what pushes change (its last delivery). */
const registered = ({ lastDelivery: _, ...rest }: Json) => rest;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "conformance-pharmacy-"));
  mkdirSync(join(dir, "scenarios"));
  // The pharmacy under test: takes every push.
  server = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(200).end());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  hookUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/fhir-hook`;
});

afterEach(async () => {
  await stopSandbox("SIGTERM").catch(() => undefined);
  await killStray();
});

afterAll(() => {
  server.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("a receiver session's pharmacy", () => {
  it("is listed while the session runs, gone when it is stopped, and not back after a restart", async () => {
    let url = await startSandbox();
    const started = await startSession(url, "held", { pharmacyUrl: hookUrl, pharmacyLicence: "PH-HELD-1" });
    expect(started.status, started.text).toBe(201);
    expect(await pharmaciesOf(url, "held")).toEqual([
      expect.objectContaining({ licence: "PH-HELD-1", endpoint: hookUrl, active: true, source: "conformance" }),
    ]);
    const stopped = await admin(url, "held", `/conformance/sessions/${started.json.id}`, { method: "DELETE" });
    expect(stopped.status).toBe(200);
    expect(await pharmaciesOf(url, "held")).toEqual([]);
    // A new order has no pharmacy to go to: nothing is pushed to the tested URL any more.
    const order = await admin(url, "held", "/orders", postJson({}));
    expect(order.status, order.text).toBe(409);
    expect(order.json.issue[0].diagnostics).toMatch(/^No pharmacy has an active subscription/);
    // Its --max-pharmacies place (1) is free: a session with another licence registers its own.
    const next = await startSession(url, "held", { pharmacyUrl: hookUrl, pharmacyLicence: "PH-HELD-2" });
    expect(next.status, next.text).toBe(201);
    await stopSandbox("SIGTERM");
    url = await startSandbox();
    expect(await pharmaciesOf(url, "held")).toEqual([]);
  }, 60_000);

  it("is not in the state file: a sandbox killed during the session starts again without it", async () => {
    let url = await startSandbox();
    const started = await startSession(url, "killed", { pharmacyUrl: hookUrl, pharmacyLicence: "PH-KILLED" });
    expect(started.status, started.text).toBe(201);
    await stopSandbox("SIGKILL");
    url = await startSandbox();
    expect(await pharmaciesOf(url, "killed")).toEqual([]);
  }, 60_000);

  it("does not take over a licence subscribed with another endpoint: 400 naming pharmacyLicence", async () => {
    const url = await startSandbox();
    const subscribed = await http(`${url}/w/subscribed/uae-fhir/r4/$process-message`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: envelope(
        subscriptionMessage("PH-TEAM", "http://127.0.0.1:1/team-hook", { headers: ["Authorization: Bearer team"] }),
      ),
    });
    expect(subscribed.status, subscribed.text).toBe(200);
    const before = registered((await pharmaciesOf(url, "subscribed"))[0]);
    expect(before).toMatchObject({
      licence: "PH-TEAM",
      source: "subscription",
      headers: { authorization: "[redacted]" },
    });

    const refused = await startSession(url, "subscribed", { pharmacyUrl: hookUrl, pharmacyLicence: "PH-TEAM" });
    expect(refused.status, refused.text).toBe(400);
    expect(refused.json.resourceType).toBe("OperationOutcome");
    expect(refused.json.issue[0].expression).toEqual(["pharmacyLicence"]);
    expect(refused.json.issue[0].diagnostics).toMatch(/PH-TEAM .*subscription.*http:\/\/127\.0\.0\.1:1\/team-hook/);
    expect((await pharmaciesOf(url, "subscribed")).map(registered)).toEqual([before]);

    // Its own endpoint: the session runs against the subscription as it is, and leaves it so.
    const same = await startSession(url, "subscribed", {
      pharmacyUrl: "http://127.0.0.1:1/team-hook",
      pharmacyLicence: "PH-TEAM",
    });
    expect(same.status, same.text).toBe(201);
    expect((await pharmaciesOf(url, "subscribed")).map(registered)).toEqual([before]);
    await admin(url, "subscribed", `/conformance/sessions/${same.json.id}`, { method: "DELETE" });
    expect((await pharmaciesOf(url, "subscribed")).map(registered)).toEqual([before]);
  }, 60_000);

  it("takes a fixture pharmacy's licence for the session only: the fixture is back, headers and all, at its end", async () => {
    const url = await startSandbox("shipped");
    const fixture = (await pharmaciesOf(url, "fixture")).map(registered).find((p) => p.licence === "PH-DXB-0001");
    // The repository's scenarios/00-test-patients.yaml: endpoint and header as written there.
    expect(fixture).toMatchObject({
      source: "fixture",
      endpoint: "http://localhost:9090/pharmacy/fhir-hook",
      headers: { "x-pharmacy-key": "[redacted]" },
    });
    const started = await startSession(url, "fixture", { pharmacyUrl: hookUrl, pharmacyLicence: "PH-DXB-0001" });
    expect(started.status, started.text).toBe(201);
    const during = (await pharmaciesOf(url, "fixture")).find((p) => p.licence === "PH-DXB-0001");
    expect(during).toMatchObject({ source: "conformance", endpoint: hookUrl, headers: {} });
    await admin(url, "fixture", `/conformance/sessions/${started.json.id}`, { method: "DELETE" });
    const after = (await pharmaciesOf(url, "fixture")).map(registered).find((p) => p.licence === "PH-DXB-0001");
    expect(after).toEqual(fixture);
  }, 60_000);
});
