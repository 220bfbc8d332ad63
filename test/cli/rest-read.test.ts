import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Bundle, Resource } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/main.js";
import { CONTRACT_OPERATIONS } from "../support/contract-operations.js";
import { STANDARD } from "../support/messages.js";
import { type Received, startReceiver } from "../support/receiver.js";
import { http, killStray, startCli } from "./cli-process.js";

// R4 (bundle.html, http.html read/vread): a fullUrl that is not a urn: is where the resource can be read. Every
// absolute fullUrl of every operation's answer, and of the pushes to a pharmacy on 127.0.0.1, is followed here on
// the real CLI.

const PATIENT = "784-1990-1234567-6";
const PHARMACY = "PH-TEST-0042";
const ADMIN = "admin-secret";
const PHARMACY_SIDE = ["confirm-drugs-availability", "receive-allocation", "send-dispense-summary"];

const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  await killStray();
});

/** `uae-fhir-sandbox example …`: a valid message for the operation. */
async function example(args: string[]): Promise<string> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(["example", ...args], { out: (l) => out.push(l), err: (l) => err.push(l), env: {} });
  expect(code, err.join("\n")).toBe(0);
  return out.join("\n");
}

async function send(url: string, body: string, headers: Record<string, string> = {}): Promise<Bundle> {
  const reply = await http(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  expect(reply.status, reply.text.slice(0, 800)).toBe(200);
  return reply.json as Bundle;
}

/** Removed the R4 way: entered-in-error in status or verificationStatus (written out here, not taken from src/). */
function enteredInError(resource: Resource): boolean {
  const r = resource as { status?: string; verificationStatus?: { coding?: Array<{ code?: string }> } };
  return (
    r.status === "entered-in-error" || r.verificationStatus?.coding?.some((c) => c.code === "entered-in-error") === true
  );
}

/**
 * GETs every absolute fullUrl of `bundle` under `base`: 200 with the same resource type, id and version (ETag from
 * it), or 410 for a removed record. Returns how many were followed.
 */
async function followAll(bundle: Bundle, base: string, where: string, types?: Set<string>): Promise<number> {
  let followed = 0;
  for (const entry of bundle.entry ?? []) {
    const { fullUrl, resource } = entry;
    if (!fullUrl || fullUrl.startsWith("urn:") || !resource) continue;
    expect(fullUrl.startsWith(`${base}/`), `${where}: ${fullUrl} is not under ${base}`).toBe(true);
    const reply = await http(fullUrl);
    followed++;
    types?.add(resource.resourceType);
    const said = `${where}: GET ${fullUrl}: ${reply.status} ${reply.text.slice(0, 300)}`;
    expect(reply.headers.get("content-type"), said).toMatch(/^application\/fhir\+json/);
    if (enteredInError(resource)) {
      expect(reply.status, said).toBe(410);
      expect(reply.json.resourceType, said).toBe("OperationOutcome");
      continue;
    }
    expect(reply.status, said).toBe(200);
    expect(
      { resourceType: reply.json.resourceType, id: reply.json.id, version: reply.json.meta?.versionId },
      said,
    ).toEqual({ resourceType: resource.resourceType, id: resource.id, version: resource.meta?.versionId });
    const version = resource.meta?.versionId;
    expect(reply.headers.get("etag"), said).toBe(version === undefined ? null : `W/"${version}"`);
    if (resource.meta?.lastUpdated) {
      expect(reply.headers.get("last-modified"), said).toBe(new Date(resource.meta.lastUpdated).toUTCString());
    }
  }
  return followed;
}

const byType = (bundle: Bundle, type: string) =>
  (bundle.entry ?? []).filter((e) => e.resource?.resourceType === type) as Array<{
    fullUrl: string;
    resource: Resource;
  }>;

describe("REST read: every absolute fullUrl of every answer and push can be read (real CLI)", () => {
  // Budget: 18 messages and about 60 reads on one CLI process, a few seconds on a loaded 2-core machine.
  it("the 18 operations' answers and the pharmacy's pushes: each fullUrl answers 200 with that resource and version (410 once removed)", async () => {
    const receiver = await startReceiver();
    closers.push(() => receiver.close());
    const { url } = await startCli(["--admin-token", ADMIN, "--no-watch"]);
    const base = `${url}/uae-fhir/r4`;
    const answers = new Map<string, Bundle>();
    const types = new Set<string>();
    let followed = 0;

    for (const [operation, path] of CONTRACT_OPERATIONS) {
      if (PHARMACY_SIDE.includes(operation)) continue;
      const args =
        operation === "subscribe-order-notifications"
          ? [operation, "--pharmacy", PHARMACY, "--endpoint", receiver.url]
          : [operation, "--patient", PATIENT];
      const answer = await send(`${url}${path}`, await example(args));
      answers.set(operation, answer);
      followed += await followAll(answer, base, operation, types);
    }

    const created = await http(`${url}/__admin/orders`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN}` },
      body: JSON.stringify({ items: [{ medication: { code: "861007" }, quantity: 60 }] }),
    });
    expect(created.status).toBe(201);
    const order = created.json.id as string;
    const pushes: Received[] = [await receiver.next()];
    followed += await followAll(pushes[0]?.bundle, base, "order push", types);
    for (const operation of PHARMACY_SIDE) {
      const printed = await example([
        operation,
        "--order",
        order,
        "--pharmacy",
        PHARMACY,
        "--url",
        url,
        "--token",
        ADMIN,
      ]);
      const answer = await send(`${url}${STANDARD}`, printed);
      answers.set(operation, answer);
      followed += await followAll(answer, base, operation, types);
      if (operation === "receive-allocation") {
        const allocation = await receiver.next();
        pushes.push(allocation);
        followed += await followAll(allocation.bundle, base, "allocation push", types);
      }
    }
    expect(answers.size).toBe(18);

    // The order's request, version 2 since the allocation; version 1 is read from the first push (about the
    // anonymous patient), as the pharmacy received it.
    const request = byType(pushes[1]?.bundle, "MedicationRequest")[0];
    expect(request?.resource.meta?.versionId).toBe("2");
    const first = byType(pushes[0]?.bundle, "MedicationRequest")[0];
    const v1 = await http(`${request?.fullUrl}/_history/1`);
    expect(v1.status, v1.text.slice(0, 300)).toBe(200);
    expect(v1.json).toEqual(first?.resource);

    // A refusal: the answer's OperationOutcome has a RESTful fullUrl too (a cancelled task cannot be cancelled again).
    const refused = await http(`${url}${STANDARD}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: await example(["cancel-task", "--patient", PATIENT]),
    });
    expect(refused.json.entry[0].resource.response.code, refused.text.slice(0, 600)).toBe("fatal-error");
    followed += await followAll(refused.json, base, "refused cancel-task", types);

    expect([...types].sort()).toEqual([
      "AllergyIntolerance",
      "Composition",
      "Condition",
      "MedicationDispense",
      "MedicationRequest",
      "Observation",
      "OperationOutcome",
      "Patient",
      "Procedure",
      "Subscription",
      "Task",
    ]);
    // Patients, records, tasks, subscriptions, OperationOutcomes, orders' requests: far more than one per answer.
    expect(followed).toBeGreaterThan(30);

    // A version an earlier answer carried is still read by vread after the update made a newer one.
    const updated = byType(answers.get("update-allergy") as Bundle, "AllergyIntolerance")[0];
    const newest = Number(updated?.resource.meta?.versionId);
    expect(newest).toBeGreaterThan(1);
    const older = await http(`${updated?.fullUrl}/_history/${newest - 1}`);
    expect(older.status, older.text.slice(0, 300)).toBe(200);
    expect(older.json.meta.versionId).toBe(String(newest - 1));
    expect(older.headers.get("etag")).toBe(`W/"${newest - 1}"`);
    const none = await http(`${updated?.fullUrl}/_history/99`);
    expect(none.status).toBe(404);

    // Removed: read answers 410 Gone with an OperationOutcome; the removed version itself is still a version.
    const removed = byType(answers.get("remove-allergy") as Bundle, "AllergyIntolerance")[0];
    const gone = await http(removed?.fullUrl as string);
    expect(gone.status).toBe(410);
    expect(gone.json.issue[0].code).toBe("deleted");
    const version = await http(`${removed?.fullUrl}/_history/${removed?.resource.meta?.versionId}`);
    expect(version.status).toBe(200);

    // Unknown: 404 as an OperationOutcome.
    const unknown = await http(`${base}/Patient/no-such-patient`);
    expect(unknown.status).toBe(404);
    expect(unknown.json.resourceType).toBe("OperationOutcome");
    expect(unknown.json.issue[0].code).toBe("not-found");

    // Read-only: a write to a read URL is still refused.
    const put = await http(`${base}/Patient/no-such-patient`, { method: "PUT", body: "{}" });
    expect(put.status).toBe(404);
  }, 120_000);

  it("workspaces: team-a cannot read team-b's patient or records; team-b reads them under its prefix", async () => {
    const { url } = await startCli(["--no-watch"]);
    const answer = await send(`${url}/w/team-b${STANDARD}`, await example(["add-allergy", "--patient", PATIENT]));
    const allergy = byType(answer, "AllergyIntolerance")[0] as { fullUrl: string; resource: Resource };
    const patient = byType(answer, "Patient")[0] as { fullUrl: string; resource: Resource };
    expect(allergy.fullUrl).toBe(`${url}/w/team-b/uae-fhir/r4/AllergyIntolerance/${allergy.resource.id}`);
    for (const { fullUrl } of [allergy, patient]) {
      expect((await http(fullUrl)).status).toBe(200);
      const team = await http(fullUrl.replace("/w/team-b/", "/w/team-a/"));
      expect(team.status, team.text).toBe(404);
      const fallback = await http(fullUrl.replace("/w/team-b/", "/"));
      expect(fallback.status).toBe(404);
      const header = await http(fullUrl.replace("/w/team-b/", "/"), { headers: { "x-sandbox-workspace": "team-b" } });
      expect(header.status).toBe(200);
    }
  }, 60_000);

  it("--auth oauth2: a read needs a token with a .read scope (401 without, 403 without the scope)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "rest-read-"));
    closers.push(() => rmSync(dir, { recursive: true, force: true }));
    const clients = join(dir, "clients.yaml");
    writeFileSync(
      clients,
      [
        "clients:",
        "  - { id: reader, secret: reader-secret-123, workspace: team-a, scopes: [patient-profile.read, patient-profile.write] }",
        "  - { id: writer, secret: writer-secret-123, workspace: team-a, scopes: [patient-profile.write] }",
        "",
      ].join("\n"),
    );
    const { url } = await startCli(["--no-watch", "--auth", "oauth2", "--clients", clients]);
    const token = async (id: string) => {
      const reply = await http(`${url}/oauth2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `grant_type=client_credentials&client_id=${id}&client_secret=${id}-secret-123`,
      });
      expect(reply.status, reply.text).toBe(200);
      return `Bearer ${reply.json.access_token}`;
    };
    const reader = await token("reader");
    const writer = await token("writer");
    const answer = await send(`${url}${STANDARD}`, await example(["add-allergy", "--patient", PATIENT]), {
      authorization: reader,
    });
    const allergy = byType(answer, "AllergyIntolerance")[0] as { fullUrl: string; resource: Resource };

    const anonymous = await http(allergy.fullUrl);
    expect(anonymous.status).toBe(401);
    expect(anonymous.json.resourceType).toBe("OperationOutcome");
    const noScope = await http(allergy.fullUrl, { headers: { authorization: writer } });
    expect(noScope.status, noScope.text).toBe(403);
    expect(noScope.headers.get("www-authenticate")).toMatch(/insufficient_scope/);
    // Anonymous and naming a workspace not held: still 401, and nothing is made; a token names its own workspace.
    const elsewhere = allergy.fullUrl.replace(`${url}/`, `${url}/w/team-z/`);
    expect((await http(elsewhere)).status).toBe(401);
    expect((await http(elsewhere, { headers: { authorization: reader } })).status).toBe(403);
    const read = await http(allergy.fullUrl, { headers: { authorization: reader } });
    expect(read.status, read.text).toBe(200);
    expect(read.json.id).toBe(allergy.resource.id);
  }, 60_000);
});
