import { statSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { http, killStray } from "../cli/cli-process.js";
import { envelope, STANDARD } from "../support/messages.js";
import {
  allergyMessage,
  GLOBAL_ADMIN,
  genuineCall,
  type SharedSandbox,
  startSharedSandbox,
  TEAMS,
  untouched,
} from "./shared-sandbox.js";

// Issue 21, defects 2 and 3 (CONTRACT §15): anonymous callers cost nothing that belongs to a team. Before the fix,
// 105 anonymous ~1 MiB POSTs to team-b's message path were each answered 401 and journaled with their bodies in
// team-b's journal, evicting team-b's genuine call (--journal-max-bytes 96 MiB); and anonymous GETs of /w/x/…
// made workspace x.

afterEach(killStray);

/** The sizes of the issue. */
const ATTACKS = 105;
const BODY_BYTES = 1_000_000;
/** What the issue asks of the refused log, written out: a small bounded log, bodies cut to 2 KiB. */
const LOG_BODY_BYTES = 2 * 1024;

async function workspaceIds(sandbox: SharedSandbox): Promise<string[]> {
  const reply = await sandbox.admin(null, "/workspaces", GLOBAL_ADMIN);
  expect(reply.status).toBe(200);
  return (reply.json.workspaces as Array<{ id: string }>).map((w) => w.id).sort();
}

describe("anonymous callers against a shared sandbox (real CLI, --auth oauth2)", () => {
  it(`${ATTACKS} anonymous ~1 MiB POSTs to team-b's message path are refused and leave team-b's evidence untouched`, {
    timeout: 180_000,
  }, async () => {
    const sandbox = await startSharedSandbox();
    try {
      const evidence = await genuineCall(sandbox, "team-b");
      // A message as a team would send it, padded (JSON whitespace) to about 1 MiB, within --max-body.
      const body = envelope(allergyMessage()).padEnd(BODY_BYTES, " ");
      const url = `${sandbox.url}/w/team-b${STANDARD}`;
      const statuses: number[] = [];
      // A few at a time, as a script would send them.
      for (let sent = 0; sent < ATTACKS; sent += 5) {
        const batch = Array.from({ length: Math.min(5, ATTACKS - sent) }, () =>
          http(url, { method: "POST", headers: { "content-type": "application/json" }, body }),
        );
        statuses.push(...(await Promise.all(batch)).map((r) => r.status));
      }
      expect(statuses).toEqual(Array(ATTACKS).fill(401));

      await untouched(sandbox, evidence);
      // Not one of them in team-b's journal, nor in the journal file.
      const calls = await sandbox.admin("team-b", "/calls", TEAMS["team-b"].admin);
      expect(calls.json.calls.filter((c: { response: { status: number } }) => c.response.status === 401)).toEqual([]);
      expect(statSync(sandbox.journalFile).size).toBeLessThan(BODY_BYTES);

      // They are counted and kept, cut short, in the refused log: team-b's admin sees them.
      const log = await sandbox.admin("team-b", "/refused", TEAMS["team-b"].admin);
      expect(log.status).toBe(200);
      expect(log.json.refused).toBe(ATTACKS);
      expect(log.json.calls.length).toBeGreaterThan(0);
      expect(log.json.calls.length).toBeLessThanOrEqual(ATTACKS);
      for (const call of log.json.calls as Array<{ workspace: string; request: { body: string; bodyBytes: number } }>) {
        expect(call.workspace).toBe("team-b");
        expect(call.request.bodyBytes).toBe(BODY_BYTES);
        expect(Buffer.byteLength(call.request.body)).toBeLessThanOrEqual(LOG_BODY_BYTES);
      }
      // team-a's admin sees none of them.
      expect((await sandbox.admin("team-a", "/refused", TEAMS["team-a"].admin)).json.calls).toEqual([]);
    } finally {
      sandbox.stop();
    }
  });

  it("anonymous GETs of /w/x/… make no workspace, and health shows them no team's figures", {
    timeout: 60_000,
  }, async () => {
    const sandbox = await startSharedSandbox();
    try {
      const evidence = await genuineCall(sandbox, "team-b");
      const before = await workspaceIds(sandbox);
      const paths = [
        "/w/x/__admin/health",
        "/w/x/__admin/ui/",
        "/w/x/uae-fhir/r4/metadata",
        "/w/x/",
        "/w/x/nothing-here",
        "/w/x/__admin/calls",
      ];
      for (const [i, path] of paths.entries()) {
        // A name a request each: the issue's attack claims a workspace per name.
        const reply = await http(`${sandbox.url}${path.replace("/w/x/", `/w/x-${i}/`)}`);
        expect([401, 404], path).toContain(reply.status);
      }
      const refusedMessage = await http(`${sandbox.url}/w/x-msg${STANDARD}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: envelope(allergyMessage()),
      });
      expect(refusedMessage.status).toBe(401);
      expect(await workspaceIds(sandbox)).toEqual(before);

      // Health needs no token and answers ok, but shows an anonymous caller no team's calls.
      const health = await http(`${sandbox.url}/w/team-b/__admin/health`);
      expect(health.status).toBe(200);
      expect(health.json.status).toBe("ok");
      for (const figure of ["calls", "journal", "store", "workspace"]) expect(health.json).not.toHaveProperty(figure);
      const own = await sandbox.admin("team-b", "/health", TEAMS["team-b"].admin);
      expect(own.json).toMatchObject({ workspace: { id: "team-b" }, calls: expect.any(Number) });

      await untouched(sandbox, evidence);
    } finally {
      sandbox.stop();
    }
  });
});
