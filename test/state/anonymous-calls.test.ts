import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it } from "vitest";
import { admin, manualClock } from "../admin/admin-client.js";
import { authSandbox } from "../auth/oauth-support.js";
import { post } from "../support/messages.js";
import { allergyMessage, patientId, tempDir } from "./state-support.js";

// Under --auth oauth2 a message without a token is answered 401 by the default workspace standing in, and its
// journal keeps none of it (the call is anonymous). What the workspace began for it must still be settled: written
// at once, as any message's change is, not left waiting for a journal call that never comes.

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
      expect(JSON.parse(row.value)).toEqual({
        createdAt: "2026-03-01T10:00:00.000Z",
        lastUsedAt: "2026-03-01T11:00:00.000Z",
      });
    } finally {
      file.close();
    }
  });
});
