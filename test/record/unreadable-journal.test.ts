import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllergyIntolerance, Bundle } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { createApp } from "../../src/app.js";
import { runCli } from "../../src/cli/main.js";
import { createSandbox, type Sandbox } from "../../src/sandbox.js";
import { example, messageBundle, STANDARD } from "../support/messages.js";

// Issue 21, defect 12: `replay` and `export` read a journal file whole or not at all. A line that is no recorded
// call (garbage, a piece of a call an earlier build split at its body's line breaks) fails them with the file and
// the line named; so does a file with nothing in it to replay or export. Never "0 calls replayed" with exit 0.
// And a journal written with awkward bodies (line breaks, U+2028, CRLF line ends) is read whole.

const opened: Sandbox[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), "unreadable-journal-"));
  dirs.push(dir);
  return dir;
}

function allergyWith(note: string): Bundle {
  const allergy = example<AllergyIntolerance>("allergyintolerance-example.json");
  return messageBundle("add-allergy", [{ ...allergy, note: [{ text: note }] } as AllergyIntolerance]);
}

/** Bodies as clients send them: pretty-printed, with a final newline, jq -Rs of a file, U+2028 raw in a string. */
const BODIES = [
  `${JSON.stringify({ content: JSON.stringify(allergyWith("pretty")) }, null, 2)}\n`,
  `${JSON.stringify({ content: `${JSON.stringify(allergyWith("from a file"), null, 2)}\n` }, null, 2)}\n`,
  JSON.stringify({ content: JSON.stringify(allergyWith("a\u2028b\u2029c")) }).replaceAll("\n", "\r\n"),
  JSON.stringify({ content: JSON.stringify(allergyWith("plain")) }),
];

