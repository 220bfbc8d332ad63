import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { admin, manualClock } from "../admin/admin-client.js";
import { authSandbox } from "../auth/oauth-support.js";
import { killStray, startCli } from "../cli/cli-process.js";
import { post } from "../support/messages.js";
import { allCalls, allergyMessage, patientId, postTo, tempDir } from "./state-support.js";

// A message's change is written with its journal call. Calls no journal keeps must still have what their message
// began settled — written at once, not left waiting for a journal call that never comes: an anonymous caller's (under
// --auth oauth2, answered 401 by the default workspace standing in), and one whose answer's headers a rule made
// unsendable (a 500 with no record).

afterEach(killStray);

const dirs: Array<{ remove(): void }> = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) dir.remove();
});

describe("an anonymous caller's message, with a state file", () => {
  it("is answered 401, is in no journal, and leaves nothing unwritten (the workspace's last use is in the file)", async () => {
    const dir = tempDir();
    dirs.push(dir);
    const clock = manualClock("2026-03-01T10:00:00Z");
    const { app } = authSandbox(
      "clients:\n  - { id: clinic-a-ehr, secret: a-secret, workspace: clinic-a }\n",
      { stateFile: dir.file, adminToken: "global-admin" },
      { now: clock.now },
    );
    clock.set("2026-03-01T11:00:00Z");

    const reply = await post(app, allergyMessage("anonymous-1", patientId(7)));
    expect(reply.status).toBe(401);
    const calls = await admin(app, "GET", "/calls", { token: "global-admin" });
    expect(calls.body.calls).toEqual([]);

    const file = new DatabaseSync(dir.file, { readOnly: true });
    try {
      const row = file.prepare("SELECT value FROM items WHERE workspace = 'default' AND kind = 'workspace'").get() as {
        value: string;
      };
      expect(JSON.parse(row.value)).toMatchObject({
        createdAt: "2026-03-01T10:00:00.000Z",
        lastUsedAt: "2026-03-01T11:00:00.000Z",
      });
    } finally {
      file.close();
    }
  });
});

// A header value no answer can carry, rendered per message (a literal one is refused when the rule loads).
const UNSENDABLE = [
  "rules:",
  '  - name: "unsendable \u20ac"',
  "    when: { operation: add-allergy }",
  '    respond: { builtIn: true, headers: { X-Rule: "{{ rule.name }}" } }',
].join("\n");

/** The rows of the file's records whose text has the marker: the allergy, once written. */
function recordsWith(path: string, marker: string): number {
  const file = new DatabaseSync(path, { readOnly: true });
  try {
    return file.prepare("SELECT value FROM items WHERE kind = 'record' AND value LIKE ?").all(`%${marker}%`).length;
  } finally {
    file.close();
  }
}

describe("a message whose answer a rule's headers made unsendable, with a state file", { timeout: 30_000 }, () => {
  it("in-process: answered 500 and recorded so, its change written with that record", async () => {
    const dir = tempDir();
    dirs.push(dir);
    const sandbox = createApp({ stateFile: dir.file }, { logger: { info: () => undefined, error: () => undefined } });
    try {
      expect((await admin(sandbox.app, "POST", "/scenarios", { body: UNSENDABLE })).status).toBe(201);
      expect((await post(sandbox.app, allergyMessage("unsendable-1", patientId(8)))).status).toBe(500);
      const calls = (await admin(sandbox.app, "GET", "/calls?view=summary")).body.calls;
      expect(calls.map((c: { messageId: string; status: number }) => [c.messageId, c.status])).toEqual([
        ["unsendable-1", 500],
      ]);
      expect(recordsWith(dir.file, "marker unsendable-1")).toBe(1);
    } finally {
      sandbox.close();
    }
  });

  it("over the CLI's own message path: answered 500 with no record, and its change is in the file at once", async () => {
    const dir = tempDir();
    dirs.push(dir);
    const { child, url } = await startCli(["--state-file", dir.file]);
    const added = await fetch(`${url}/__admin/scenarios`, {
      method: "POST",
      headers: { "content-type": "application/yaml" },
      body: UNSENDABLE,
    });
    expect(added.status).toBe(201);
    expect((await postTo(url, allergyMessage("unsendable-2", patientId(9)))).status).toBe(500);
    expect(await allCalls(url)).toEqual([]);
    // Read by another connection while the sandbox runs: committed, not waiting for a journal call.
    expect(recordsWith(dir.file, "marker unsendable-2")).toBe(1);
    child.process.kill("SIGTERM");
    expect((await child.waitForExit()).code).toBe(0);
  });
});
