import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import type { SessionReport } from "../../src/conformance/session-report.js";
import { allergyMessage, post } from "../support/messages.js";

/**
 * A sender session's one-time rule is the session's, not the workspace's: it never reaches the state file (not its
 * document, not its hit counts: a later runtime rule may get its number after a restart), and DELETE
 * /__admin/scenarios, which clears the team's own runtime rules, leaves it to the session.
 */

const dir = mkdtempSync(join(tmpdir(), "conformance-rules-"));
const file = join(dir, "state.db");
const app = createApp({ scenarios: undefined, stateFile: file });
afterAll(() => {
  app.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The kinds of rows the state file holds for the default workspace, with how many of each. */
function heldKinds(): Record<string, number> {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const rows = db
      .prepare("SELECT kind, count(*) AS n FROM items WHERE workspace = 'default' GROUP BY kind")
      .all() as Array<{ kind: string; n: number }>;
    return Object.fromEntries(rows.map((r) => [r.kind, r.n]));
  } finally {
    db.close();
  }
}

const runtimeSources = async () =>
  ((await (await app.app.request("/__admin/scenarios")).json()) as { rules: Array<{ source: string }> }).rules
    .map((r) => r.source)
    .filter((s) => s.startsWith("runtime-"));

describe("a session's rule and the workspace's state", () => {
  it("answers, is never written to the state file, and outlives DELETE /__admin/scenarios until the session ends", async () => {
    const started = await app.app.request("/__admin/conformance/sessions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ role: "sender", operations: ["add-allergy"] }),
    });
    const { id } = (await started.json()) as SessionReport;
    expect((await post(app.app, allergyMessage())).status).toBe(200);
    const session = app.conformance.get("default", id);
    // Bounded: the first test passes on that message, and the second one's rule is in force at once after it.
    for (let i = 0; i < 100 && session?.report().tests[1]?.steps[0]?.status !== "running"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // A rule of the team's own beside it: DELETE /__admin/scenarios clears that one only.
    const own = await app.app.request("/__admin/scenarios", {
      method: "POST",
      headers: { "content-type": "application/yaml" },
      body: "rules:\n  - name: team-rule\n    when: { operation: add-history }\n    respond: { status: 503, outcome: { diagnostics: down } }\n",
    });
    expect(own.status).toBe(201);
    expect(await runtimeSources()).toHaveLength(2);
    expect((await app.app.request("/__admin/scenarios", { method: "DELETE" })).status).toBe(200);
    expect(await runtimeSources()).toHaveLength(1);

    expect((await post(app.app, allergyMessage())).status).toBe(503);
    const held = heldKinds();
    expect(held.scenario ?? 0).toBe(0);
    expect(held.hits ?? 0).toBe(0);

    session?.stop("test over");
    expect(await runtimeSources()).toEqual([]);
  });
});
