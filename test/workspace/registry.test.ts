import type { AllergyIntolerance } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type SandboxApp } from "../../src/app.js";
import type { SandboxOptions } from "../../src/config/options.js";
import { admin, manualClock } from "../admin/admin-client.js";
import { quietLogger } from "../orders/pharmacy-client.js";
import { example, messageBundle, post, STANDARD } from "../support/messages.js";
import { WORKSPACE_HEADER, workspaceClient } from "./workspace-client.js";

// CONTRACT §13 and issue 14: names [a-z0-9-]{1,64}; a workspace is made on first use unless --workspaces fixed;
// idle ones are dropped after --workspace-ttl unless named; at most --max-workspaces; GET and DELETE
// /__admin/workspaces need the global admin token.

const HOUR = 3_600_000;
const START = "2026-03-01T08:00:00.000Z";

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

function sandbox(options: Partial<SandboxOptions> = {}, now?: () => Date): SandboxApp {
  const s = createApp(options, { logger: quietLogger, ...(now ? { now } : {}) });
  closers.push(s.close);
  return s;
}

const allergy = () => messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")]);
/** Any message in a workspace: its first use. */
const use = (s: SandboxApp, name: string) => post(s.app, allergy(), { path: `/w/${name}${STANDARD}` });
const listed = async (s: SandboxApp, token?: string) => {
  const reply = await admin(s.app, "GET", "/workspaces", token === undefined ? {} : { token });
  expect(reply.status).toBe(200);
  return (reply.body.workspaces as Array<{ id: string }>).map((w) => w.id);
};

