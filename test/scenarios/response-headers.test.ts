import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Patient } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { loadScenarioFolder } from "../../src/scenarios/load.js";
import { type RunningServer, startServer } from "../../src/server/start-server.js";
import { admin } from "../admin/admin-client.js";
import { envelope, example, messageBundle, STANDARD } from "../support/messages.js";

// A scripted answer's header that no answer can carry (a name that is no RFC 9110 token; a value with a line break,
// a control or a character beyond Latin-1) is refused when the rule loads, at its line: before, the rule loaded and
// every answer it gave was a 500 (served) or an exception (in-process) while the journal recorded a 200. A value a
// template renders beyond Latin-1 is known only per message: answered 500 alike in-process and served, no record.

const QUIET = { info: () => undefined, error: () => undefined };
const dirs: string[] = [];
const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function folderWith(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), "response-headers-"));
  dirs.push(dir);
  writeFileSync(join(dir, "10-headers.yaml"), text);
  return dir;
}

/** A rule whose one answer header is `name: value`, both written as YAML double-quoted strings; the header on line 7. */
const rule = (name: string, value: string) => `rules:
  - name: scripted
    when: { operation: view-patient-profile }
    respond:
      status: 200
      headers:
        ${JSON.stringify(name)}: ${JSON.stringify(value)}
      outcome: { diagnostics: scripted }
`;

const message = (id: string) =>
  envelope(messageBundle("view-patient-profile", [example<Patient>("patient-example.json")], { id }));

describe("a scripted answer's headers", () => {
  // [what, name, value, what the problem must say] — code points written out by hand.
  it.each([
    ["a name with a space", "X Bad", "v", '"X Bad" is not an HTTP header name'],
    ["a name with a colon", "X-Bad:", "v", '"X-Bad:" is not an HTTP header name'],
    ["an Arabic value", "X-Note", "حساسية", "U+062D at character 1"],
    ["a euro sign after text", "X-Money", "5 €", "U+20AC at character 3"],
    ["a line break", "X-Note", "one\ntwo", "U+000A at character 4"],
    ["a control character", "X-Note", "a\u0001", "U+0001 at character 2"],
    ["DEL", "X-Note", "a\u007f", "U+007F at character 2"],
  ])("%s: refused at load, at the header's line", (_, name, value, said) => {
    const load = loadScenarioFolder(folderWith(rule(name, value)));
    expect(load.ok).toBe(false);
    if (load.ok) return;
    expect(load.problems).toHaveLength(1);
    expect(load.problems[0]).toMatchObject({ file: "10-headers.yaml", line: 7 });
    expect(load.problems[0]?.message).toContain(said);
  });

  it.each([
    ["visible ASCII with spaces and a tab", "X-Note", "a b\tc ~!"],
    ["a Latin-1 letter", "X-Note", "café"],
    ["an encoded value", "X-Note", "UTF-8''%D8%AD"],
    ["a template", "X-Correlation-Id", "{{ request.messageId }}"],
  ])("%s: loaded", (_, name, value) => {
    expect(loadScenarioFolder(folderWith(rule(name, value))).ok).toBe(true);
  });

  it.each([
    ["a name with a space", "X Bad", "v", '"X Bad" is not an HTTP header name'],
    ["an Arabic value", "Authorization", "Bearer حساسية", "U+062D at character 8"],
    ["a line break", "X-Note", "one\ntwo", "U+000A at character 4"],
  ])("a pharmacy's push header with %s: refused at load, at its line", (_, name, value, said) => {
    const load = loadScenarioFolder(
      folderWith(`fixtures:
  pharmacies:
    - licence: PH-HEADERS-1
      endpoint: http://127.0.0.1:9/fhir
      headers:
        ${JSON.stringify(name)}: ${JSON.stringify(value)}
`),
    );
    expect(load.ok).toBe(false);
    if (load.ok) return;
    expect(load.problems).toHaveLength(1);
    expect(load.problems[0]).toMatchObject({ file: "10-headers.yaml", line: 6 });
    expect(load.problems[0]?.message).toContain(said);
  });

  it("a pharmacy's push headers of visible ASCII and Latin-1: loaded", () => {
    const load = loadScenarioFolder(
      folderWith(`fixtures:
  pharmacies:
    - licence: PH-HEADERS-2
      endpoint: http://127.0.0.1:9/fhir
      headers: { Authorization: "Bearer abc.def", X-Note: "café" }
`),
    );
    expect(load.ok).toBe(true);
  });

  it("added at run time: 400 naming the header, and the rules in force are unchanged", async () => {
    const sandbox = createApp({ watch: false }, { logger: QUIET });
    closers.push(() => sandbox.close());
    const before = await admin(sandbox.app, "GET", "/scenarios");
    const added = await admin(sandbox.app, "POST", "/scenarios", { body: rule("X-Note", "حساسية") });
    expect(added.status).toBe(400);
    expect(JSON.stringify(added.body)).toContain("U+062D");
    expect((await admin(sandbox.app, "GET", "/scenarios")).body).toEqual(before.body);
  });

  it("a value a template renders beyond Latin-1: 500 with an OperationOutcome in-process and served, no record", async () => {
    const dir = folderWith(`rules:
  - name: "حساسية"
    when: { operation: view-patient-profile }
    respond: { builtIn: true, headers: { X-Rule: "{{ rule.name }}" } }
`);
    const sandbox = createApp({ scenarios: dir, watch: false }, { logger: QUIET });
    const server: RunningServer = await startServer(sandbox, { port: 0, host: "127.0.0.1" });
    closers.push(
      () => sandbox.close(),
      () => server.close(500),
    );
    const init = (id: string) => ({
      method: "POST",
      headers: { "content-type": "application/json" },
      body: message(id),
    });
    for (const answer of [
      await sandbox.app.request(STANDARD, init("rendered-1")),
      await fetch(`${server.url}${STANDARD}`, init("rendered-2")),
    ]) {
      expect(answer.status).toBe(500);
      expect(answer.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
      expect(((await answer.json()) as { resourceType: string }).resourceType).toBe("OperationOutcome");
    }
    expect(sandbox.journal.list().filter((call) => call.response?.status === 200)).toEqual([]);
  });
});
