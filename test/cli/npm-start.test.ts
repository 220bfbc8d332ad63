import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Child, childEnv, http, LISTENING, ROOT } from "./cli-process.js";

// `npm start` starts: it builds only when dist/ was not built from the sources as they are (scripts/build-stamp.mjs),
// so a second start answers in about a second or two, not after a full build (a minute or more on a busy machine).

/** The process groups of `npm start` (npm, its shell, the server): stopped as a whole, as npm may not pass a signal on. */
const groups: ChildProcess[] = [];
afterEach(() => {
  for (const group of groups.splice(0)) {
    try {
      if (group.pid !== undefined) process.kill(-group.pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
});

/** The build's outputs a build would rewrite, and their modification times. */
const OUTPUTS = ["dist/.build-stamp", "dist/cli/main.js", "bundle/server.cjs"];
const mtimes = () => OUTPUTS.map((file) => `${file} ${statSync(join(ROOT, file)).mtimeMs}`);

/**
 * A start within this is no build: a build takes 30 s and more even on a quiet machine; a start takes about a second
 * (npm, the up-to-date check and the server's cold start), several on a machine whose load is many times its cores.
 */
const START_BUDGET_MS = 20_000;

describe("npm start when the build is current", { timeout: 60_000 }, () => {
  beforeAll(() => {
    const check = spawnSync(process.execPath, ["scripts/build-stamp.mjs", "check"], { cwd: ROOT, encoding: "utf8" });
    if (check.status !== 0) {
      throw new Error(`dist/ is not current (${check.stderr.trim()}): run npm run build first (npm test does)`);
    }
  });

  it("serves without building: the first answer within the budget, dist/ and bundle/ untouched", async () => {
    const before = mtimes();
    const started = performance.now();
    const npm = spawn(
      "npm",
      ["start", "--", "--port", "0", "--host", "127.0.0.1", "--no-watch", "--log-format", "pretty"],
      { cwd: ROOT, env: childEnv(), stdio: ["ignore", "pipe", "pipe"], detached: true },
    );
    groups.push(npm);
    const child = new Child(npm);
    const [, url] = await child.waitForOutput(LISTENING, START_BUDGET_MS);
    const health = await http(`${url}/__admin/health`);
    const elapsed = performance.now() - started;
    expect(health.status).toBe(200);
    expect(elapsed).toBeLessThan(START_BUDGET_MS);
    // No build ran: npm prints each script it runs, and build-stamp.mjs says why it builds.
    expect(child.stdout).not.toMatch(/> uae-fhir-sandbox@\S+ build/);
    expect(child.stderr).not.toMatch(/building first/);
    expect(mtimes()).toEqual(before);
    process.kill(-(npm.pid as number), "SIGTERM");
    await child.waitForExit();
  });
});

describe("scripts/build-stamp.mjs: builds when, and only when, the sources changed", { timeout: 120_000 }, () => {
  // A project of its own: the stamp script, a build that counts its runs, a source file and a page.
  const project = mkdtempSync(join(tmpdir(), "build-stamp-"));
  afterAll(() => rmSync(project, { recursive: true, force: true }));
  const builds = () => readFileSync(join(project, "builds.txt"), "utf8").split("\n").filter(Boolean).length;
  const start = () => {
    const run = spawnSync(process.execPath, ["scripts/build-stamp.mjs", "start"], {
      cwd: project,
      encoding: "utf8",
      env: childEnv(),
      timeout: 60_000,
    });
    return { code: run.status, stderr: run.stderr };
  };

  beforeAll(() => {
    mkdirSync(join(project, "scripts"));
    mkdirSync(join(project, "src"));
    mkdirSync(join(project, "docs"));
    copyFileSync(join(ROOT, "scripts/build-stamp.mjs"), join(project, "scripts/build-stamp.mjs"));
    writeFileSync(
      join(project, "scripts/fake-build.mjs"),
      [
        'import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";',
        'mkdirSync("dist/cli", { recursive: true });',
        'writeFileSync("dist/cli/main.js", "");',
        'appendFileSync("builds.txt", "built\\n");',
      ].join("\n"),
    );
    writeFileSync(
      join(project, "package.json"),
      JSON.stringify({
        name: "stamp-test",
        private: true,
        type: "module",
        scripts: {
          build:
            "node scripts/build-stamp.mjs begin && node scripts/fake-build.mjs && node scripts/build-stamp.mjs done",
        },
      }),
    );
    writeFileSync(join(project, "src/a.ts"), "export const a = 1;\n");
    writeFileSync(join(project, "builds.txt"), "");
  });

  it("a clean clone (no dist/) builds; a second start does not; an edit, a new page, a removed file each build again", () => {
    const first = start();
    expect(first.code).toBe(0);
    expect(first.stderr).toContain("dist/ is not built yet: building first");
    expect(builds()).toBe(1);

    const second = start();
    expect(second).toEqual({ code: 0, stderr: "" });
    expect(builds()).toBe(1);

    writeFileSync(join(project, "src/a.ts"), "export const a = 2; // edited\n");
    expect(start().stderr).toContain("the sources changed since the last build: building first");
    expect(builds()).toBe(2);
    expect(start()).toEqual({ code: 0, stderr: "" });

    writeFileSync(join(project, "docs/new-page.md"), "# New\n");
    start();
    expect(builds()).toBe(3);

    rmSync(join(project, "docs/new-page.md"));
    start();
    expect(builds()).toBe(4);
    expect(start()).toEqual({ code: 0, stderr: "" });
    expect(builds()).toBe(4);
  });

  it("a build that fails is not stamped: the next start builds again", () => {
    writeFileSync(join(project, "src/a.ts"), "export const a = 3; // edited again\n");
    const fail = join(project, "scripts/fake-build.mjs");
    const good = readFileSync(fail, "utf8");
    writeFileSync(fail, `${good}\nprocess.exit(1);\n`);
    expect(start().code).toBe(1);
    writeFileSync(fail, good);
    const retried = start();
    expect(retried.code).toBe(0);
    expect(retried.stderr).toContain("building first");
  });
});
