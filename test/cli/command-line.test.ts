import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { resolveServeConfig } from "../../src/cli/flags.js";
import { cli, http, killStray, ROOT, runToExit, startCli } from "./cli-process.js";

// Issue: "An unknown flag says which and suggests the nearest (--prot → --port); short forms for the common flags
// (-p, -h, -v); a port in use says so and suggests --port 0 or another port, exit code 1 before anything else is
// printed. Booleans in flags and environment variables accept what the docs say (1/0, true/false, yes/no, on/off)."

const dirs: string[] = [];
afterEach(async () => {
  await killStray();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("an unknown option is named, with the nearest known one", { timeout: 30_000 }, () => {
  it.each([
    [["--prot", "8080"], "unknown option --prot; did you mean --port?"],
    [["serve", "--scenario", "dir"], "unknown option --scenario; did you mean --scenarios?"],
    [["--no-wach"], "unknown option --no-wach; did you mean --no-watch?"],
    [["--colour"], "unknown option --colour"],
    [
      ["example", "add-allergy", "--patinet", "784-1990-1234567-6"],
      "unknown option --patinet; did you mean --patient?",
    ],
    [["trigger", "order", "--urll", "http://localhost:8080"], "unknown option --urll; did you mean --url?"],
  ])("%j: exit 2, %s", async (args, message) => {
    const run = await runToExit(args);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    const [first, second] = run.stderr.split("\n");
    expect(first).toBe(message);
    expect(second).toMatch(/^Run uae-fhir-sandbox .*--help for the options\.$/);
  });

  it("an unknown short option lists the short ones; a flag without its value says so", async () => {
    const short = await runToExit(["-x"]);
    expect(short.code).toBe(2);
    expect(short.stderr).toMatch(
      /^unknown option -x; the short options are .*-p \(--port\).*-h \(--help\).*-v \(--version\)/,
    );
    const missing = await runToExit(["--port"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^--port needs a value: --port <value>\n/);
  });
});

describe("short options", { timeout: 30_000 }, () => {
  it("-h is --help, -v is --version", async () => {
    const help = await runToExit(["-h"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^uae-fhir-sandbox .*\n\nUsage:/);
    expect(help.stdout).toMatch(/^ {2}-p, --port <value> /m);
    const { version } = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")) as { version: string };
    const v = await runToExit(["-v"]);
    expect(v).toMatchObject({ code: 0, stdout: `${version}\n` });
  });

  it("-p, -s and -q: the port, the scenarios folder, and no line per call", async () => {
    const dir = mkdtempSync(join(tmpdir(), "short-flags-"));
    dirs.push(dir);
    writeFileSync(
      join(dir, "rules.yaml"),
      "rules:\n  - name: any-allergy\n    when: { operation: add-allergy }\n    respond: { builtIn: true }\n",
    );
    const child = cli(["-p", "0", "--host", "127.0.0.1", "-s", dir, "-q"]);
    const [, url] = await child.waitForOutput(/listening on (http:\/\/[^\s"]+)/);
    const banner = JSON.parse(child.stdout.split("\n")[0] as string);
    expect(Number(new URL(url as string).port)).toBeGreaterThan(0);
    expect(banner.scenarios).toEqual({ source: dir, files: 1, rules: 1, watch: true });
    expect(banner.log.quiet).toBe(true);
    expect((await http(`${url}/uae-fhir/r4/metadata`)).status).toBe(200);
    child.process.kill("SIGTERM");
    expect(await child.waitForExit()).toEqual({ code: 0, signal: null });
    expect(child.stdout).not.toContain('"event":"call"');
  });
});

describe("a port in use", { timeout: 30_000 }, () => {
  it.each([["--port"], ["-p"]])("%s: exit 1 with what to do, and nothing printed before", async (flag) => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const { port } = taken.address() as { port: number };
    // A journal file whose last line a crash cut off: opening it warns, before the server tries to listen.
    const dir = mkdtempSync(join(tmpdir(), "port-in-use-"));
    dirs.push(dir);
    const journal = join(dir, "calls.ndjson");
    writeFileSync(journal, '{"id":"1","direction":"inbound"');
    try {
      const run = await runToExit(["serve", flag, String(port), "--host", "127.0.0.1", "--journal-file", journal]);
      expect(run.code).toBe(1);
      expect(run.stdout).toBe("");
      const [first, ...after] = run.stderr.split("\n");
      expect(first).toBe(
        `uae-fhir-sandbox could not start: port ${port} is already in use on 127.0.0.1: stop what is using it, or choose another port: --port ${port + 1}, or --port 0 for any free port`,
      );
      // What was said while starting comes after the failure, not before it.
      expect(after.join("\n")).toContain("cut-off");
    } finally {
      taken.close();
    }
  });
});

/** What the README says boolean variables take: true/false, 1/0, yes/no, on/off. */
const BOOLEAN_WORDS: ReadonlyArray<[text: string, value: boolean]> = [
  ["true", true],
  ["false", false],
  ["1", true],
  ["0", false],
  ["yes", true],
  ["no", false],
  ["on", true],
  ["off", false],
];

describe("booleans take every documented form", { timeout: 30_000 }, () => {
  it.each(BOOLEAN_WORDS)("WATCH=%s and --watch=%s", (text, value) => {
    expect(resolveServeConfig({}, { WATCH: text }).sandbox.watch).toBe(value);
    expect(resolveServeConfig({ watch: text }, {}).sandbox.watch).toBe(value);
    expect(resolveServeConfig({}, { LENIENT_ENVELOPE: text }).sandbox.lenientEnvelope).toBe(value);
  });

  it("the real CLI: WATCH=yes watches, --watch=no and --no-watch do not", async () => {
    const watched = await startCli([], { WATCH: "yes" });
    expect(JSON.parse(watched.child.stdout.split("\n")[0] as string).scenarios.watch).toBe(true);
    const flagged = await startCli(["--watch=no"]);
    expect(JSON.parse(flagged.child.stdout.split("\n")[0] as string).scenarios.watch).toBe(false);
    const negated = await startCli(["--no-watch"], { WATCH: "on" });
    expect(JSON.parse(negated.child.stdout.split("\n")[0] as string).scenarios.watch).toBe(false);
  });

  it("anything else is exit 2 naming the flag and the forms", async () => {
    const env = await runToExit(["serve", "--port", "0"], { WATCH: "maybe" });
    expect(env.code).toBe(2);
    expect(env.stderr).toContain('WATCH "maybe" (--watch): expected true or false (also 1/0, yes/no, on/off)');
    const flag = await runToExit(["serve", "--port", "0", "--quiet=perhaps"]);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain('--quiet "perhaps": expected true or false (also 1/0, yes/no, on/off)');
  });
});
