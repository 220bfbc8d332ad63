import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { Bundle } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { admin } from "../admin/admin-client.js";
import { authSandbox } from "../auth/oauth-support.js";
import { type Child, killStray, runToExit, startCli } from "../cli/cli-process.js";
import {
  allCalls,
  allergiesIn,
  allergyMessage,
  type Posted,
  patientId,
  postTo,
  profileAllergies,
  tempDir,
} from "./state-support.js";

// Backups of a running sandbox's state file: GET /__admin/state/backup and `uae-fhir-sandbox backup`, both a
// consistent copy (VACUUM INTO) that node:sqlite opens and a sandbox starts from, with the state of the moment.

afterEach(killStray);

const dirs: Array<{ remove(): void }> = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) dir.remove();
});

function stateDir() {
  const dir = tempDir();
  dirs.push(dir);
  return dir;
}

const TOKEN = "backup-test-token";
const QUIET = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** What a copy must hold, checked with node:sqlite alone: a whole database of the sandbox's schema, with these calls. */
function expectSandboxDatabase(path: string, messageIds: string[]): void {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    expect(db.prepare("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
    expect(db.prepare("PRAGMA user_version").get()).toEqual({ user_version: 1 });
    const held = db
      .prepare("SELECT json_extract(value, '$.messageId') AS messageId FROM items WHERE kind = 'call'")
      .all()
      .map((r) => r.messageId);
    for (const id of messageIds) expect(held).toContain(id);
  } finally {
    db.close();
  }
}

interface Sent {
  id: string;
  patient: string;
  bundle: Bundle;
  reply: Posted;
}

async function sendAllergies(url: string, ids: string[]): Promise<Sent[]> {
  const sent: Sent[] = [];
  for (const [i, id] of ids.entries()) {
    const patient = patientId(100 + (i % 2));
    const bundle = allergyMessage(id, patient);
    const reply = await postTo(url, bundle);
    expect(reply.status).toBe(200);
    sent.push({ id, patient, bundle, reply });
  }
  return sent;
}

/** A sandbox started on `file` holds these messages as they were answered, and not `absent`. */
async function expectStateOf(file: string, sent: Sent[], absent: string[]): Promise<void> {
  const { child, url } = await startCli(["--state-file", file]);
  try {
    const calls = await allCalls(url, "operation=add-allergy");
    for (const { id, patient, bundle, reply } of sent) {
      const [allergy] = allergiesIn(JSON.parse(reply.text) as Bundle);
      expect((await profileAllergies(url, patient)).get(allergy?.id as string)).toBe(`marker ${id}`);
      expect(calls.find((c) => c.messageId === id)?.id).toBe(reply.headers.get("x-sandbox-call-id"));
      const again = await postTo(url, bundle);
      expect([again.status, again.headers.get("x-sandbox-duplicate")]).toEqual([200, "true"]);
      expect(JSON.parse(again.text)).toEqual(JSON.parse(reply.text));
    }
    for (const id of absent) expect(calls.some((c) => c.messageId === id)).toBe(false);
  } finally {
    await stop(child);
  }
}

async function stop(child: Child): Promise<void> {
  child.process.kill("SIGTERM");
  expect((await child.waitForExit(15_000)).code).toBe(0);
}

/** Bounded poll: `check` true within the timeout. */
async function eventually(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error("the condition did not hold in time");
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe("backups of a running sandbox (real CLI)", { timeout: 120_000 }, () => {
  it("GET /__admin/state/backup (global admin token) and `backup --state-file --to`: copies a sandbox starts from, with the state of their moment", async () => {
    const { dir, file } = stateDir();
    const { child, url } = await startCli(["--state-file", file, "--admin-token", TOKEN]);
    const before = await sendAllergies(url, ["backup-1", "backup-2", "backup-3"]);

    // The endpoint: the token, then the copy.
    expect((await fetch(`${url}/__admin/state/backup`)).status).toBe(401);
    const res = await fetch(`${url}/__admin/state/backup`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/vnd.sqlite3");
    expect(res.headers.get("content-disposition")).toMatch(/^attachment; filename="[^"/]+\.db"$/);
    const fromEndpoint = join(dir, "from-endpoint.db");
    writeFileSync(fromEndpoint, Buffer.from(await res.arrayBuffer()));
    expectSandboxDatabase(fromEndpoint, ["backup-1", "backup-2", "backup-3"]);
    // Its temporary file beside the state file goes once it is sent.
    await eventually(() => readdirSync(dir).every((name) => !name.includes(".backup-")));

    // The command, while the sandbox serves from the same file.
    const between = await sendAllergies(url, ["backup-4"]);
    const fromCommand = join(dir, "from-command.db");
    const copied = await runToExit(["backup", "--state-file", file, "--to", fromCommand]);
    expect({ code: copied.code, stderr: copied.stderr }).toEqual({ code: 0, stderr: "" });
    expect(copied.stdout).toContain(fromCommand);
    expectSandboxDatabase(fromCommand, ["backup-1", "backup-2", "backup-3", "backup-4"]);

    // A copy never overwrites: an existing target is refused and left as it was.
    const existing = readFileSync(fromCommand);
    const refused = await runToExit(["backup", "--state-file", file, "--to", fromCommand]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/exists already/);
    expect(readFileSync(fromCommand).equals(existing)).toBe(true);
    // No state file: a problem of the command line, and no copy made.
    const nowhere = join(dir, "nowhere.db");
    const missing = await runToExit(["backup", "--state-file", join(dir, "missing.db"), "--to", nowhere]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/missing\.db does not exist/);
    expect(existsSync(nowhere)).toBe(false);
    expect(existsSync(join(dir, "missing.db"))).toBe(false);

    const after = await sendAllergies(url, ["backup-5"]);
    // The sandbox still serves from its file: the copies did not disturb it.
    const health = await fetch(`${url}/__admin/health`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(((await health.json()) as { stateFile: { status: string } }).stateFile.status).toBe("ok");
    await stop(child);

    // Each copy is the state of its moment: what was answered before it, and nothing after.
    await expectStateOf(fromEndpoint, before, ["backup-4", "backup-5"]);
    await expectStateOf(fromCommand, [...before, ...between], ["backup-5"]);
    // And the original has everything.
    await expectStateOf(file, [...before, ...between, ...after], []);
  });
});

describe("GET /__admin/state/backup's refusals", () => {
  it("without a state file: 404 saying the sandbox keeps its state in memory", async () => {
    const sandbox = createApp({}, { logger: QUIET });
    try {
      const reply = await admin(sandbox.app, "GET", "/state/backup");
      expect(reply.status).toBe(404);
      expect(reply.body.issue[0]).toMatchObject({ code: "not-found" });
      expect(reply.body.issue[0].diagnostics).toMatch(/--state-file/);
    } finally {
      sandbox.close();
    }
  });

  it("a workspace's own admin token does not open it (the file holds every workspace): only the global one", async () => {
    const { file } = stateDir();
    const clients = `clients:
  - { id: clinic-a-ehr, secret: a-secret, workspace: clinic-a }
workspaces:
  clinic-a: { adminToken: clinic-a-admin }
`;
    const { app } = authSandbox(clients, { adminToken: "global-admin", stateFile: file });
    // The workspace's token works on its own admin API…
    expect((await admin(app, "GET", "/calls", { prefix: "/w/clinic-a", token: "clinic-a-admin" })).status).toBe(200);
    // …not on the backup, asked for outside or inside its workspace.
    for (const prefix of ["", "/w/clinic-a"]) {
      const reply = await admin(app, "GET", "/state/backup", { prefix, token: "clinic-a-admin" });
      expect({ prefix, status: reply.status }).toEqual({ prefix, status: 401 });
    }
    const copy = await app.request("/__admin/state/backup", { headers: { authorization: "Bearer global-admin" } });
    expect(copy.status).toBe(200);
    expect(copy.headers.get("content-type")).toBe("application/vnd.sqlite3");
    expect(new TextDecoder().decode((await copy.arrayBuffer()).slice(0, 15))).toBe("SQLite format 3");
  });
});
