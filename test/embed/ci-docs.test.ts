import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { parseDocument } from "yaml";
import { SERVE_FLAGS } from "../../src/cli/flags.js";
import { createSandbox } from "../../src/index.js";

// docs/ci.md is copied into people's CI configuration: its YAML must parse, its health checks must work against a
// real sandbox, and every environment variable it sets must be one the server reads.

const ROOT = new URL("../../", import.meta.url);
const DOC = readFileSync(new URL("docs/ci.md", ROOT), "utf8");
const DOCKERFILE = readFileSync(new URL("Dockerfile", ROOT), "utf8");
const run = promisify(execFile);

const ENV_NAMES = new Set(SERVE_FLAGS.map((f) => f.env));
const FLAG_OF_ENV = new Map(SERVE_FLAGS.map((f) => [f.env, f.name]));

// biome-ignore lint/suspicious/noExplicitAny: documents of any shape, narrowed by the assertions
type Doc = any;

const blocks = (lang: string) =>
  [...DOC.matchAll(new RegExp(`^\`\`\`${lang}\\n([\\s\\S]*?)^\`\`\`$`, "gm"))].map((m) => m[1] as string);

function parsed(): Doc[] {
  return blocks("yaml").map((text) => {
    const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: true });
    expect(
      [...doc.errors, ...doc.warnings].map((e) => e.message),
      text,
    ).toEqual([]);
    return doc.toJS();
  });
}

const workflow = () => parsed().find((d) => d?.jobs !== undefined);
const compose = () => parsed().find((d) => d?.services?.sandbox !== undefined);
const serviceOf = (w: Doc) => (Object.values(w.jobs) as Doc[]).find((job) => job.services?.sandbox)?.services.sandbox;

/** Runs a health command with the documented port 8080 swapped for the test sandbox's; its exit code. */
async function exitCode(file: string, args: string[]): Promise<number> {
  try {
    await run(file, args, { timeout: 15_000 });
    return 0;
  } catch (error) {
    return (error as { code?: number }).code ?? -1;
  }
}

describe("docs/ci.md", () => {
  it("has YAML examples, and every one parses", () => {
    const docs = parsed();
    expect(docs.length).toBeGreaterThanOrEqual(4);
    for (const d of docs) expect(d).toBeTypeOf("object");
  });

  it("has a GitHub Actions workflow with a sandbox service: image, port 8080, health check, env", () => {
    const w = workflow();
    expect(w).toBeDefined();
    const sandbox = serviceOf(w);
    expect(sandbox).toMatchObject({ image: expect.stringMatching(/uae-fhir-sandbox:/), ports: ["8080:8080"] });
    expect(sandbox.options).toMatch(/--health-cmd "[^"]+"/);
    expect(sandbox.options).toMatch(/--health-interval \d+s/);
    expect(Object.keys(sandbox.env).length).toBeGreaterThan(0);
    // The journal is read at the end whatever happened, and kept as an artifact.
    const steps = (Object.values(w.jobs) as Doc[]).flatMap((job) => job.steps ?? []);
    const exports = steps.find((s: Doc) => /\/__admin\/calls\/export/.test(s.run ?? ""));
    expect(exports?.if).toBe("always()");
    expect(steps.some((s: Doc) => String(s.uses).startsWith("actions/upload-artifact") && s.if === "always()")).toBe(
      true,
    );
    expect(steps.some((s: Doc) => /\/__admin\/calls\/verify/.test(s.run ?? "") && /jq -e '\.ok'/.test(s.run))).toBe(
      true,
    );
  });

  it("has a compose file whose sandbox has a health check the tests wait on (service_healthy)", () => {
    const c = compose();
    expect(c).toBeDefined();
    const { sandbox, ...others } = c.services;
    expect(sandbox.healthcheck).toMatchObject({
      test: ["CMD", "node", "-e", expect.stringContaining("/__admin/health")],
    });
    expect(sandbox.healthcheck.interval).toMatch(/^\d+s$/);
    const waiting = Object.values(others as Record<string, Doc>).filter(
      (s) => s.depends_on?.sandbox?.condition === "service_healthy",
    );
    expect(waiting).toHaveLength(1);
  });

  it("mounts scenarios read-only where the image loads them, and the journal file on a volume", () => {
    expect(DOCKERFILE).toMatch(/SCENARIOS=\/app\/scenarios/);
    expect(DOC).toContain('-v "$PWD/scenarios:/app/scenarios:ro"');
    const c = compose();
    expect(c.services.sandbox.volumes).toContain("./scenarios:/app/scenarios/project:ro");
    const journal = c.services.sandbox.environment.JOURNAL_FILE as string;
    expect(c.services.sandbox.volumes.some((v: string) => journal.startsWith(`${v.split(":")[1]}/`))).toBe(true);
  });

  it("sets only environment variables the server reads (SERVE_FLAGS), and names their flags right", () => {
    const used = new Set<string>([
      ...Object.keys(serviceOf(workflow()).env),
      ...Object.keys(compose().services.sandbox.environment),
      ...[...DOC.matchAll(/(?:^|\s)-e ([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1] as string),
      // The variables the text names for the container: "… an environment variable of the container: …" and the table.
      ...[...(/environment variable of the container: ([^…]*)…/.exec(DOC)?.[1] ?? "").matchAll(/`([A-Z_]+)`/g)].map(
        (m) => m[1] as string,
      ),
      ...[...(/^## The image\n([\s\S]*?)^## /m.exec(DOC)?.[1] ?? "").matchAll(/^\| `([A-Z][A-Z0-9_]+)` \|/gm)].map(
        (m) => m[1] as string,
      ),
    ]);
    expect(used.size).toBeGreaterThanOrEqual(6);
    expect([...used].filter((name) => !ENV_NAMES.has(name))).toEqual([]);

    const pairs = [...DOC.matchAll(/`([A-Z][A-Z0-9_]+)`\**\s\(`--([a-z-]+)`\)/g)];
    expect(pairs.length).toBeGreaterThan(0);
    for (const [, env, flag] of pairs) expect(FLAG_OF_ENV.get(env as string)).toBe(flag);
  });

  it("uses health checks that pass against a running sandbox and fail when it is gone", async () => {
    const workflowCmd = /--health-cmd "([^"]+)"/.exec(serviceOf(workflow()).options)?.[1] as string;
    const composeScript = compose().services.sandbox.healthcheck.test[3] as string;
    // The documented port is the image's.
    expect(DOCKERFILE).toMatch(/PORT=8080/);
    for (const check of [workflowCmd, composeScript]) expect(check).toContain("http://127.0.0.1:8080/__admin/health");

    const sandbox = await createSandbox({ deps: { logger: { info: () => undefined, error: () => undefined } } });
    const port = new URL(sandbox.url).port;
    // --health-cmd is a CMD-SHELL check: docker runs it with /bin/sh -c.
    const shell = () => exitCode("/bin/sh", ["-c", workflowCmd.replace(":8080/", `:${port}/`)]);
    const node = () => exitCode(process.execPath, ["-e", composeScript.replace(":8080/", `:${port}/`)]);
    try {
      expect(await shell()).toBe(0);
      expect(await node()).toBe(0);
    } finally {
      await sandbox.close();
    }
    expect(await shell()).toBe(1);
    expect(await node()).toBe(1);
  }, 30_000);
});
