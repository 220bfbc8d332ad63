import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllergyIntolerance } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import type { SandboxOptions } from "../../src/config/options.js";
import { createRequestLog, type LogSettings } from "../../src/log/request-log.js";
import { admin, manualClock } from "../admin/admin-client.js";
import { LogOutput, loggedSandbox } from "../support/log-output.js";
import { example, messageBundle, post } from "../support/messages.js";

// Issue: "admin actions (reset, rules added, reload) are invisible at info". Each change made by hand is a line at
// the default level (info) naming the action, the workspace, and what it counted: rules added (POST
// /__admin/scenarios) and removed (DELETE), the journal cleared, a reset, a reload (POST /__admin/scenarios/reload or
// a file changed), a workspace made, deleted or dropped for idleness. JSON: an object with `event`; pretty: a line.

const RULES = `
rules:
  - name: first
    when: { operation: add-allergy, headers: { X-Case: one } }
    respond: { builtIn: true }
  - name: second
    when: { operation: add-allergy, headers: { X-Case: two } }
    respond: { builtIn: true }
`;
const YAML = { "content-type": "text/yaml" };
const TIME = String.raw`\d\d:\d\d:\d\d\.\d{3}`;

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A scenarios folder of one file with one rule. */
function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), "log-changes-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(
    join(dir, "rules.yaml"),
    "rules:\n  - name: from-file\n    when: { operation: add-task }\n    respond: { builtIn: true }\n",
  );
  return dir;
}

function start(settings: Partial<LogSettings>, options: Partial<SandboxOptions> = {}, deps = {}) {
  const logged = loggedSandbox(settings, options, deps);
  cleanups.push(() => logged.sandbox.close());
  return logged;
}

const allergy = () => messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")]);

/** The changes of the list, made through the admin API, in order. */
async function makeTheChanges(app: Parameters<typeof admin>[0]) {
  expect((await admin(app, "POST", "/scenarios", { body: RULES, headers: YAML })).status).toBe(201);
  expect((await post(app, allergy())).status).toBe(200);
  expect((await post(app, allergy())).status).toBe(200);
  expect((await admin(app, "DELETE", "/scenarios")).status).toBe(200);
  expect((await admin(app, "DELETE", "/calls")).status).toBe(200);
  expect((await post(app, allergy())).status).toBe(200);
  expect((await admin(app, "POST", "/scenarios", { body: RULES, headers: YAML })).status).toBe(201);
  expect((await admin(app, "POST", "/reset")).status).toBe(200);
  expect((await admin(app, "POST", "/scenarios/reload")).status).toBe(200);
  // A team's workspace: made by its first request, changed, deleted.
  expect((await admin(app, "POST", "/scenarios", { body: RULES, headers: YAML, prefix: "/w/team-a" })).status).toBe(
    201,
  );
  expect((await admin(app, "DELETE", "/workspaces/team-a")).status).toBe(200);
}

