import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, posix } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { SERVE_FLAGS } from "../../src/cli/flags.js";
import { childEnv, killStray, ROOT, startCli } from "../cli/cli-process.js";
import { imageName } from "./package-files.js";

// The release automation: the GitHub workflows (checked by a workflow linter from the npm registry), the commands
// they run (each one the README or package.json also has) and docker-compose.yml.

const run = promisify(execFile);
afterEach(killStray);

// biome-ignore lint/suspicious/noExplicitAny: workflow and compose documents of any shape, narrowed by the assertions
type Doc = any;

const WORKFLOWS = `${ROOT}.github/workflows/`;
const workflowFiles = readdirSync(WORKFLOWS).filter((f) => f.endsWith(".yml"));
const workflow = (file: string): Doc => parse(readFileSync(`${WORKFLOWS}${file}`, "utf8"));
const steps = (w: Doc): Doc[] => Object.values(w.jobs as Record<string, Doc>).flatMap((job) => job.steps ?? []);
const README = readFileSync(`${ROOT}README.md`, "utf8");
const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")) as { scripts: Record<string, string> };

/** Runs action-validator on a file: its exit code and output. */
async function lint(file: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [`${ROOT}node_modules/@action-validator/cli/cli.mjs`, file]);
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, output: stdout + stderr };
  }
}

