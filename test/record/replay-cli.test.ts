import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllergyIntolerance, Patient } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { runCli } from "../../src/cli/main.js";
import { replayCommand } from "../../src/cli/replay.js";
import { createSandbox, type Sandbox } from "../../src/sandbox.js";
import { example, messageBundle, post, STANDARD } from "../support/messages.js";

const opened: Sandbox[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const EID = "urn:ae:emirates-id";

/** Records add-allergy and view-patient-profile in-process and writes the journal export to a file. */
async function recordedFile(): Promise<string> {
  const { app } = createApp();
  const allergy = {
    ...example<AllergyIntolerance>("allergyintolerance-example.json"),
    patient: { identifier: { system: EID, value: "784-1990-1234567-6" } },
  } as AllergyIntolerance;
  const patient = { resourceType: "Patient", identifier: [{ system: EID, value: "784-1990-1234567-6" }] } as Patient;
  await post(app, messageBundle("add-allergy", [allergy]));
  await post(app, messageBundle("view-patient-profile", [patient]));
  const dir = mkdtempSync(join(tmpdir(), "replay-cli-"));
  dirs.push(dir);
  const file = join(dir, "calls.ndjson");
  writeFileSync(file, await (await app.request("/__admin/calls/export")).text());
  return file;
}

async function run(args: string[], progress?: (line: string) => void) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await replayCommand(args, { out: (l) => out.push(l), err: (l) => err.push(l), progress });
  return { code, stdout: out.join("\n"), stderr: err.join("\n") };
}

describe("uae-fhir-sandbox replay", { timeout: 30_000 }, () => {
  it.each([
    ["no file", [], "replay needs the recorded calls"],
    ["a missing file", ["/no/such/calls.ndjson", "--target", "http://127.0.0.1:1"], "no such file"],
    ["no --target", ["FILE"], "--target is required"],
    ["a target that is not a URL", ["FILE", "--target", "localhost:8080"], "expected an http:// or https:// URL"],
    ["a bad --header", ["FILE", "--target", "http://127.0.0.1:1", "--header", "nocolon"], '"Name: value"'],
    ["a bad --timeout", ["FILE", "--target", "http://127.0.0.1:1", "--timeout", "soon"], "a duration such as 10s"],
    ["an unknown option", ["FILE", "--target", "http://127.0.0.1:1", "--fast"], "unknown option --fast"],
  ])("exits 2 on %s", async (_name, args, message) => {
    const file = await recordedFile();
    const result = await run(args.map((a) => (a === "FILE" ? file : a)));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
    expect(result.stderr).toContain("replay --help");
  });

  it("prints its help through the main CLI", async () => {
    const out: string[] = [];
    const code = await runCli(["replay", "--help"], { out: (l) => out.push(l), err: () => undefined, env: {} });
    expect(code).toBe(0);
    expect(out.join("\n")).toContain("Not compared, because they legitimately change");
  });

  it("sends message paths under the target's --base-path, shows progress, and notes a cut-off last line", async () => {
    const file = await recordedFile();
    appendFileSync(file, '{"id":"3","direction":"inb');
    const target = await createSandbox({ basePath: "/sandbox" });
    opened.push(target);

    // Under the recorded path the target has nothing: every call differs.
    const lost = await run([file, "--target", target.url]);
    expect(lost.code).toBe(1);
    expect(lost.stdout).toMatch(/#1 {2}add-allergy +200 → 404 /);

    const progress: string[] = [];
    const result = await run([file, "--target", target.url, "--base-path", "/sandbox"], (l) => progress.push(l));
    expect(result.code, result.stdout).toBe(0);
    expect(result.stdout).toMatch(/#1 {2}add-allergy +200 → 200 {2}same/);
    expect(result.stdout).toMatch(/#2 {2}view-patient-profile +200 → 200 {2}same/);
    expect(result.stdout).toContain("2 calls replayed: 2 same, 0 different");
    expect(result.stderr).toContain(`${file}:3: the last line is cut off`);
    expect(progress).toEqual([
      "replaying call 1 (add-allergy) — 0 done, 0 different",
      "",
      "replaying call 2 (view-patient-profile) — 1 done, 0 different",
      "",
    ]);
    expect(target.calls().map((c) => c.request.path)).toEqual([
      STANDARD,
      STANDARD,
      `/sandbox${STANDARD}`,
      `/sandbox${STANDARD}`,
    ]);
  });

  it("reports a target that does not answer as a difference and exits 1", async () => {
    const file = await recordedFile();
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    await new Promise((resolve) => server.close(resolve));

    const result = await run([file, "--target", `http://127.0.0.1:${port}`, "--timeout", "5s"]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/#1 {2}add-allergy +200 → — {2}1 difference/);
    expect(result.stdout).toContain('answer: "HTTP 200" → "no answer (ECONNREFUSED)"');
    expect(result.stdout).toContain("2 calls replayed: 0 same, 2 different");
  });
});
