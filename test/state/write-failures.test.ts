import { unlinkSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";
import type { Bundle } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { admin } from "../admin/admin-client.js";
import { killStray, startCli } from "../cli/cli-process.js";
import { post, type Reply } from "../support/messages.js";
import {
  allCalls,
  allergiesIn,
  allergyMessage,
  type Posted,
  patientId,
  postTo,
  profileAllergies,
  profileMessage,
  tempDir,
} from "./state-support.js";

// A write the state file cannot take (a full disk, the file removed, another process holding its lock): the
// message is answered 503 with a transient OperationOutcome naming the file, nothing of it is kept, reads keep
// working, health says the file is failing — and what was answered 200 before is all there.

const QUIET = { info: () => undefined, warn: () => undefined, error: () => undefined };
type Sandbox = ReturnType<typeof createApp>;

afterEach(killStray);

const dirs: Array<{ remove(): void }> = [];
const open: Sandbox[] = [];
afterEach(() => {
  for (const sandbox of open.splice(0)) sandbox.close();
  for (const dir of dirs.splice(0)) dir.remove();
});

function stateDir() {
  const dir = tempDir();
  dirs.push(dir);
  return dir;
}

function sandboxOn(file: string, options: Parameters<typeof createApp>[0] = {}): Sandbox {
  const sandbox = createApp({ stateFile: file, ...options }, { logger: QUIET });
  open.push(sandbox);
  return sandbox;
}

function closeSandbox(sandbox: Sandbox): void {
  open.splice(open.indexOf(sandbox), 1);
  sandbox.close();
}

interface StateFileHealth {
  path: string;
  status: "ok" | "failing";
  schemaVersion: number;
  bytes: number;
  lastError: string | null;
  lastErrorAt: string | null;
}

async function stateFileHealth(sandbox: Sandbox): Promise<StateFileHealth> {
  const health = await admin(sandbox.app, "GET", "/health");
  expect(health.status).toBe(200);
  return health.body.stateFile as StateFileHealth;
}

/** The 503 a message gets when its change cannot be written: transient, naming the file and why, Retry-After. */
function expectUnsaved(reply: Reply, file: string, why: RegExp): void {
  expect(reply.status).toBe(503);
  expect(reply.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
  expect(reply.headers.get("x-sandbox-duplicate")).toBeNull();
  expect(Number(reply.headers.get("retry-after"))).toBeGreaterThan(0);
  expect(reply.body.resourceType).toBe("OperationOutcome");
  expect(reply.body.issue).toHaveLength(1);
  const [issue] = reply.body.issue;
  expect(issue).toMatchObject({ severity: "error", code: "transient" });
  expect(issue.diagnostics).toContain(file);
  expect(issue.diagnostics).toMatch(why);
}

/** The marker texts of the patient's allergies, as GET /__admin/patients/{key} shows them (an admin read, no message). */
async function storedMarkers(sandbox: Sandbox, patient: string): Promise<string[]> {
  const reply = await admin(sandbox.app, "GET", `/patients/${encodeURIComponent(`urn:ae:emirates-id|${patient}`)}`);
  // Not met yet (or no longer, after a step back to the file): none.
  if (reply.status === 404) return [];
  expect(reply.status).toBe(200);
  return (reply.body.records as Array<{ resourceType: string; code?: { text?: string } }>)
    .filter((r) => r.resourceType === "AllergyIntolerance" && r.code?.text?.startsWith("marker "))
    .map((r) => r.code?.text as string);
}

/** The allergy ids of a patient's view-patient-profile. */
async function profileAllergyIds(sandbox: Sandbox, patient: string): Promise<string[]> {
  const reply = await post(sandbox.app, profileMessage(patient));
  expect(reply.status).toBe(200);
  return allergiesIn(reply.body as Bundle).map((a) => a.id as string);
}

interface Answered {
  bundle: Bundle;
  reply: Reply;
}

/** What a restarted sandbox must show of messages answered 200: the allergy, the journal call, the original answer on a resend. */
async function expectAllThere(sandbox: Sandbox, patient: string, answered: Answered[]): Promise<void> {
  const ids = await profileAllergyIds(sandbox, patient);
  const calls = (await admin(sandbox.app, "GET", "/calls?view=summary")).body.calls as Array<{
    id: string;
    messageId: string;
    status: number;
  }>;
  for (const { bundle, reply } of answered) {
    const messageId = bundle.entry?.[0]?.resource?.id as string;
    const [allergy] = allergiesIn(reply.body as Bundle);
    expect({ messageId, held: ids.includes(allergy?.id as string) }).toEqual({ messageId, held: true });
    const call = calls.find((c) => c.messageId === messageId);
    expect({ messageId, call: call && [call.id, call.status] }).toEqual({
      messageId,
      call: [reply.headers.get("x-sandbox-call-id"), 200],
    });
    const again = await post(sandbox.app, bundle);
    expect([again.status, again.headers.get("x-sandbox-duplicate")]).toEqual([200, "true"]);
    expect(again.body).toEqual(reply.body);
  }
}

describe("a full disk (--max-state-file)", () => {
  it("the message that does not fit is answered 503 transient naming the file; nothing of it is kept; what was answered 200 is there after a restart", async () => {
    const { file } = stateDir();
    const patient = patientId(1);
    // 256 KiB: the patient's generated profile and a few dozen messages' rows, then the file is full.
    let sandbox = sandboxOn(file, { maxStateFile: 256 * 1024 });
    const answered: Answered[] = [];
    let refused: { bundle: Bundle; reply: Reply } | undefined;
    for (let i = 0; i < 200 && !refused; i++) {
      const bundle = allergyMessage(`full-${i}`, patient);
      const reply = await post(sandbox.app, bundle);
      if (reply.status !== 200) {
        refused = { bundle, reply };
        break;
      }
      answered.push({ bundle, reply });
      // A 200 means all of it was written: the file is fine.
      expect({ i, status: (await stateFileHealth(sandbox)).status }).toEqual({ i, status: "ok" });
    }
    expect(answered.length).toBeGreaterThanOrEqual(3);
    if (!refused) throw new Error("200 messages fit in 256 KiB: the limit did not hold");
    expectUnsaved(refused.reply, file, /full/);

    const health = await stateFileHealth(sandbox);
    expect(health).toMatchObject({ path: file, status: "failing", schemaVersion: 1 });
    expect(health.lastError).toMatch(/full/);
    expect(new Date(health.lastErrorAt as string).toISOString()).toBe(health.lastErrorAt);

    // Reads keep working; the refused message's allergy is nowhere.
    const calls = await admin(sandbox.app, "GET", "/calls?view=summary");
    expect(calls.status).toBe(200);
    expect((await admin(sandbox.app, "GET", "/patients")).status).toBe(200);
    const markers = await storedMarkers(sandbox, patient);
    expect(markers).toEqual(answered.map(({ bundle }) => `marker ${bundle.entry?.[0]?.resource?.id}`));
    // Its resend is not a duplicate of anything: it is processed again (and still does not fit).
    expectUnsaved(await post(sandbox.app, refused.bundle), file, /full/);

    // The operator makes room: everything answered 200 is there, and the refused message is new to the sandbox.
    closeSandbox(sandbox);
    sandbox = sandboxOn(file, { maxStateFile: 64 * 1024 * 1024 });
    expect((await stateFileHealth(sandbox)).status).toBe("ok");
    await expectAllThere(sandbox, patient, answered);
    const resent = await post(sandbox.app, refused.bundle);
    expect([resent.status, resent.headers.get("x-sandbox-duplicate")]).toEqual([200, null]);
    expect(await storedMarkers(sandbox, patient)).toContain(`marker ${refused.bundle.entry?.[0]?.resource?.id}`);
  });

  it("every size of file: a message is answered 200 only when it and its journal call were both written", async () => {
    // The file fills at a different point of a message for each size: in its changes, or in its journal call.
    const patient = patientId(2);
    for (let pages = 30; pages <= 56; pages += 2) {
      const { file } = stateDir();
      let sandbox = sandboxOn(file, { maxStateFile: pages * 4096 });
      const answered: Answered[] = [];
      for (let i = 0; i < 100; i++) {
        const bundle = allergyMessage(`size-${pages}-${i}`, patient);
        const reply = await post(sandbox.app, bundle);
        if (reply.status !== 200) {
          expectUnsaved(reply, file, /full/);
          break;
        }
        answered.push({ bundle, reply });
        expect({ pages, i, status: (await stateFileHealth(sandbox)).status }).toEqual({ pages, i, status: "ok" });
      }
      closeSandbox(sandbox);
      sandbox = sandboxOn(file, { maxStateFile: 64 * 1024 * 1024 });
      await expectAllThere(sandbox, patient, answered);
      closeSandbox(sandbox);
    }
  });
});

describe("a full disk over real HTTP (the CLI's own message path)", { timeout: 60_000 }, () => {
  it("503 transient with Retry-After once the file is full; health failing; a restart with room has every 200", async () => {
    const { file } = stateDir();
    const patient = patientId(5);
    const first = await startCli(["--state-file", file, "--max-state-file", "256kb"]);
    const answered: Array<{ id: string; bundle: Bundle; reply: Posted }> = [];
    let refused: Posted | undefined;
    for (let i = 0; i < 200 && !refused; i++) {
      const id = `cli-full-${i}`;
      const bundle = allergyMessage(id, patient);
      const reply = await postTo(first.url, bundle);
      if (reply.status === 200) answered.push({ id, bundle, reply });
      else refused = reply;
    }
    if (!refused) throw new Error("200 messages fit in 256 KiB: the limit did not hold");
    expect(answered.length).toBeGreaterThanOrEqual(3);
    expect(refused.status).toBe(503);
    expect(refused.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(refused.headers.get("x-sandbox-call-id")).toMatch(/^\d+$/);
    const outcome = JSON.parse(refused.text);
    expect(outcome.resourceType).toBe("OperationOutcome");
    expect(outcome.issue).toEqual([
      expect.objectContaining({ severity: "error", code: "transient", diagnostics: expect.stringContaining(file) }),
    ]);
    const health = (await (await fetch(`${first.url}/__admin/health`)).json()) as { stateFile: StateFileHealth };
    expect(health.stateFile).toMatchObject({ path: file, status: "failing", lastError: expect.stringMatching(/full/) });
    // The 503 is in the journal (in memory: the file had no room for it either).
    const calls = await allCalls(first.url, "operation=add-allergy");
    expect(calls.at(-1)).toMatchObject({ id: refused.headers.get("x-sandbox-call-id"), status: 503 });
    // Its record holds the 503 as sent, not the answer the message had before its write failed.
    const record = (await (
      await fetch(`${first.url}/__admin/calls/${refused.headers.get("x-sandbox-call-id")}`)
    ).json()) as { response: { body: unknown } };
    expect(record.response.body).toEqual(outcome);
    first.child.process.kill("SIGTERM");
    expect((await first.child.waitForExit()).code).toBe(0);

    const second = await startCli(["--state-file", file]);
    const held = await profileAllergies(second.url, patient);
    const kept = await allCalls(second.url, "operation=add-allergy");
    for (const { id, reply } of answered) {
      const [allergy] = allergiesIn(JSON.parse(reply.text) as Bundle);
      expect({ id, held: held.get(allergy?.id as string) }).toEqual({ id, held: `marker ${id}` });
      expect({ id, call: kept.find((c) => c.messageId === id)?.id }).toEqual({
        id,
        call: reply.headers.get("x-sandbox-call-id"),
      });
    }
    // And nothing of the refused message.
    const markers = [...held.values()].filter((text) => text.startsWith("marker "));
    expect(markers.sort()).toEqual(answered.map(({ id }) => `marker ${id}`).sort());
    second.child.process.kill("SIGTERM");
    expect((await second.child.waitForExit()).code).toBe(0);
  });
});

describe("the state file removed while the sandbox runs", () => {
  it("the next message is answered 503 naming the file; health says failing; reads keep working", async () => {
    const { file } = stateDir();
    const patient = patientId(3);
    const sandbox = sandboxOn(file);
    const first = allergyMessage("removed-1", patient);
    expect((await post(sandbox.app, first)).status).toBe(200);

    unlinkSync(file);
    const second = allergyMessage("removed-2", patient);
    expectUnsaved(await post(sandbox.app, second), file, /removed/);

    const health = await stateFileHealth(sandbox);
    expect(health).toMatchObject({ path: file, status: "failing" });
    expect(health.lastError).toMatch(/removed/);
    expect((await admin(sandbox.app, "GET", "/calls")).status).toBe(200);
    expect(await storedMarkers(sandbox, patient)).toEqual(["marker removed-1"]);
    // Still nowhere to write: a resend is processed again, and refused again.
    expectUnsaved(await post(sandbox.app, second), file, /removed/);
  });
});

describe("the state file locked by another process", () => {
  it("a message is answered 503 while another connection holds the write lock; once it commits, the next succeeds and health is ok", async () => {
    const { file } = stateDir();
    const patient = patientId(4);
    const sandbox = sandboxOn(file);
    expect((await post(sandbox.app, allergyMessage("locked-0", patient))).status).toBe(200);

    const other = new DatabaseSync(file);
    try {
      other.exec("BEGIN IMMEDIATE");
      const blocked = allergyMessage("locked-1", patient);
      expectUnsaved(await post(sandbox.app, blocked), file, /locked|busy/);
      const health = await stateFileHealth(sandbox);
      expect(health.status).toBe("failing");
      expect(health.lastError).toMatch(/locked|busy/);
      expect(await storedMarkers(sandbox, patient)).toEqual(["marker locked-0"]);
      other.exec("COMMIT");

      // The lock is gone: the refused message, sent again, is processed as new and kept.
      const again = await post(sandbox.app, blocked);
      expect([again.status, again.headers.get("x-sandbox-duplicate")]).toEqual([200, null]);
      expect(await stateFileHealth(sandbox)).toMatchObject({ status: "ok", lastError: null, lastErrorAt: null });
      expect(await storedMarkers(sandbox, patient)).toEqual(["marker locked-0", "marker locked-1"]);
      // And written: the other connection reads the calls the file holds (the 503's record could not be written
      // either, while the lock was held).
      const rows = other
        .prepare(
          "SELECT json_extract(value, '$.messageId') AS messageId, json_extract(value, '$.response.status') AS status FROM items WHERE kind = 'call' ORDER BY seq",
        )
        .all();
      expect(rows.map((r) => [r.messageId, r.status])).toEqual([
        ["locked-0", 200],
        ["locked-1", 200],
      ]);
    } finally {
      try {
        other.exec("ROLLBACK");
      } catch {
        // Committed above.
      }
      other.close();
    }
  });
});

describe("a write that fails while another message is under way", () => {
  it("the message under way is answered 503 too: the step back to the file took its change", async () => {
    const { file } = stateDir();
    const patient = patientId(6);
    const sandbox = sandboxOn(file);
    // The slow message is applied at once and answered after its delay: its change waits to be written with its call.
    const rule = [
      "rules:",
      "  - name: slow",
      "    when: { operation: add-allergy, headers: { x-case: slow } }",
      "    respond: { builtIn: true, delay: 1500ms }",
    ].join("\n");
    expect((await admin(sandbox.app, "POST", "/scenarios", { body: rule })).status).toBe(201);

    const slow = allergyMessage("under-way", patient);
    const slowReply = post(sandbox.app, slow, { headers: { "x-case": "slow" } });
    // Applied (in memory): it is in its delay now.
    const until = Date.now() + 5_000;
    while (!(await storedMarkers(sandbox, patient)).includes("marker under-way")) {
      if (Date.now() > until) throw new Error("the slow message was not applied");
    }

    const other = new DatabaseSync(file);
    try {
      other.exec("BEGIN IMMEDIATE");
      expectUnsaved(await post(sandbox.app, allergyMessage("blocked", patient)), file, /locked|busy/);
      other.exec("COMMIT");
    } finally {
      other.close();
    }
    // Its change went with the failed write (and the workspace's step back): a 200 would be a lie.
    expectUnsaved(await slowReply, file, /went back to the file/);
    expect(await storedMarkers(sandbox, patient)).toEqual([]);
    // Sent again, without the delay: processed as new, and kept.
    const again = await post(sandbox.app, slow);
    expect([again.status, again.headers.get("x-sandbox-duplicate")]).toEqual([200, null]);
    expect(await storedMarkers(sandbox, patient)).toEqual(["marker under-way"]);
  });
});
