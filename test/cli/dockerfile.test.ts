import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { childEnv, http, killStray, LISTENING, ROOT, spawnCommand } from "./cli-process.js";

// No Docker engine in CI: the Dockerfile is parsed, and its CMD and HEALTHCHECK are run from the repository root.
afterEach(killStray);

interface Instruction {
  keyword: string;
  args: string;
  line: number;
}

/** Dockerfile → instructions: comments and blank lines dropped, `\` continuations joined. */
function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let pending: { text: string; line: number } | undefined;
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (pending === undefined && (line === "" || line.startsWith("#"))) return;
    if (pending !== undefined && line.startsWith("#")) return;
    const continued = line.endsWith("\\");
    const part = continued ? line.slice(0, -1).trim() : line;
    pending = pending ? { text: `${pending.text} ${part}`, line: pending.line } : { text: part, line: i + 1 };
    if (continued) return;
    const [, keyword = "", args = ""] = /^(\S+)\s*(.*)$/.exec(pending.text) ?? [];
    out.push({ keyword: keyword.toUpperCase(), args, line: pending.line });
    pending = undefined;
  });
  return out;
}

/** The stages, each starting at its FROM. */
function stages(instructions: Instruction[]): Instruction[][] {
  const out: Instruction[][] = [];
  for (const i of instructions) {
    if (i.keyword === "FROM") out.push([]);
    out.at(-1)?.push(i);
  }
  return out;
}

/** `KEY=value KEY2="value 2"` → a record. */
function envPairs(args: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|\S+)/g)) {
    const value = m[2] as string;
    out[m[1] as string] = value.startsWith('"') ? (JSON.parse(value) as string) : value;
  }
  return out;
}

/** An exec-form command (`["node", ...]`); shell form is not accepted. */
function execForm(args: string): string[] {
  expect(args.trim().startsWith("["), `expected exec form, found ${args}`).toBe(true);
  return JSON.parse(args) as string[];
}

const dockerfile = parseDockerfile(readFileSync(`${ROOT}Dockerfile`, "utf8"));
const [build, runtime] = [stages(dockerfile)[0] ?? [], stages(dockerfile).at(-1) ?? []];
const all = (stage: Instruction[], keyword: string) => stage.filter((i) => i.keyword === keyword);
const one = (stage: Instruction[], keyword: string): Instruction => {
  const found = all(stage, keyword);
  expect(found, `exactly one ${keyword} in the stage`).toHaveLength(1);
  return found[0] as Instruction;
};

const workdir = one(runtime, "WORKDIR").args;
const imageEnv = Object.assign({}, ...all(runtime, "ENV").map((i) => envPairs(i.args))) as Record<string, string>;
const cmd = execForm(one(runtime, "CMD").args);
const healthcheck = (() => {
  const args = one(runtime, "HEALTHCHECK").args;
  const at = args.indexOf("CMD ");
  expect(at, "HEALTHCHECK ... CMD [...]").toBeGreaterThanOrEqual(0);
  return { options: args.slice(0, at), command: execForm(args.slice(at + 4)) };
})();

