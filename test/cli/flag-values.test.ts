import { afterEach, describe, expect, it } from "vitest";
import { resolveServeConfig } from "../../src/cli/flags.js";
import { runCli } from "../../src/cli/main.js";
import { killStray, runToExit } from "./cli-process.js";

/**
 * README (Options): "A bad value stops the CLI with exit code 2 and a message
 * naming the flag or variable." URLs, sizes and durations are checked at
 * start, whether they come from a flag or from the environment.
 */

afterEach(killStray);

/** runCli in-process: a bad value ends it before anything listens. */
async function run(args: string[], env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(["serve", "--port", "0", "--host", "127.0.0.1", ...args], {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    env,
  });
  return { code, stdout: out.join("\n"), stderr: err.join("\n") };
}

/** Larger than the longest timer Node can set (2^31 - 1 ms, about 24.8 days). */
const OVER_TIMER_MAX = "1000000m";

describe("bad URLs, sizes and durations stop the CLI with exit code 2, naming the flag", () => {
  it.each([
    // URLs
    [["--proxy", "not-a-url"], {}, ["--proxy", "not-a-url", "http"]],
    [["--proxy", "ftp://upstream.example.ae"], {}, ["--proxy", "ftp://upstream.example.ae"]],
    [["--public-url", "not-a-url"], {}, ["--public-url", "not-a-url", "http"]],
    [["--public-url", "localhost:8080"], {}, ["--public-url", "localhost:8080"]],
    [[], { PROXY: "not-a-url" }, ["PROXY", "--proxy", "not-a-url"]],
    [[], { PUBLIC_URL: "file:///etc/passwd" }, ["PUBLIC_URL", "--public-url"]],
    // sizes
    [["--max-body", "0"], {}, ["--max-body", '"0"']],
    [["--max-body", "5gb"], {}, ["--max-body", "5gb"]],
    [["--max-body", "99999999999999999999"], {}, ["--max-body", "99999999999999999999"]],
    [[], { MAX_BODY: "-1" }, ["MAX_BODY", "--max-body"]],
    // durations
    [["--push-timeout", "0"], {}, ["--push-timeout", '"0"']],
    [["--push-timeout", "5 seconds"], {}, ["--push-timeout", "5 seconds"]],
    [["--confirm-deadline", "30d"], {}, ["--confirm-deadline", "30d"]],
    [["--confirm-deadline", OVER_TIMER_MAX], {}, ["--confirm-deadline", OVER_TIMER_MAX]],
    [["--push-timeout", OVER_TIMER_MAX], {}, ["--push-timeout", OVER_TIMER_MAX]],
    [[], { PUSH_TIMEOUT: "soon" }, ["PUSH_TIMEOUT", "--push-timeout", "soon"]],
    // header names
    [["--redact-header", "X-Ok,not a name"], {}, ["--redact-header", "not a name"]],
  ] as Array<[string[], Record<string, string>, string[]]>)("%j %j", async (args, env, named) => {
    const result = await run(args, env);
    expect(result.code, result.stderr).toBe(2);
    for (const text of named) expect(result.stderr).toContain(text);
    expect(result.stderr).toContain("--help");
    expect(result.stdout).not.toMatch(/listening on/);
  });

  // Budget: two CLI processes, 5.2 s in a serial run at a load average of 12 (2026-11-27).
  it("through the real CLI too: --proxy not-a-url and PUBLIC_URL=not-a-url exit 2 before listening", async () => {
    const flag = await runToExit(["serve", "--port", "0", "--proxy", "not-a-url"]);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toMatch(/--proxy "not-a-url": expected an http:\/\/ or https:\/\/ URL/);
    const env = await runToExit(["serve", "--port", "0"], { PUBLIC_URL: "not-a-url" });
    expect(env.code).toBe(2);
    expect(env.stderr).toMatch(/PUBLIC_URL "not-a-url" \(--public-url\): expected an http:\/\/ or https:\/\/ URL/);
    expect(`${flag.stdout}${env.stdout}`).not.toMatch(/listening on/);
  }, 20_000);
});

describe("the trigger command's URL", () => {
  it("from SANDBOX_URL: exit 2 naming the variable and --url", async () => {
    const err: string[] = [];
    const code = await runCli(["trigger", "order"], {
      out: () => undefined,
      err: (l) => err.push(l),
      env: { SANDBOX_URL: "not-a-url" },
    });
    expect(code).toBe(2);
    expect(err.join("\n")).toMatch(/SANDBOX_URL "not-a-url" \(--url\): expected an http:\/\/ or https:\/\/ URL/);
  });
});

describe("good values are taken", () => {
  it.each([
    [{ proxy: "https://staging.example.ae/fhir" }, { proxy: "https://staging.example.ae/fhir" }],
    [{ "public-url": "http://sandbox.example.ae:8080/" }, { publicUrl: "http://sandbox.example.ae:8080" }],
    [{ "max-body": "2mb" }, { maxBody: 2 * 1024 * 1024 }],
    [{ "confirm-deadline": "2m" }, { confirmDeadlineMs: 120_000 }],
    [{ "confirm-deadline": "35000m" }, { confirmDeadlineMs: 2_100_000_000 }],
  ] as Array<[Record<string, string>, Record<string, unknown>]>)("%j", (values, expected) => {
    expect(resolveServeConfig(values, {}).sandbox).toMatchObject(expected);
  });
});
