import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { AllergyIntolerance, Bundle, Patient } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import type { SandboxDeps } from "../../src/app.js";
import { createSandbox, type Sandbox } from "../../src/index.js";
import { messageBundle, post } from "../support/messages.js";

// What a restart reads back from a state file, in-process: the records in their order, the journal, the duplicate
// memory, the call ids, the workspace's times. The expected values are what the same sandbox answered before it
// stopped. Also a file whose `items` table is WITHOUT ROWID (how the first state files were made): the same
// statements read and write it.

const quiet: Partial<SandboxDeps> = { logger: { info: () => undefined, error: () => undefined } };
const dirs: string[] = [];
const open: Sandbox[] = [];

afterEach(async () => {
  for (const sandbox of open.splice(0)) await sandbox.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function stateFile(): string {
  const dir = mkdtempSync(join(tmpdir(), "uae-fhir-sandbox-read-back-"));
  dirs.push(dir);
  return join(dir, "state.db");
}

async function start(path: string): Promise<Sandbox> {
  const sandbox = await createSandbox({ listen: false, stateFile: path, deps: quiet });
  open.push(sandbox);
  return sandbox;
}

async function stop(sandbox: Sandbox): Promise<void> {
  open.splice(open.indexOf(sandbox), 1);
  await sandbox.close();
}

/** Valid Emirates IDs (Luhn check digit), one per generated patient. */
const PATIENTS = ["784-1990-1234567-6", "784-1985-7654321-3"];

const patient = (emiratesId: string): Patient => ({
  resourceType: "Patient",
  identifier: [{ system: "urn:ae:emirates-id", value: emiratesId }],
});

function allergy(emiratesId: string, n: number): Bundle {
  const record: AllergyIntolerance = {
    resourceType: "AllergyIntolerance",
    clinicalStatus: {
      coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", code: "active" }],
    },
    code: { text: `Allergy number ${n}` },
    patient: { reference: "urn:placeholder" },
  };
  const bundle = messageBundle("add-allergy", [record, patient(emiratesId)], { focus: [0] });
  const [, recordEntry, patientEntry] = bundle.entry ?? [];
  (recordEntry?.resource as AllergyIntolerance).patient = { reference: patientEntry?.fullUrl as string };
  return bundle;
}

const view = (emiratesId: string) => messageBundle("view-patient-profile", [patient(emiratesId)]);

/** A profile's stored resources as answered (the header and the Composition, made for each answer, left out). */
async function profile(sandbox: Sandbox, emiratesId: string) {
  const reply = await post(sandbox.app, view(emiratesId));
  expect(reply.status).toBe(200);
  return (reply.body as Bundle).entry
    ?.slice(1)
    .map((e) => e.resource)
    .filter((r) => r?.resourceType !== "Composition");
}

interface Health {
  store: { records: number; patients: number };
  journal: { calls: number };
}

async function health(sandbox: Sandbox): Promise<Health> {
  const res = await sandbox.app.request("/__admin/health");
  expect(res.status).toBe(200);
  return (await res.json()) as Health;
}

/** Messages for two patients (their generated profiles, and allergies of their own), then what they read as. */
async function fill(sandbox: Sandbox) {
  const sent: Array<{ text: string; answer: string; callId: string }> = [];
  for (let n = 0; n < 12; n++) {
    const text = JSON.stringify({ content: JSON.stringify(allergy(PATIENTS[n % 2] as string, n)) });
    const res = await sandbox.app.request("/uae-fhir/r4/$process-message", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: text,
    });
    if (res.status !== 200) throw new Error(await res.text());
    sent.push({ text, answer: await res.text(), callId: res.headers.get("x-sandbox-call-id") as string });
  }
  return sent;
}

/** The default workspace's times, read without a request (an admin read counts as a use, and is saved). */
function times(sandbox: Sandbox) {
  const { createdAt, lastUsedAt } = sandbox.internals.workspace;
  return { createdAt: createdAt.toISOString(), lastUsedAt: lastUsedAt.toISOString() };
}

async function snapshot(sandbox: Sandbox) {
  const held = await health(sandbox);
  return {
    calls: JSON.stringify(sandbox.calls()),
    records: held.store.records,
    patients: held.store.patients,
    journal: held.journal.calls,
  };
}

async function restartReadsBack(path: string) {
  const first = await start(path);
  const sent = await fill(first);
  const profiles = [await profile(first, PATIENTS[0] as string), await profile(first, PATIENTS[1] as string)];
  const after = await snapshot(first);
  // After the snapshot: its health read is a use of the workspace, which the file keeps too.
  const lastTimes = times(first);
  await stop(first);

  const second = await start(path);
  expect(times(second)).toEqual(lastTimes);
  expect(await snapshot(second)).toEqual(after);
  // The records, in their order, with their versions: the same profile as before the restart.
  expect([await profile(second, PATIENTS[0] as string), await profile(second, PATIENTS[1] as string)]).toEqual(
    profiles,
  );

  // An exact resend: its original answer, marked as a duplicate.
  const original = sent[3] as (typeof sent)[number];
  const resend = await second.app.request("/uae-fhir/r4/$process-message", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: original.text,
  });
  expect(resend.status).toBe(200);
  expect(resend.headers.get("x-sandbox-duplicate")).toBe("true");
  expect(await resend.text()).toBe(original.answer);

  // Call ids go on from the last one before the restart.
  const highest = Math.max(
    ...sent.map((s) => Number(s.callId)),
    ...JSON.parse(after.calls).map((c: { id: string }) => Number(c.id)),
  );
  const next = await second.app.request("/uae-fhir/r4/$process-message", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ content: JSON.stringify(allergy(PATIENTS[0] as string, 99)) }),
  });
  expect(Number(next.headers.get("x-sandbox-call-id"))).toBeGreaterThan(highest);
}

describe("a restart reads the state file back", () => {
  it("records in their order, the journal, the duplicate memory, the call ids and the workspace's times", async () => {
    await restartReadsBack(stateFile());
  });

  it("from a file whose items table is WITHOUT ROWID", async () => {
    const path = stateFile();
    const db = new DatabaseSync(path);
    db.exec(`
      CREATE TABLE items (
        workspace TEXT NOT NULL,
        kind TEXT NOT NULL,
        key TEXT NOT NULL,
        seq INTEGER NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (workspace, kind, key)
      ) WITHOUT ROWID;
      CREATE INDEX items_in_order ON items (workspace, seq);
      CREATE TABLE sandbox (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
      PRAGMA user_version = 1;
    `);
    db.close();
    await restartReadsBack(path);
  });
});