/** The journal export (NDJSON) of a sandbox that was sent `bodies`, as lines. */
async function recordedLines(bodies: readonly string[] = BODIES): Promise<string[]> {
  const { app, close } = createApp();
  try {
    for (const body of bodies) {
      const res = await app.request(STANDARD, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      await res.arrayBuffer();
    }
    const text = await (await app.request("/__admin/calls/export")).text();
    return text.split("\n").filter(Boolean);
  } finally {
    close();
  }
}

/**
 * A call's line as builds before the fix wrote it: the request body's text pasted into the line, line breaks
 * and all.
 */
function oldStyleLine(line: string, rawBody: string): string {
  const call = JSON.parse(line) as { request: Record<string, unknown> };
  return JSON.stringify({ ...call, request: { ...call.request, body: "<BODY>" } }).replace('"<BODY>"', rawBody);
}

async function cli(args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(args, { out: (l) => out.push(l), err: (l) => err.push(l), env: {} });
  return { code, stdout: out.join("\n"), stderr: err.join("\n") };
}

async function target(): Promise<Sandbox> {
  const sandbox = await createSandbox();
  opened.push(sandbox);
  return sandbox;
}

describe("replay and export of a journal they cannot read whole", { timeout: 60_000 }, () => {
  it.each([
    ["a line that is no JSON", () => "this is not a call", "not JSON"],
    ["a JSON line that is no call", () => '{"hello": "world"}', 'no "direction"'],
    ["a blank-looking line of spaces and a brace", () => "   }", "not JSON"],
  ])("%s in the middle: exit 1 naming the file and the line, nothing sent", async (_name, bad, reason) => {
    const [first, second] = await recordedLines(BODIES.slice(3).concat(BODIES.slice(3)));
    const file = join(folder(), "calls.ndjson");
    writeFileSync(file, `${first}\n${bad()}\n${second}\n`);
    const sandbox = await target();

    const replayed = await cli(["replay", file, "--target", sandbox.url]);
    expect(replayed.code).toBe(1);
    expect(replayed.stderr).toContain(`${file}:2: not a recorded call (${reason}`);
    expect(replayed.stdout).not.toMatch(/calls replayed/);
    expect(sandbox.calls(), "the target was sent nothing").toEqual([]);

    const to = join(folder(), "scenario.yaml");
    const exported = await cli(["export", "--from", file, "--to", to]);
    expect(exported.code).toBe(1);
    expect(exported.stderr).toContain(`${file}:2: not a recorded call (${reason}`);
    expect(exported.stderr).not.toMatch(/rules from/);
  });

  it("a file written by a build that split calls at their bodies' line breaks: the first piece is named", async () => {
    const lines = await recordedLines();
    const file = join(folder(), "calls.ndjson");
    // Calls 1 and 2 as the old build wrote them (their bodies pretty-printed), call 4 whole.
    const old = [
      oldStyleLine(lines[0] as string, BODIES[0] as string),
      oldStyleLine(lines[1] as string, BODIES[1] as string),
    ];
    writeFileSync(file, `${lines[3]}\n${old.join("\n")}\n`);
    const sandbox = await target();
    const replayed = await cli(["replay", file, "--target", sandbox.url]);
    expect(replayed.code).toBe(1);
    expect(replayed.stderr).toContain(`${file}:2: not a recorded call (not JSON`);
    expect(replayed.stderr).toContain("split a call whose request body held line breaks");
    const exported = await cli(["export", "--from", file]);
    expect(exported.code).toBe(1);
    expect(exported.stderr).toContain(`${file}:2: not a recorded call (not JSON`);
    expect(exported.stdout).toBe("");
  });

  it.each([
    ["an empty file", ""],
    ["blank lines only", "\n\n  \n"],
  ])("%s: exit 1, no inbound calls", async (_name, text) => {
    const file = join(folder(), "calls.ndjson");
    writeFileSync(file, text);
    const sandbox = await target();
    const replayed = await cli(["replay", file, "--target", sandbox.url]);
    expect(replayed.code).toBe(1);
    expect(replayed.stderr).toContain(`${file} holds no inbound calls: nothing to replay`);
    expect(replayed.stdout).not.toContain("0 calls replayed");
    const to = join(folder(), "scenario.yaml");
    const exported = await cli(["export", "--from", file, "--to", to]);
    expect(exported.code).toBe(1);
    expect(exported.stderr).toContain(`${file} holds no inbound calls (0 calls in`);
    expect(exported.stderr).toContain("no scenario written");
  });

  it("a file of outbound calls only (pushes): nothing to replay, nothing to export", async () => {
    const [line] = await recordedLines(BODIES.slice(3));
    const file = join(folder(), "calls.ndjson");
    writeFileSync(file, `${JSON.stringify({ ...JSON.parse(line as string), direction: "outbound" })}\n`);
    const sandbox = await target();
    expect((await cli(["replay", file, "--target", sandbox.url])).code).toBe(1);
    const exported = await cli(["export", "--from", file]);
    expect(exported.code).toBe(1);
    expect(exported.stderr).toContain("holds no inbound calls (1 call in 1 line)");
  });
});

describe("replay and export of a journal written with awkward bodies", { timeout: 60_000 }, () => {
  it("read every call: line breaks, jq -Rs, U+2028 in bodies; CRLF line ends in the file", async () => {
    const lines = await recordedLines();
    const dir = folder();
    for (const [name, text] of [
      ["lf.ndjson", `${lines.join("\n")}\n`],
      ["crlf.ndjson", `${lines.join("\r\n")}\r\n`],
    ] as const) {
      const file = join(dir, name);
      writeFileSync(file, text);
      const sandbox = await target();
      const replayed = await cli(["replay", file, "--target", sandbox.url]);
      expect(replayed.stdout, replayed.stderr).toContain(`${BODIES.length} calls replayed: ${BODIES.length} same`);
      expect(replayed.code).toBe(0);
      const exported = await cli(["export", "--from", file]);
      expect(exported.code, exported.stderr).toBe(0);
      expect(exported.stderr).toContain(`from ${BODIES.length} of ${BODIES.length} inbound calls`);
      expect(parse(exported.stdout).rules.length).toBeGreaterThan(0);
    }
  });
});