describe("the Dockerfile", () => {
  it("builds in a node:24-bookworm-slim stage with npm ci then npm run build", () => {
    expect(stages(dockerfile).length).toBeGreaterThanOrEqual(2);
    expect(build[0]?.args).toMatch(/^node:24-bookworm-slim\s+AS\s+build$/i);
    const runs = all(build, "RUN").map((i) => i.args);
    const ci = runs.findIndex((r) => /^npm ci\b/.test(r));
    const compile = runs.findIndex((r) => r.includes("npm run build"));
    expect(ci).toBeGreaterThanOrEqual(0);
    expect(compile).toBeGreaterThan(ci);
  });

  it("gives the build what npm run build reads: the sources, scripts/, and the README and docs/ it renders", () => {
    const copied = all(build, "COPY").flatMap((i) => i.args.split(/\s+/).slice(0, -1));
    for (const needed of ["tsconfig.json", "src", "scripts", "README.md", "docs", "scenarios/README.md"])
      expect(copied, needed).toContain(needed);
    const ignored = readFileSync(`${ROOT}.dockerignore`, "utf8").split("\n");
    expect(ignored).not.toContain("docs");
    expect(ignored).not.toContain("scripts");
  });

  it("runs on node:24-bookworm-slim with production dependencies only, dist/ and scenarios/", () => {
    expect(runtime[0]?.args).toMatch(/^node:24-bookworm-slim\b/);
    const runs = all(runtime, "RUN").map((i) => i.args);
    expect(runs.some((r) => /npm ci --omit=dev --ignore-scripts/.test(r))).toBe(true);
    const copies = all(runtime, "COPY").map((i) => i.args.split(/\s+/));
    expect(copies).toContainEqual(["--from=build", "/app/dist", "./dist"]);
    expect(copies).toContainEqual(["scenarios", "./scenarios"]);
  });

  it("runs as a non-root user, exposes 8080 and has no VOLUME", () => {
    const user = one(runtime, "USER").args;
    expect(user).not.toMatch(/^(root|0)(:|$)/);
    expect(user).toBe("node");
    expect(all(runtime, "EXPOSE").map((i) => i.args)).toEqual(["8080"]);
    expect(all(dockerfile, "VOLUME")).toEqual([]);
  });

  it("sets PORT=8080, HOST=0.0.0.0, SCENARIOS under its WORKDIR and NODE_ENV=production", () => {
    expect(workdir).toBe("/app");
    expect(imageEnv).toMatchObject({
      PORT: "8080",
      HOST: "0.0.0.0",
      SCENARIOS: "/app/scenarios",
      NODE_ENV: "production",
    });
  });

  it("limits the V8 heap so that the server fits a 512 MiB container, with room for what is not heap", () => {
    const limit = Number(/--max-old-space-size=(\d+)/.exec(imageEnv.NODE_OPTIONS ?? "")?.[1]);
    expect(limit).toBeGreaterThanOrEqual(256); // a full default journal and store fit
    expect(limit).toBeLessThanOrEqual(512 - 128);
  });

  it("starts the server with the same command as npm start", () => {
    const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")) as { scripts: Record<string, string> };
    expect(cmd).toEqual(["node", "dist/cli/main.js", "serve"]);
    expect(pkg.scripts.start?.split(/\s+/)).toEqual(cmd);
  });

  it("has a node HEALTHCHECK against /__admin/health that reads PORT", () => {
    expect(healthcheck.command[0]).toBe("node");
    const script = healthcheck.command.join(" ");
    expect(script).toContain("/__admin/health");
    expect(script).toContain("process.env.PORT");
    expect(healthcheck.options).toMatch(/--timeout=\d+s/);
  });

  it(".dockerignore keeps node_modules, dist, .git and coverage out of the build context", () => {
    const ignored = readFileSync(`${ROOT}.dockerignore`, "utf8")
      .split("\n")
      .map((l) => l.trim());
    expect(ignored).toEqual(expect.arrayContaining(["node_modules", "dist", ".git", "coverage"]));
  });
});

describe("the Dockerfile's CMD and HEALTHCHECK, run from the repository root", { timeout: 30_000 }, () => {
  it("CMD serves /__admin/health, and HEALTHCHECK passes against it and fails once it is gone", async () => {
    // The image's ENV, its WORKDIR mapped onto the repository root, with a free port on loopback.
    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries(imageEnv)) {
      env[key] =
        value === workdir || value.startsWith(`${workdir}/`) ? `${ROOT}${value.slice(workdir.length + 1)}` : value;
    }
    const argv = (command: string[]) => (command[0] === "node" ? [process.execPath, ...command.slice(1)] : command);

    const server = spawnCommand(argv(cmd), childEnv({ ...env, PORT: "0", HOST: "127.0.0.1" }));
    const [, url = ""] = await server.waitForOutput(LISTENING);
    const health = await http(`${url}/__admin/health`);
    expect(health.status).toBe(200);
    expect(health.json).toMatchObject({ status: "ok" });

    const port = new URL(url).port;
    const check = () => spawnCommand(argv(healthcheck.command), childEnv({ ...env, PORT: port })).waitForExit();
    expect(await check()).toEqual({ code: 0, signal: null });

    server.process.kill("SIGTERM");
    expect(await server.waitForExit()).toEqual({ code: 0, signal: null });
    expect((await check()).code).toBe(1);
  });
});