describe("changes made by hand are logged at info", () => {
  it("as JSON: an event per change, with the workspace and the counts", async () => {
    const dir = folder();
    const { sandbox, log, out, err } = start({ format: "json" }, { scenarios: dir });
    await makeTheChanges(sandbox.app);
    log.flush();
    expect(err.text).toBe("");
    const said = out.events().filter((e) => e.event !== "call");
    for (const e of said) expect(e.level, e.msg).toBe("info");
    expect(said.map(({ level: _, time: __, ...rest }) => rest)).toEqual([
      {
        event: "rules-added",
        workspace: "default",
        source: "runtime-1",
        rules: 2,
        msg: "2 rules added to workspace default (runtime-1)",
      },
      {
        event: "rules-removed",
        workspace: "default",
        rules: 2,
        msg: "2 rules removed from workspace default (all those added at run time)",
      },
      { event: "calls-cleared", workspace: "default", calls: 2, msg: "journal of workspace default cleared: 2 calls" },
      {
        event: "rules-added",
        workspace: "default",
        source: "runtime-2",
        rules: 2,
        msg: "2 rules added to workspace default (runtime-2)",
      },
      {
        event: "reset",
        workspace: "default",
        calls: 1,
        orders: 0,
        patients: expect.any(Number),
        runtimeRules: 2,
        msg: expect.stringMatching(
          /^workspace default reset: 1 call, 0 orders and \d+ patients? cleared, the fixtures loaded again; 2 rules added at run time kept$/,
        ),
      },
      {
        event: "scenarios-loaded",
        source: dir,
        files: 1,
        rules: 1,
        cause: "admin",
        msg: `scenarios loaded from ${dir}: 1 rule`,
      },
      {
        event: "workspace-created",
        workspace: "team-a",
        workspaces: 2,
        msg: "workspace team-a created (2 workspaces held)",
      },
      {
        event: "rules-added",
        workspace: "team-a",
        source: "runtime-1",
        rules: 2,
        msg: "2 rules added to workspace team-a (runtime-1)",
      },
      {
        event: "workspace-deleted",
        workspace: "team-a",
        workspaces: 1,
        msg: "workspace team-a deleted with all it held (1 workspace held)",
      },
    ]);
    // The calls' lines are still there, in order among them.
    expect(out.events().map((e) => e.event)).toEqual([
      "rules-added",
      "call",
      "call",
      "rules-removed",
      "calls-cleared",
      "call",
      "rules-added",
      "reset",
      "scenarios-loaded",
      "workspace-created",
      "rules-added",
      "workspace-deleted",
    ]);
  });

  it("for people: a line each, as the sandbox's other messages", async () => {
    const dir = folder();
    const { sandbox, log, out } = start({ format: "pretty", colours: false }, { scenarios: dir });
    await makeTheChanges(sandbox.app);
    log.flush();
    const said = out.lines().filter((l) => / INFO /.test(l));
    const expected = [
      "2 rules added to workspace default \\(runtime-1\\)",
      "2 rules removed from workspace default \\(all those added at run time\\)",
      "journal of workspace default cleared: 2 calls",
      "2 rules added to workspace default \\(runtime-2\\)",
      "workspace default reset: 1 call, 0 orders and \\d+ patients? cleared, the fixtures loaded again; 2 rules added at run time kept",
      `scenarios loaded from ${dir}: 1 rule`,
      "workspace team-a created \\(2 workspaces held\\)",
      "2 rules added to workspace team-a \\(runtime-1\\)",
      "workspace team-a deleted with all it held \\(1 workspace held\\)",
    ];
    expect(said).toEqual(expected.map((text) => expect.stringMatching(new RegExp(`^${TIME} INFO ${text}$`))));
  });

  it("scenario states put back in Started by hand: how many, of which scenario and key", async () => {
    const { sandbox, log, out } = start({ format: "json" });
    const flow =
      "rules:\n  - when: { operation: add-allergy }\n    scenario: flow\n    newState: moved\n    respond: { builtIn: true }\n";
    expect((await admin(sandbox.app, "POST", "/scenarios", { body: flow, headers: YAML })).status).toBe(201);
    expect((await post(sandbox.app, allergy())).status).toBe(200);
    expect((await admin(sandbox.app, "DELETE", "/scenarios/states?scenario=flow&key=nobody")).status).toBe(200);
    expect((await admin(sandbox.app, "DELETE", "/scenarios/states")).status).toBe(200);
    log.flush();
    expect(out.events().filter((e) => e.event === "states-reset")).toEqual([
      expect.objectContaining({
        level: "info",
        workspace: "default",
        states: 0,
        scenario: "flow",
        key: "nobody",
        msg: "0 scenario states of workspace default back in Started (scenario flow, key nobody)",
      }),
      expect.objectContaining({
        states: 1,
        scenario: null,
        key: null,
        msg: "1 scenario state of workspace default back in Started",
      }),
    ]);
  });

  it("a reload because a file changed says so", async () => {
    const dir = folder();
    const { out } = start({ format: "json" }, { scenarios: dir, watch: true });
    writeFileSync(
      join(dir, "more.yaml"),
      "rules:\n  - name: another\n    when: { operation: add-task }\n    respond: { builtIn: true }\n",
    );
    await out.waitFor(/"event":"scenarios-loaded"[^\n]*"rules":2/);
    expect(out.events().at(-1)).toMatchObject({
      level: "info",
      event: "scenarios-loaded",
      source: dir,
      files: 2,
      rules: 2,
      cause: "file-change",
    });
  });

  it("a workspace dropped for idleness, with how long it was idle", async () => {
    const clock = manualClock("2026-01-15T09:00:00.000Z");
    const { sandbox, log, out } = start({ format: "json" }, { workspaceTtlMs: 3_600_000 }, { now: clock.now });
    expect((await admin(sandbox.app, "GET", "/health", { prefix: "/w/team-b" })).status).toBe(200);
    clock.set("2026-01-15T11:00:00.000Z");
    expect((await admin(sandbox.app, "GET", "/workspaces")).status).toBe(200);
    log.flush();
    expect(out.events()).toEqual([
      expect.objectContaining({ event: "workspace-created", workspace: "team-b", workspaces: 2 }),
      expect.objectContaining({
        level: "info",
        event: "workspace-dropped",
        workspace: "team-b",
        workspaces: 1,
        idleMs: 7_200_000,
        msg: "workspace team-b dropped after 2 h idle (--workspace-ttl) with all it held (1 workspace held)",
      }),
    ]);
  });

  it("without the calls' lines (--quiet), the changes are still said; at warn, not", async () => {
    const quiet = loggedSandbox({ format: "json" }, {});
    cleanups.push(() => quiet.sandbox.close());
    // loggedSandbox observes with the lines of calls; a second log observes as --quiet does.
    const out = new LogOutput();
    const quietLog = createRequestLog({ format: "json", level: "info", colours: false }, { out, err: out });
    quietLog.observe(quiet.sandbox.sandboxEvents, { calls: false });
    const warnOut = new LogOutput();
    const warnLog = createRequestLog({ format: "json", level: "warn", colours: false }, { out: warnOut, err: warnOut });
    warnLog.observe(quiet.sandbox.sandboxEvents);
    expect((await admin(quiet.sandbox.app, "POST", "/scenarios", { body: RULES, headers: YAML })).status).toBe(201);
    expect((await post(quiet.sandbox.app, allergy())).status).toBe(200);
    expect((await admin(quiet.sandbox.app, "POST", "/reset")).status).toBe(200);
    quietLog.flush();
    warnLog.flush();
    expect(out.events().map((e) => e.event)).toEqual(["rules-added", "reset"]);
    expect(warnOut.text).toBe("");
  });
});
