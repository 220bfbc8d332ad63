import { describe, expect, it } from "vitest";
import { resolveServeConfig } from "../../src/cli/flags.js";
import { runCli } from "../../src/cli/main.js";

// The workspace flags of issue 14, with their defaults: --max-workspaces 1000, --workspace-ttl 24h,
// --workspaces open (or fixed, with names), and the per-workspace journal byte budget (96 MiB as before).

const sandboxOf = (values: Record<string, string>, env: Record<string, string> = {}) =>
  resolveServeConfig(values, env).sandbox;

describe("workspace flags", () => {
  it("defaults: open, at most 1000, idle ones dropped after 24 h, 96 MiB of journal bodies each", () => {
    expect(sandboxOf({})).toMatchObject({
      workspaces: "open",
      workspaceNames: [],
      maxWorkspaces: 1000,
      workspaceTtlMs: 24 * 3_600_000,
      journalMaxBytes: 96 * 1024 * 1024,
    });
  });

  it.each([
    [{ workspaces: "fixed" }, {}, { workspaces: "fixed", workspaceNames: [] }],
    [{ workspaces: "fixed:team-a, team-b" }, {}, { workspaces: "fixed", workspaceNames: ["team-a", "team-b"] }],
    [{}, { WORKSPACES: "open:kept" }, { workspaces: "open", workspaceNames: ["kept"] }],
    [{ "workspace-ttl": "90m" }, {}, { workspaceTtlMs: 90 * 60_000 }],
    [{}, { WORKSPACE_TTL: "2h" }, { workspaceTtlMs: 2 * 3_600_000 }],
    [{ "max-workspaces": "5" }, {}, { maxWorkspaces: 5 }],
    [{}, { JOURNAL_MAX_BYTES: "4mb" }, { journalMaxBytes: 4 * 1024 * 1024 }],
  ])("%j %j", (values, env, expected) => {
    expect(sandboxOf(values, env)).toMatchObject(expected);
  });

  it.each([
    [["--workspaces", "closed"], "--workspaces"],
    [["--workspaces", "fixed:Team-A"], "Team-A"],
    [["--max-workspaces", "0"], "--max-workspaces"],
    [["--workspace-ttl", "1d"], "--workspace-ttl"],
    [["--journal-max-bytes", "lots"], "--journal-max-bytes"],
  ])("%j stops the CLI with exit code 2, naming it", async (args, named) => {
    const err: string[] = [];
    const code = await runCli(["serve", "--port", "0", "--host", "127.0.0.1", ...args], {
      out: () => undefined,
      err: (l) => err.push(l),
      env: {},
    });
    expect(code).toBe(2);
    expect(err.join("\n")).toContain(named);
  });

  it("--help lists them with their environment variables and defaults", async () => {
    const out: string[] = [];
    expect(await runCli(["--help"], { out: (l) => out.push(l), err: () => undefined, env: {} })).toBe(0);
    const help = out.join("\n");
    for (const [flag, env, def] of [
      ["--max-workspaces", "MAX_WORKSPACES", "1000"],
      ["--workspace-ttl", "WORKSPACE_TTL", "24h"],
      ["--workspaces", "WORKSPACES", "open"],
      ["--journal-max-bytes", "JOURNAL_MAX_BYTES", "96mb"],
    ]) {
      const line = help.split("\n").find((l) => l.trimStart().startsWith(`${flag} `)) ?? "";
      expect(line, flag).toContain(`(default: ${def})`);
      expect(line, flag).toContain(`Env: ${env}`);
    }
  });
});
