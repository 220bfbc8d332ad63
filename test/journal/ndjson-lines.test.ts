import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllergyIntolerance, Bundle } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type SandboxApp } from "../../src/app.js";
import { SandboxEvents } from "../../src/events.js";
import type { CallDraft } from "../../src/journal/call-record.js";
import { Journal } from "../../src/journal/journal.js";
import { JournalFile } from "../../src/journal/journal-file.js";
import { example, messageBundle, STANDARD } from "../support/messages.js";

// Issue 21, defect 12: every NDJSON line the sandbox writes — the journal file, GET /__admin/calls?format=ndjson,
// GET /__admin/calls/export — is one JSON value on one line, whatever the bodies hold. The bodies below are the
// ordinary ones that broke it (pretty-printed JSON, a trailing newline, what the README's `jq -Rs '{content: .}'`
// makes), and the awkward ones (CRLF, U+2028/U+2029, lone surrogates, a 1 MB string, `</script>`). Each line is
// parsed back and each call's request body compared with what was sent.

const dirs: string[] = [];
const open: SandboxApp[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const MiB = 1024 * 1024;

/** An add-allergy message whose allergy carries `note` (any text) in a note. */
function allergyWith(note: string): Bundle {
  const allergy = example<AllergyIntolerance>("allergyintolerance-example.json");
  return messageBundle("add-allergy", [{ ...allergy, note: [{ text: note }] } as AllergyIntolerance]);
}

/** `jq -Rs '{content: .}' message.json` (README): the file's text, its newlines included, in "content"; jq's own output pretty-printed, with a final newline. */
const jqRs = (fileText: string) => `${JSON.stringify({ content: fileText }, null, 2)}\n`;

const pretty = (bundle: Bundle) => JSON.stringify(bundle, null, 2);

/** The bodies sent, by name: each as the text that crosses the wire. */
const BODIES: Array<[string, string]> = [
  ["a pretty-printed envelope", JSON.stringify({ content: JSON.stringify(allergyWith("pretty")) }, null, 2)],
  ["a compact envelope with a trailing newline", `${JSON.stringify({ content: JSON.stringify(allergyWith("nl")) })}\n`],
  ["jq -Rs of a pretty-printed message file", jqRs(`${pretty(allergyWith("from a file"))}\n`)],
  [
    "an envelope with CRLF line ends",
    JSON.stringify({ content: JSON.stringify(allergyWith("crlf")) }, null, 2).replaceAll("\n", "\r\n"),
  ],
  // JSON.stringify leaves U+2028 and U+2029 raw: they cross the wire raw, inside the content string.
  ["U+2028 and U+2029 raw in strings", JSON.stringify({ content: JSON.stringify(allergyWith("a\u2028b\u2029c")) })],
  // A lone surrogate cannot cross the wire raw (UTF-8 has none): it comes escaped, as JSON allows.
  ["escaped lone surrogates", `{\n "content": ${JSON.stringify(JSON.stringify(allergyWith("x\ud800y\udc00z")))}\n}`],
  [
    "a 1 MB string, pretty-printed",
    JSON.stringify({ content: JSON.stringify(allergyWith("m".repeat(1_000_000))) }, null, 1),
  ],
  [
    "a </script> in a string",
    JSON.stringify({ content: JSON.stringify(allergyWith("</script><script>alert(1)</script>")) }, null, 2),
  ],
  ["a body that is no JSON, with line breaks", "not json\r\nat all\n\u2028end"],
];

/** What the journal should show of a body: its JSON value, or the text when it is no JSON. */
function expectedBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Every line of NDJSON `bytes`: valid UTF-8, each line one JSON value, no raw line break of any reader in it. */
function ndjsonLines(bytes: Uint8Array, where: string): Array<Record<string, unknown>> {
  const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  expect(text.endsWith("\n"), `${where} ends with a newline`).toBe(true);
  return text
    .slice(0, -1)
    .split("\n")
    .map((line, i) => {
      expect(line, `${where}, line ${i + 1}: a raw CR, U+2028 or U+2029`).not.toMatch(/[\r\u2028\u2029]/);
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch (error) {
        throw new Error(`${where}, line ${i + 1} is not JSON (${(error as Error).message}): ${line.slice(0, 200)}`);
      }
    });
}

type Line = { id: string; request: { body: unknown }; response: { body: unknown } | null };

/** Checks every sent body comes back as its JSON value (or its text), in order, one call per line. */
function expectBodies(lines: Array<Record<string, unknown>>, where: string): void {
  expect(lines, `${where}: one line per call`).toHaveLength(BODIES.length);
  lines.forEach((line, i) => {
    const [name, sent] = BODIES[i] as [string, string];
    expect((line as Line).request.body, `${where}: ${name}`).toEqual(expectedBody(sent));
    expect((line as Line).response, `${where}: ${name} has its answer`).not.toBeNull();
  });
}

async function sandboxWithCalls(): Promise<{ sandbox: SandboxApp; file: string }> {
  const dir = mkdtempSync(join(tmpdir(), "ndjson-lines-"));
  dirs.push(dir);
  const file = join(dir, "calls.ndjson");
  const sandbox = createApp({ journalFile: file, maxBody: 8 * MiB }, { logger: { info: () => {}, error: () => {} } });
  open.push(sandbox);
  for (const [name, body] of BODIES) {
    const res = await sandbox.app.request(STANDARD, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    expect(res.headers.get("x-sandbox-call-id"), name).toBeTruthy();
    await res.arrayBuffer();
  }
  return { sandbox, file };
}

describe("NDJSON the sandbox writes: one JSON value a line, whatever the bodies hold", { timeout: 60_000 }, () => {
  it("the journal file, the in-memory NDJSON listing and the export endpoint", async () => {
    const { sandbox, file } = await sandboxWithCalls();

    expectBodies(ndjsonLines(readFileSync(file), "the journal file"), "the journal file");

    for (const path of ["/__admin/calls?format=ndjson&limit=1000", "/__admin/calls/export"]) {
      const res = await sandbox.app.request(path);
      expect(res.headers.get("content-type")).toContain("application/x-ndjson");
      expectBodies(ndjsonLines(new Uint8Array(await res.arrayBuffer()), path), path);
    }
    const summaries = await sandbox.app.request("/__admin/calls?format=ndjson&view=summary&limit=1000");
    expect(ndjsonLines(new Uint8Array(await summaries.arrayBuffer()), "view=summary")).toHaveLength(BODIES.length);

    // The JSON listing and a single call: the same values.
    const listing = (await (await sandbox.app.request("/__admin/calls?limit=1000")).json()) as { calls: Line[] };
    expect(listing.calls.map((c) => c.request.body)).toEqual(BODIES.map(([, sent]) => expectedBody(sent)));
    const first = listing.calls[0] as Line;
    const one = (await (await sandbox.app.request(`/__admin/calls/${first.id}`)).json()) as Line;
    expect(one.request.body).toEqual(expectedBody((BODIES[0] as [string, string])[1]));
  });

  it("calls that reach the journal with line breaks and lone surrogates anywhere: rule, header, error, bodies", () => {
    const dir = mkdtempSync(join(tmpdir(), "ndjson-lines-"));
    dirs.push(dir);
    const file = join(dir, "calls.ndjson");
    const events = new SandboxEvents();
    const journal = new Journal({ maxCalls: 100, maxBytes: 64 * MiB }, events);
    const journalFile = new JournalFile(file, {
      events,
      highestIdIssued: () => journal.highestIdIssued,
      warn: (m) => expect.fail(m),
    });
    const odd = "a\nb\rc\u2028d\u2029e\ud800f\udfffg</script>";
    const request = `{"t": ${JSON.stringify(odd)},\n "raw": "\u2028\ud800"}\n`;
    const response = `[\r\n  ${JSON.stringify(odd)}\r\n]`;
    const draft = (jsonBodies: boolean): CallDraft => ({
      direction: "outbound",
      at: new Date(0),
      durationMs: 1,
      operation: null,
      messageId: null,
      rule: odd,
      request: { method: "POST", url: "http://x/", path: "/", headers: { "x-odd": odd }, body: request },
      response: { status: 200, headers: {}, body: response },
      error: odd,
      ...(jsonBodies ? { jsonBodies: true as const } : {}),
    });
    // Bodies parsed again for the line, and bodies spliced in as they are (known to be JSON): the same line.
    events.emit("call:completed", draft(false));
    events.emit("call:completed", draft(true));
    journalFile.close();
    const lines = ndjsonLines(readFileSync(file), "the journal file");
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line).toMatchObject({ rule: odd, error: odd, request: { headers: { "x-odd": odd } } });
      expect((line as Line).request.body).toEqual(JSON.parse(request));
      expect((line as Line).response?.body).toEqual(JSON.parse(response));
    }
  });
});