describe("workspace names", () => {
  const bad: Array<[string, string]> = [
    ["capitals", "Team-A"],
    ["an underscore", "team_a"],
    ["a space", "team a"],
    ["a dot", "team.a"],
    ["65 characters", "a".repeat(65)],
  ];

  it.each(bad)("a name with %s is refused with 400, by prefix and by header, and nothing is made", async (_, name) => {
    const s = sandbox();
    for (const reply of [
      await post(s.app, allergy(), { path: `/w/${encodeURIComponent(name)}${STANDARD}` }),
      await post(s.app, allergy(), { headers: { [WORKSPACE_HEADER]: name } }),
      await admin(s.app, "GET", "/calls", { headers: { [WORKSPACE_HEADER]: name } }),
    ]) {
      expect(reply.status).toBe(400);
      expect(reply.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
      expect(reply.body.resourceType).toBe("OperationOutcome");
      expect(reply.body.issue[0]).toMatchObject({ severity: "error", code: "invalid" });
      expect(reply.body.issue[0].diagnostics).toContain("1 to 64 lower-case letters, digits or hyphens");
    }
    expect(await listed(s)).toEqual(["default"]);
    expect(s.journal.size).toBe(0);
  });

  it("an empty prefix (/w//…) and an empty header are refused too", async () => {
    const s = sandbox();
    expect((await post(s.app, allergy(), { path: `/w/${STANDARD}` })).status).toBe(400);
    expect((await post(s.app, allergy(), { headers: { [WORKSPACE_HEADER]: "" } })).status).toBe(400);
  });

  it("64 lower-case letters, digits and hyphens are a name", async () => {
    const s = sandbox();
    const name = `team-0-${"x".repeat(57)}`;
    expect(name).toHaveLength(64);
    expect((await use(s, name)).status).toBe(200);
    expect(await listed(s)).toEqual(["default", name]);
  });

  it("a base path that would read as a workspace prefix is refused at start", () => {
    expect(() => createApp({ basePath: "/w" })).toThrow(/workspace prefix/);
    expect(() => createApp({ basePath: "/w/sandbox" })).toThrow(/workspace prefix/);
  });

  it("under --base-path the prefix comes first: /w/{workspace}/sandbox/…", async () => {
    const s = sandbox({ basePath: "/sandbox" });
    expect((await post(s.app, allergy(), { path: `/w/team-a/sandbox${STANDARD}` })).status).toBe(200);
    expect(await listed(s)).toEqual(["default", "team-a"]);
  });

  it("the prefix wins over the header; /w/default is the default workspace", async () => {
    const s = sandbox();
    await post(s.app, allergy(), { path: `/w/team-a${STANDARD}`, headers: { [WORKSPACE_HEADER]: "team-b" } });
    await post(s.app, allergy(), { path: `/w/default${STANDARD}` });
    expect(await listed(s)).toEqual(["default", "team-a"]);
    expect(s.journal.size).toBe(1);
  });
});

describe("--workspaces fixed", () => {
  it("serves default and the listed workspaces; another is a 404 naming them, and is not made", async () => {
    const s = sandbox({ workspaces: "fixed", workspaceNames: ["team-a", "team-b"] });
    expect((await use(s, "team-a")).status).toBe(200);
    const refused = await use(s, "team-c");
    expect(refused.status).toBe(404);
    expect(refused.body.issue[0].code).toBe("not-found");
    expect(refused.body.issue[0].diagnostics).toContain("default, team-a, team-b");
    const byHeader = await admin(s.app, "GET", "/calls", { headers: { [WORKSPACE_HEADER]: "team-c" } });
    expect(byHeader.status).toBe(404);
    expect(await listed(s)).toEqual(["default", "team-a"]);
  });

  it("refuses to start with more named workspaces than --max-workspaces", () => {
    expect(() => createApp({ workspaces: "fixed", workspaceNames: ["a", "b"], maxWorkspaces: 2 })).toThrow(
      /--workspaces fixed names 3 workspaces .* more than --max-workspaces 2/,
    );
  });
});

describe("--workspace-ttl (a fake clock)", () => {
  it("drops a workspace idle for the TTL, not before; named ones and default stay; a dropped one starts afresh", async () => {
    const clock = manualClock(START);
    const s = sandbox({ workspaceTtlMs: 24 * HOUR, workspaceNames: ["kept"] }, clock.now);
    await use(s, "team-a");
    await use(s, "kept");
    const teamA = workspaceClient(s.app, "team-a", "prefix");
    expect((await teamA.admin("GET", "/calls")).body.calls).toHaveLength(1);

    // Admin calls are a use too: the TTL counts from the last one.
    clock.set("2026-03-02T07:59:59.999Z");
    expect(await listed(s)).toEqual(["default", "team-a", "kept"]);
    clock.set("2026-03-02T08:00:00.000Z");
    expect(await listed(s)).toEqual(["default", "kept"]);

    // Named again, it is a new workspace: nothing of before.
    expect((await teamA.admin("GET", "/calls")).body.calls).toEqual([]);
    clock.set("2026-03-09T08:00:00.000Z");
    expect(await listed(s)).toEqual(["default", "kept"]);
    // A named workspace keeps its state however idle.
    expect((await workspaceClient(s.app, "kept", "header").admin("GET", "/calls")).body.calls).toHaveLength(1);
  });

  it("a request to a workspace just past its TTL finds it afresh, though the last look for idle ones came before", async () => {
    const clock = manualClock(START);
    const s = sandbox({ workspaceTtlMs: HOUR }, clock.now);
    await use(s, "team-a");
    // A request elsewhere looks for idle workspaces half a second before team-a's time is up...
    clock.set("2026-03-01T08:59:59.500Z");
    await use(s, "default");
    // ...and the next look is not due yet when team-a's time is up.
    clock.set("2026-03-01T09:00:00.000Z");
    const calls = await workspaceClient(s.app, "team-a", "header").admin("GET", "/calls");
    expect(calls.body.calls).toEqual([]);
  });
});

describe("--max-workspaces", () => {
  it("a request for one more workspace gets 503 (throttled, Retry-After until an idle one goes); then room again", async () => {
    const clock = manualClock(START);
    const s = sandbox({ maxWorkspaces: 3, workspaceTtlMs: HOUR }, clock.now);
    await use(s, "team-a");
    clock.set("2026-03-01T08:10:00.000Z");
    await use(s, "team-b");

    const refused = await use(s, "team-c");
    expect(refused.status).toBe(503);
    expect(refused.body.issue[0].code).toBe("throttled");
    expect(refused.body.issue[0].diagnostics).toContain("--max-workspaces 3");
    // team-a, idle since 08:00, goes at 09:00: 50 minutes from 08:10.
    expect(refused.headers.get("retry-after")).toBe(String(50 * 60));
    // Those that exist keep working.
    expect((await use(s, "team-b")).status).toBe(200);

    clock.set("2026-03-01T09:00:00.000Z");
    expect((await use(s, "team-c")).status).toBe(200);
    expect(await listed(s)).toEqual(["default", "team-b", "team-c"]);
  });

  it("keeps room for the named workspaces not made yet: others cannot fill it", async () => {
    const s = sandbox({ maxWorkspaces: 3, workspaceNames: ["kept"] });

    expect((await use(s, "team-a")).status).toBe(200);
    expect((await use(s, "team-b")).status).toBe(503);
    expect((await use(s, "kept")).status).toBe(200);
    expect(await listed(s)).toEqual(["default", "team-a", "kept"]);
  });

  it("without anything to drop (all named), the 503 has no Retry-After and says so", async () => {
    const s = sandbox({ maxWorkspaces: 2, workspaceNames: ["team-a"] });
    await use(s, "team-a");
    const refused = await use(s, "team-b");
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBeNull();
    expect(refused.body.issue[0].diagnostics).toMatch(/named in its configuration/);
  });
});

describe("GET and DELETE /__admin/workspaces", () => {
  it("lists each workspace with its counts, last use and memory estimate", async () => {
    const clock = manualClock(START);
    const s = sandbox({ workspaceTtlMs: 24 * HOUR }, clock.now);
    await use(s, "team-a");
    clock.set("2026-03-01T08:30:00.000Z");
    await use(s, "team-a");
    const reply = await admin(s.app, "GET", "/workspaces");
    expect(reply.body.limits).toEqual({ max: 1000, mode: "open", ttlSeconds: 86_400, named: ["default"] });
    const teamA = reply.body.workspaces.find((w: { id: string }) => w.id === "team-a");
    expect(teamA).toMatchObject({
      id: "team-a",
      named: false,
      createdAt: START,
      lastUsedAt: "2026-03-01T08:30:00.000Z",
      dropAt: "2026-03-02T08:30:00.000Z",
      calls: 2,
      orders: 0,
    });
    expect(teamA.patients).toBeGreaterThan(0);
    expect(teamA.memoryEstimateBytes).toBeGreaterThan(reply.body.workspaces[0].memoryEstimateBytes);
    expect(reply.body.memoryEstimateBytes).toBe(
      reply.body.workspaces.reduce((sum: number, w: { memoryEstimateBytes: number }) => sum + w.memoryEstimateBytes, 0),
    );
  });

  it("DELETE drops a workspace and its state; default is never dropped (409); an unknown one is a 404", async () => {
    const s = sandbox();
    await use(s, "team-a");
    expect((await admin(s.app, "DELETE", "/workspaces/team-a")).body).toEqual({ deleted: "team-a" });
    expect(await listed(s)).toEqual(["default"]);
    expect((await admin(s.app, "DELETE", "/workspaces/team-a")).status).toBe(404);
    const refused = await admin(s.app, "DELETE", "/workspaces/default");
    expect(refused.status).toBe(409);
    expect(refused.body.issue[0].diagnostics).toContain("POST /__admin/reset");
  });

  it("with --admin-token: the global token only, also for reloading the shared scenario files", async () => {
    const s = sandbox({ adminToken: "global-secret" });
    expect((await admin(s.app, "GET", "/workspaces")).status).toBe(401);
    expect((await admin(s.app, "GET", "/workspaces", { token: "wrong" })).status).toBe(401);
    expect((await admin(s.app, "GET", "/workspaces", { token: "global-secret" })).status).toBe(200);
    expect((await admin(s.app, "POST", "/scenarios/reload")).status).toBe(401);
    expect((await admin(s.app, "POST", "/scenarios/reload", { token: "global-secret" })).status).toBe(200);
  });
});

describe("GET /__admin/health, per workspace and overall", () => {
  it("shows the workspace it is asked in and counts over all of them, with the limits", async () => {
    const s = sandbox({ journalLimit: 500, maxPatients: 50, maxWorkspaces: 10 });
    await use(s, "team-a");
    const health = await workspaceClient(s.app, "team-a", "prefix").admin("GET", "/health");
    expect(health.status).toBe(200);
    expect(health.body.workspace).toMatchObject({ id: "team-a" });
    expect(health.body.workspaces).toMatchObject({ count: 2, max: 10, mode: "open", ttlSeconds: 86_400, dropped: 0 });
    expect(health.body.calls).toBe(1);
    expect(health.body.journal).toMatchObject({ calls: 1, maxCalls: 500, maxBodyBytes: 96 * 1024 * 1024 });
    expect(health.body.store.limits).toEqual({ patients: 50, recordsPerPatient: 50 });
    // The default workspace's own figures: none of team-a's calls.
    expect((await admin(s.app, "GET", "/health")).body).toMatchObject({ calls: 0, workspace: { id: "default" } });
  });
});
