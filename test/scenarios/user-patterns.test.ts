import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllergyIntolerance } from "fhir/r4.js";
import type { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type SandboxApp, type SandboxDeps } from "../../src/app.js";
import { admin } from "../admin/admin-client.js";
import { example, messageBundle, post } from "../support/messages.js";

// Issue 21, defect 5: a user-written pattern (a rule's `matches`, FHIRPath `matches()`/`replaceMatches()`) ran on
// the native backtracking engine: `^(a+)+$` against 27 `a` and a `!` held the process 3.3 s, doubling with each
// further `a`, and again whenever the call was explained. Patterns now run on a linear-time engine (RE2), and what
// it cannot run (backreferences, lookaround) is refused when the pattern is loaded.

const quiet: Partial<SandboxDeps> = { logger: { info: () => undefined, error: () => undefined } };
const EID = "urn:ae:emirates-id";
const EVIL = "^(a+)+$";
/** The issue's input (27) and a longer one: on a backtracking engine 40 would take hours. */
const SIZES = [27, 40];
const evilText = (n: number) => `${"a".repeat(n)}!`;
/** Far above what a linear engine takes here, far below the seconds a backtracking one did at 27. */
const FAST_MS = 1_000;

const open: SandboxApp[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function sandbox(options: Parameters<typeof createApp>[0] = {}): SandboxApp {
  const s = createApp({ watch: false, ...options }, quiet);
  open.push(s);
  return s;
}

/** An add-allergy whose note says `note`: text the sender chose, as an attacker would. */
const allergy = (note = "no note") =>
  messageBundle("add-allergy", [
    {
      ...example<AllergyIntolerance>("allergyintolerance-example.json"),
      patient: { identifier: { system: EID, value: "784-1990-1234567-6" } },
      note: [{ text: note }],
    } as AllergyIntolerance,
  ]);

const addRules = (app: Hono, yaml: string) =>
  admin(app, "POST", "/scenarios", { body: yaml, headers: { "content-type": "application/yaml" } });

async function timed<T>(run: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const start = performance.now();
  const value = await run();
  return { value, ms: performance.now() - start };
}

const diagnostics = (body: unknown) =>
  ((body as { issue?: Array<{ diagnostics?: string }> }).issue ?? []).map((i) => i.diagnostics ?? "").join("\n");

describe("a rule's header pattern runs in linear time", () => {
  it.each(SIZES)(
    "`matches: ^(a+)+$` against %i a's and a '!': answered, and explained, well under a second",
    async (n) => {
      const s = sandbox();
      const added = await addRules(
        s.app,
        `rules:\n  - name: evil\n    when:\n      operation: add-allergy\n      headers:\n        X-Evil: { matches: "${EVIL}" }\n    respond: { status: 418, body: { evil: true } }\n`,
      );
      expect(added.status).toBe(201);

      const sent = await timed(() => post(s.app, allergy(), { headers: { "x-evil": evilText(n) } }));
      expect(sent.value.status).toBe(200); // the rule does not match: the built-in behaviour answers
      expect(sent.ms).toBeLessThan(FAST_MS);

      const id = sent.value.headers.get("x-sandbox-call-id");
      const explained = await timed(() => admin(s.app, "GET", `/calls/${id}`));
      expect(explained.value.status).toBe(200);
      expect(explained.ms).toBeLessThan(FAST_MS);
      expect(explained.value.body.explanation.rules[0]).toMatchObject({
        rule: "evil",
        outcome: "not-matched",
        failed: `header X-Evil was "${evilText(n)}", expected to match /${EVIL}/`,
      });

      // The same pattern still matches what it always matched.
      const matching = await post(s.app, allergy(), { headers: { "x-evil": "a".repeat(n) } });
      expect(matching.status).toBe(418);
    },
  );
});

describe("FHIRPath matches() and replaceMatches() run in linear time", () => {
  const NOTE = "Bundle.entry.resource.ofType(AllergyIntolerance).note.text";

  it.each(SIZES)("verify and wait `where` with matches('^(a+)+$') over a note of %i a's and a '!'", async (n) => {
    const s = sandbox();
    expect((await post(s.app, allergy(evilText(n)))).status).toBe(200);

    const verified = await timed(() =>
      admin(s.app, "POST", "/calls/verify", { body: { where: `${NOTE}.matches('${EVIL}')` } }),
    );
    expect(verified.value.status).toBe(200);
    expect(verified.value.body).toMatchObject({ ok: false, matched: 0 });
    expect(verified.value.body.nearMisses[0].reasons).toEqual([
      `where ${JSON.stringify(`${NOTE}.matches('${EVIL}')`)} is false for the request Bundle`,
    ]);
    expect(verified.ms).toBeLessThan(FAST_MS);

    const waited = await timed(() =>
      admin(s.app, "POST", "/calls/wait", { body: { where: `${NOTE}.matches('${EVIL}')`, timeoutMs: 0 } }),
    );
    expect(waited.value.body).toMatchObject({ ok: false, matched: 0 });
    expect(waited.ms).toBeLessThan(FAST_MS);
  });

  it.each(SIZES)("a rule's fhirpath and a template's replaceMatches() over a note of %i a's and a '!'", async (n) => {
    const s = sandbox();
    const added = await addRules(
      s.app,
      [
        "rules:",
        "  - name: evil-fhirpath",
        "    when:",
        "      operation: add-allergy",
        `      fhirpath: "${NOTE}.matches('${EVIL}')"`,
        "    respond: { status: 418, body: { evil: true } }",
        "  - name: evil-template",
        "    when: { operation: add-allergy }",
        "    respond:",
        "      status: 202",
        `      body: { cleaned: "{{ fhirpath(\\"${NOTE}.replaceMatches('(a+)+$', 'X')\\") }}" }`,
      ].join("\n"),
    );
    expect(added.status).toBe(201);

    const sent = await timed(() => post(s.app, allergy(evilText(n))));
    expect(sent.ms).toBeLessThan(FAST_MS);
    // The first rule does not match; the second answers with the note unchanged (no run of a's ends the text).
    expect(sent.value.status).toBe(202);
    expect(sent.value.body).toEqual({ cleaned: evilText(n) });

    const explained = await timed(() => admin(s.app, "GET", `/calls/${sent.value.headers.get("x-sandbox-call-id")}`));
    expect(explained.ms).toBeLessThan(FAST_MS);
    expect(explained.value.body.explanation.answeredBy).toBe("evil-template");

    // Without the '!' the first rule matches, and the template replaces the run.
    expect((await post(s.app, allergy("a".repeat(n)))).status).toBe(418);
  });
});

describe("a pattern computed from a message is bounded in length", () => {
  it("a note of 8 KiB used as a pattern compiles; one of 9 KiB makes the condition fail with the reason", async () => {
    const s = sandbox();
    const NOTE = "Bundle.entry.resource.ofType(AllergyIntolerance).note.text";
    // A character class of any length is one RE2 instruction: only its length bounds what it holds in memory.
    const classOf = (chars: number) => `[${"a".repeat(chars - 2)}]`;
    expect((await post(s.app, allergy(classOf(8 * 1024)))).status).toBe(200);
    const fits = await admin(s.app, "POST", "/calls/verify", { body: { where: `'a'.matches(${NOTE})` } });
    expect(fits.body).toMatchObject({ ok: true, matched: 1 });

    await admin(s.app, "DELETE", "/calls");
    expect((await post(s.app, allergy(classOf(9 * 1024)))).status).toBe(200);
    const long = await admin(s.app, "POST", "/calls/verify", { body: { where: `'a'.matches(${NOTE})` } });
    expect(long.body).toMatchObject({ ok: false, matched: 0 });
    expect(long.body.nearMisses[0].reasons[0]).toMatch(/9216 characters long; at most 8192 are compiled/);
  });
});

describe("patterns the linear-time engine cannot run are refused at load", () => {
  it("a header pattern with a backreference, added at run time: 400 naming the place and the reason, nothing added", async () => {
    const s = sandbox();
    const reply = await addRules(
      s.app,
      'rules:\n  - name: repeated\n    when:\n      headers:\n        X-Pair: { matches: "^(ab)\\\\1$" }\n    respond: { status: 418, body: {} }\n',
    );

    expect(reply.status).toBe(400);
    expect(reply.body.resourceType).toBe("OperationOutcome");
    expect(diagnostics(reply.body)).toMatch(
      /^runtime-\d+:5:28: rules\.0\.when\.headers\.X-Pair\.matches: \/\^\(ab\)\\1\$\/ cannot be used: \\1 is a backreference .*linear-time engine \(RE2\)/,
    );
    expect((await admin(s.app, "GET", "/scenarios")).body.rules).toEqual([]);
  });

  it.each([
    [
      "a lookahead",
      "Bundle.id.matches('^(?=a)')",
      /matches\(\): the pattern \/\^\(\?=a\)\/ cannot be used: \(\?=…\) is a lookahead/,
    ],
    ["a lookbehind", "Bundle.id.matches('(?<!a)b')", /\(\?<!…\) is a lookbehind/],
    ["a named backreference", "Bundle.id.replaceMatches('(?<x>a)\\\\k<x>', 'b') = 'b'", /\\k<x> is a backreference/],
    ["flags fhirpath.js refuses too", "Bundle.id.matches('a', 'x')", /flags must only contain i and\/or m/],
  ])("a FHIRPath pattern with %s: verify answers 400", async (_, where, says) => {
    const s = sandbox();

    const reply = await admin(s.app, "POST", "/calls/verify", { body: { where } });

    expect(reply.status).toBe(400);
    expect(diagnostics(reply.body)).toMatch(says);
  });

  it("a scenario file with a backreference in a FHIRPath: the sandbox does not start, and says file:line:column (its `when`)", () => {
    const dir = mkdtempSync(join(tmpdir(), "user-patterns-test-"));
    dirs.push(dir);
    writeFileSync(
      join(dir, "pairs.yaml"),
      "rules:\n  - name: repeated\n    when:\n      fhirpath: \"Bundle.id.matches('(a)\\\\\\\\1')\"\n    respond: { status: 418, body: {} }\n",
    );

    expect(() => sandbox({ scenarios: dir })).toThrow(
      /pairs\.yaml:3:5: rules\.0\.when: fhirpath ".*" is not a valid FHIRPath expression: matches\(\): the pattern \/\(a\)\\1\/ cannot be used: \\1 is a backreference/,
    );
  });
});

describe("the patterns keep their meaning", () => {
  // The FHIRPath N1 specification's examples (and fhirpath.js 5.1's reading of them: `matches` is a partial match,
  // single-line mode; `replaceMatches` names groups as JavaScript does, `$<day>`).
  it.each([
    ["'http://fhir.org/guides/cqf/common/Library/FHIR-ModelInfo|4.0.1'.matches('Library')", true],
    ["'N8000123123'.matches('N[0-9]{8}')", true],
    ["'N8000123123'.matchesFull('N[0-9]{8}')", false],
    ["'N8000123123'.matchesFull('N[0-9]{10}')", true],
    ["'ABC'.matches('^abc$', 'i')", true],
    ["'line one\\nline two'.matches('one.line')", true],
    [
      "'11/30/1972'.replaceMatches('\\\\b(?<month>\\\\d{1,2})/(?<day>\\\\d{1,2})/(?<year>\\\\d{2,4})\\\\b', '$<day>-$<month>-$<year>') = '30-11-1972'",
      true,
    ],
    ["'abc'.replaceMatches('(b)', '[$1]') = 'a[b]c'", true],
  ])("%s is %s", async (where, expected) => {
    const s = sandbox();
    expect((await post(s.app, allergy())).status).toBe(200);

    const reply = await admin(s.app, "POST", "/calls/verify", { body: { where } });

    expect(reply.status).toBe(200);
    expect(reply.body.ok).toBe(expected);
  });

  it("a header pattern is not anchored and reads JavaScript's syntax (docs/scenarios.md)", async () => {
    const s = sandbox();
    const added = await addRules(
      s.app,
      [
        "rules:",
        "  - name: clinic",
        "    when:",
        "      operation: add-allergy",
        "      headers:",
        '        X-Clinic-Id: { matches: "DHA-(?<n>\\\\d{4})\\\\s" }',
        "    respond: { status: 418, body: {} }",
      ].join("\n"),
    );
    expect(added.status).toBe(201);

    expect((await post(s.app, allergy(), { headers: { "x-clinic-id": "id DHA-1234 x" } })).status).toBe(418);
    expect((await post(s.app, allergy(), { headers: { "x-clinic-id": "DHA-123 x" } })).status).toBe(200);
  });
});
