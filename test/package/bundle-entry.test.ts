import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childEnv, ROOT } from "../cli/cli-process.js";

// The image's command, bundle/uae-fhir-sandbox.mjs (scripts/bundle-entry.mjs), runs bundle/server.cjs with the V8
// code cache scripts/write-code-cache.mjs made. Each case runs a copy of bundle/ whose cache this node made here,
// so the build's own cache (made by whichever node built) does not matter. NODE_DEBUG=code-cache makes the entry say
// what it did with the cache; what the bundle serves is tested in test/cli/dockerfile.test.ts.

const exec = promisify(execFile);
const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")) as { version: string };
let dir = "";

/** Runs the entry with `args` from the repository root (its scenarios/), NODE_DEBUG=code-cache on top of `env`. */
async function entry(args: string[], env: Record<string, string> = {}) {
  const { stdout, stderr } = await exec(process.execPath, [join(dir, "uae-fhir-sandbox.mjs"), ...args], {
    cwd: ROOT,
    env: childEnv({ ...env, NODE_DEBUG: "code-cache" }),
    timeout: 20_000,
  });
  return { stdout: stdout.trim(), stderr };
}

describe("the bundle's entry and its code cache", { timeout: 60_000 }, () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "bundle-entry-"));
    cpSync(`${ROOT}bundle`, dir, { recursive: true });
    rmSync(join(dir, "server.code-cache"));
    await exec(process.execPath, [`${ROOT}scripts/write-code-cache.mjs`, dir], {
      cwd: ROOT,
      env: childEnv(),
      timeout: 40_000,
    });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("the training run writes the cache, and the entry runs server.cjs with it", async () => {
    expect(existsSync(join(dir, "server.code-cache"))).toBe(true);
    const { stdout, stderr } = await entry(["--version"]);
    expect(stdout).toBe(pkg.version);
    expect(stderr).toContain("cache used");
  });

  it("compiles without the cache when V8 refuses it (other V8 flags than the training run's)", async () => {
    // A flag V8 counts in every supported node (Node 24's V8 no longer counts the heap sizes).
    const { stdout, stderr } = await entry(["--version"], { NODE_OPTIONS: "--interpreted-frames-native-stack" });
    expect(stdout).toBe(pkg.version);
    expect(stderr).toContain("V8 refused the cache");
    expect(stderr).not.toContain("cache used");
  });

  it("does not use a cache made from other source of the same length, which V8 alone would take", async () => {
    // The version written into server.cjs, changed in its last digit: same length, other source.
    const server = join(dir, "server.cjs");
    const original = readFileSync(server, "utf8");
    const other = `${pkg.version.slice(0, -1)}${(Number(pkg.version.at(-1)) + 1) % 10}`;
    const changed = original.replace(JSON.stringify(pkg.version), JSON.stringify(other));
    expect(changed.length).toBe(original.length);
    expect(changed).not.toBe(original);
    writeFileSync(server, changed);
    try {
      const { stdout, stderr } = await entry(["--version"]);
      expect(stdout).toBe(other);
      expect(stderr).toContain("made from other source");
      expect(stderr).not.toContain("cache used");
    } finally {
      writeFileSync(server, original);
    }
  });

  it("runs without a cache file", async () => {
    const cache = join(dir, "server.code-cache");
    const kept = readFileSync(cache);
    rmSync(cache);
    try {
      const { stdout, stderr } = await entry(["--version"]);
      expect(stdout).toBe(pkg.version);
      expect(stderr).toContain("no cache");
    } finally {
      writeFileSync(cache, kept);
    }
  });
});