describe("the GitHub workflows", () => {
  it("are ci.yml and release.yml, and each passes action-validator", async () => {
    expect(workflowFiles.sort()).toEqual(["ci.yml", "release.yml"]);
    for (const file of workflowFiles) {
      const result = await lint(`${WORKFLOWS}${file}`);
      expect(result, file).toMatchObject({ code: 0 });
    }
  });

  it("action-validator rejects a workflow with a misspelt key (the check can fail)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "workflow-lint-"));
    try {
      const broken = readFileSync(`${WORKFLOWS}ci.yml`, "utf8").replace("runs-on:", "run-on:");
      writeFileSync(join(dir, "ci.yml"), broken);
      const result = await lint(join(dir, "ci.yml"));
      expect(result.code).toBe(1);
      expect(result.output).toContain("run-on");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("run only commands that the README or package.json's scripts also have", () => {
    const commands = workflowFiles.flatMap((file) =>
      steps(workflow(file))
        .filter((s) => typeof s.run === "string")
        .flatMap((s) => (s.run as string).split("\n").map((line) => line.trim()))
        .filter((line) => line !== "" && !line.startsWith("#"))
        .map((command) => ({ file, command })),
    );
    expect(commands.length).toBeGreaterThanOrEqual(5);
    const script = (command: string) => /^npm (?:run )?([\w:-]+)$/.exec(command)?.[1];
    const unknown = commands.filter(({ command }) => {
      const name = script(command);
      return !README.includes(command) && !(name !== undefined && name in pkg.scripts);
    });
    expect(unknown).toEqual([]);
  });

  it("ci.yml runs the README's test command on Node 22.13 (the oldest supported) and 24", () => {
    const ci = workflow("ci.yml");
    expect(ci.on).toMatchObject({ pull_request: null, push: { branches: ["main"] } });
    expect(ci.jobs.test.strategy.matrix.node).toEqual(["22.13.0", "24"]);
    const setup = ci.jobs.test.steps.find((s: Doc) => String(s.uses).startsWith("actions/setup-node@"));
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a GitHub Actions expression
    expect(setup.with["node-version"]).toBe("${{ matrix.node }}");
    expect(ci.jobs.test.steps.map((s: Doc) => s.run).filter(Boolean)).toEqual(["npm ci && npm test"]);
    expect(ci.jobs.image.steps.map((s: Doc) => s.run).filter(Boolean)).toEqual(["bash scripts/verify-image.sh"]);
  });

  it("release.yml, on a version tag: tests, a multi-arch image with SBOM and provenance, npm publish --provenance", () => {
    const release = workflow("release.yml");
    expect(release.on).toEqual({ push: { tags: ["v*.*.*"] } });
    const { test, image, npm } = release.jobs;
    expect(test.steps.map((s: Doc) => s.run).filter(Boolean)).toContain("npm ci && npm test");
    expect(image.needs).toBe("test");
    expect(npm.needs).toBe("test");

    const uses = (job: Doc, action: string) => job.steps.find((s: Doc) => String(s.uses).startsWith(`${action}@`));
    expect(uses(image, "docker/setup-qemu-action")).toBeDefined();
    expect(uses(image, "docker/setup-buildx-action")).toBeDefined();
    expect(uses(image, "docker/login-action").with.registry).toBe("ghcr.io");
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a GitHub Actions expression
    expect(uses(image, "docker/metadata-action").with.images).toBe("ghcr.io/${{ github.repository }}");
    expect(uses(image, "docker/build-push-action").with).toMatchObject({
      platforms: "linux/amd64,linux/arm64",
      push: true,
      sbom: true,
      provenance: "mode=max",
    });
    expect(image.permissions).toMatchObject({ packages: "write" });

    expect(npm.permissions).toMatchObject({ "id-token": "write" });
    expect(uses(npm, "actions/setup-node").with["registry-url"]).toBe("https://registry.npmjs.org");
    expect(npm.steps.map((s: Doc) => s.run).filter(Boolean)).toEqual([
      "npm ci",
      "npm publish --provenance --access public",
    ]);
  });
});

describe("docker-compose.yml", { timeout: 30_000 }, () => {
  const compose = parse(readFileSync(`${ROOT}docker-compose.yml`, "utf8")) as Doc;
  const { sandbox, "system-under-test": sut } = compose.services;

  it("runs the released image (the one the README names), or builds it from the Dockerfile", () => {
    expect(sandbox.image).toBe(`${imageName()}:\${SANDBOX_VERSION:-latest}`);
    expect(README).toContain(`docker pull ${imageName()}:latest`);
    // docs/ci.md's examples pull the published image too.
    const ciImages = [...readFileSync(`${ROOT}docs/ci.md`, "utf8").matchAll(/^\s*(?:image: )?(ghcr\.io\/\S+?):/gm)];
    expect(ciImages.map((m) => m[1])).toContain(imageName());
    expect(sandbox.build).toBe(".");
    expect(sandbox.ports).toEqual(["8080:8080"]);
    const known = new Set(SERVE_FLAGS.map((f) => f.env));
    expect(Object.keys(sandbox.environment).filter((name) => !known.has(name))).toEqual([]);
  });

  it("keeps the sandbox's state on a named volume: STATE_FILE in the folder a top-level volume is mounted on", () => {
    const folder = posix.dirname(sandbox.environment.STATE_FILE as string);
    const mounts = (sandbox.volumes as string[]).map((v) => v.split(":"));
    const [volume] = mounts.find(([, target]) => target === folder) ?? [];
    expect(volume, `a volume mounted on ${folder}`).toBeDefined();
    // A name, not a host path: `docker compose down` keeps it, `down -v` deletes it (the README says so).
    expect(Object.keys(compose.volumes ?? {})).toContain(volume);
    expect(README).toContain("docker compose down -v");
  });

  it("starts the system under test once the sandbox is healthy, pointed at it by SANDBOX_URL", () => {
    expect(sut.depends_on).toEqual({ sandbox: { condition: "service_healthy" } });
    expect(sut.environment.SANDBOX_URL).toBe("http://sandbox:8080");
  });

  it("has a health check that passes against a running sandbox and fails without one", async () => {
    const [kind, command, ...args] = sandbox.healthcheck.test as string[];
    expect([kind, command]).toEqual(["CMD", "node"]);
    const { child, url } = await startCli(["--no-watch"]);
    // The documented port 8080 swapped for the test sandbox's.
    const onPort = (port: string) => args.map((a) => a.replace(":8080/", `:${port}/`));
    const check = async (port: string) => {
      try {
        await run(process.execPath, onPort(port), { env: childEnv(), timeout: 15_000 });
        return 0;
      } catch (error) {
        return (error as { code?: number }).code ?? -1;
      }
    };
    const port = new URL(url).port;
    expect(await check(port)).toBe(0);
    child.process.kill("SIGTERM");
    await child.waitForExit();
    expect(await check(port)).toBe(1);
  });
});
