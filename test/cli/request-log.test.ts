import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllergyIntolerance } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { envelope, example, messageBundle } from "../support/messages.js";
import { http, killStray, runToExit, startCli } from "./cli-process.js";

// The real CLI's request log and start banner. Off a terminal (as here: stdout is a pipe) the default is JSON, one
// object per line; --log-format pretty (or LOG_FORMAT) gives the lines for people.

const dirs: string[] = [];
afterEach(async () => {
  await killStray();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A scenarios folder of two files holding three rules. */
function scenarios(): string {
  const dir = mkdtempSync(join(tmpdir(), "banner-"));
  dirs.push(dir);
  const rule = (name: string) =>
    `  - name: ${name}\n    when: { operation: add-task }\n    respond: { builtIn: true }\n`;
  writeFileSync(join(dir, "10-one.yaml"), `rules:\n${rule("first")}${rule("second")}`);
  writeFileSync(join(dir, "20-two.yaml"), `rules:\n${rule("third")}`);
  return dir;
}

const addAllergy = () =>
  envelope(messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")]));

/** Everything the banner is asked to show, set to values the test can recognise. */
function bannerArgs(dir: string) {
  const journal = join(dir, "calls.ndjson");
  return {
    journal,
    args: [
      "--scenarios",
      dir,
      "--journal-file",
      journal,
      "--admin-token",
      "s3cret",
      "--public-url",
      "https://sandbox.example.ae",
      "--validation",
      "warn",
      "--base-path",
      "/sandbox",
      "--proxy",
      "http://127.0.0.1:9",
      "--cors",
      "http://localhost:3000",
      "--auth",
      "oauth2",
      "--clients",
      "docs/clients.example.yaml",
    ],
  };
}

describe("the start banner says what is on", { timeout: 30_000 }, () => {
  it("as JSON: one object, event listening", async () => {
    const dir = scenarios();
    const { journal, args } = bannerArgs(dir);
    const { url, child } = await startCli(args);
    const banner = JSON.parse(child.stdout.split("\n")[0] as string);
    expect(banner).toMatchObject({
      level: "info",
      event: "listening",
      url,
      msg: `uae-fhir-sandbox ${banner.version} listening on ${url}`,
      messages: [
        `POST ${url}/sandbox/uae-fhir/r4/$process-message (17 operations)`,
        `POST ${url}/sandbox/fhir/$process-message (remove-allergy)`,
      ],
      basePath: "/sandbox",
      scenarios: { source: dir, files: 2, rules: 3, watch: true },
      validation: "warn",
      emiratesIdCheck: "error",
      journal: { limit: 10000, file: journal },
      state: null,
      proxy: "http://127.0.0.1:9",
      admin: `${url}/__admin`,
      adminToken: true,
      auth: { tokenEndpoint: "https://sandbox.example.ae/oauth2/token", clients: "docs/clients.example.yaml" },
      publicUrl: "https://sandbox.example.ae",
      cors: { origins: ["http://localhost:3000"], admin: false },
      dashboard: `${url}/__admin/ui`,
      log: { format: "json", level: "info", quiet: false },
    });
    // The token itself is never printed.
    expect(child.stdout).not.toContain("s3cret");
  });

  it("for people: a block of labelled lines", async () => {
    const dir = scenarios();
    const { journal, args } = bannerArgs(dir);
    const { url, child } = await startCli([...args, "--log-format", "pretty"]);
    const banner = child.stdout.split("\n").slice(0, 16);
    expect(banner).toEqual([
      expect.stringMatching(new RegExp(`^uae-fhir-sandbox \\S+ listening on ${url}$`)),
      `  messages   POST ${url}/sandbox/uae-fhir/r4/$process-message (17 operations)`,
      `             POST ${url}/sandbox/fhir/$process-message (remove-allergy)`,
      "  base path  /sandbox",
      `  scenarios  ${dir}: 2 files, 3 rules, reloaded when they change`,
      "  validation warn (Emirates IDs: error)",
      `  journal    in memory, the last 10000 calls; appended to ${journal}`,
      "  state      in memory only (lost when the sandbox stops; --state-file keeps it)",
      "  proxy      http://127.0.0.1:9",
      `  admin API  ${url}/__admin (token on)`,
      "  auth       OAuth2: tokens from POST https://sandbox.example.ae/oauth2/token (clients: docs/clients.example.yaml)",
      "  public URL https://sandbox.example.ae",
      "  CORS       http://localhost:3000",
      `  dashboard  ${url}/__admin/ui`,
      expect.stringMatching(/^ {2}docs {7}\S/),
      "  log        pretty, level info",
    ]);
    expect(child.stdout).not.toContain("s3cret");
  });
});

describe("a line per call from the real CLI", { timeout: 30_000 }, () => {
  it("JSON by default off a terminal: every stdout line is an object; the call's names its journal id", async () => {
    const { url, child } = await startCli(["--no-watch"]);
    const reply = await http(`${url}/uae-fhir/r4/$process-message`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: addAllergy(),
    });
    expect(reply.status).toBe(200);
    const [line] = await child.waitForOutput(/^\{"level":"info".*"event":"call".*$/m);
    expect(JSON.parse(line)).toMatchObject({
      event: "call",
      callId: reply.headers.get("x-sandbox-call-id"),
      direction: "inbound",
      operation: "add-allergy",
      status: 200,
      responseCode: "ok",
      answeredBy: "built-in",
    });
    child.process.kill("SIGTERM");
    await child.waitForExit();
    for (const l of child.stdout.split("\n").filter(Boolean)) expect(() => JSON.parse(l), l).not.toThrow();
  });

  it("LOG_FORMAT=pretty: the line for people, without colours on a pipe", async () => {
    const { url, child } = await startCli(["--no-watch"], { LOG_FORMAT: "pretty" });
    const reply = await http(`${url}/uae-fhir/r4/$process-message`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: addAllergy(),
    });
    const id = reply.headers.get("x-sandbox-call-id");
    await child.waitForOutput(
      new RegExp(`^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} IN  add-allergy +200 ok +built-in +\\d+(\\.\\d)? ms #${id}$`, "m"),
    );
    expect(child.stdout).not.toContain("\u001b[");
  });
});

describe("--log-time and the changes made by hand, from the real CLI", { timeout: 30_000 }, () => {
  /** The pretty line of an add-allergy sent to this CLI, once it is printed. */
  async function allergyLine(url: string, child: Awaited<ReturnType<typeof startCli>>["child"], time: string) {
    const reply = await http(`${url}/uae-fhir/r4/$process-message`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: addAllergy(),
    });
    const id = reply.headers.get("x-sandbox-call-id");
    const [line] = await child.waitForOutput(
      new RegExp(`^${time} IN  add-allergy +200 ok +built-in +\\d+(\\.\\d)? ms #${id}$`, "m"),
    );
    return line;
  }

  // Dubai keeps +04:00 all year: the offset is known without asking the machine.
  it.each([
    ["--log-time iso", ["--log-time", "iso"], {}],
    ["LOG_TIME=iso", [], { LOG_TIME: "iso" }],
  ])("%s: ISO 8601 with the date and the offset", async (_, args, env) => {
    const before = Date.now();
    const { url, child } = await startCli(["--no-watch", "--log-format", "pretty", ...args], {
      TZ: "Asia/Dubai",
      ...env,
    });
    const line = await allergyLine(url, child, String.raw`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+04:00`);
    const instant = Date.parse(line.slice(0, 29));
    expect(instant).toBeGreaterThanOrEqual(before - 1);
    expect(instant).toBeLessThanOrEqual(Date.now());
  });

  it("by default the wall clock, as before", async () => {
    const { url, child } = await startCli(["--no-watch", "--log-format", "pretty"]);
    await allergyLine(url, child, String.raw`\d\d:\d\d:\d\d\.\d{3}`);
  });

  it("--log-time with another value is refused, naming the two", async () => {
    const exit = await runToExit(["serve", "--port", "0", "--log-time", "utc"]);
    expect(exit.code).toBe(2);
    expect(exit.stderr).toMatch(/--log-time "utc": expected one of clock, iso/);
  });

  it("--quiet: no line per call, but rules added and a reset are said", async () => {
    const { url, child } = await startCli(["--no-watch", "--quiet"]);
    const rules = await http(`${url}/__admin/scenarios`, {
      method: "POST",
      headers: { "content-type": "text/yaml" },
      body: "rules:\n  - name: one\n    when: { operation: add-task }\n    respond: { builtIn: true }\n",
    });
    expect(rules.status).toBe(201);
    const sent = await http(`${url}/uae-fhir/r4/$process-message`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: addAllergy(),
    });
    expect(sent.status).toBe(200);
    expect((await http(`${url}/__admin/reset`, { method: "POST" })).status).toBe(200);
    const [reset] = await child.waitForOutput(/^\{[^\n]*"event":"reset"[^\n]*$/m);
    expect(JSON.parse(reset)).toMatchObject({ level: "info", workspace: "default", calls: 1, runtimeRules: 1 });
    const events = child.stdout
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l).event);
    expect(events).toEqual(["listening", "rules-added", "reset"]);
  });
});
