import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { admin } from "../admin/admin-client.js";
import { example, messageBundle, post } from "../support/messages.js";

// One cap for every list of issues (CONTRACT §5, §15; issue 21): an OperationOutcome lists at most 100 issues and
// then one more, as severe as the worst left out, saying how many more there were. The sizes are the issue's: a
// 400 KB Bundle of 100,000 `{}` entries got 100,001 issues in a 19 MB answer, and showing that call in the journal
// (a FHIRPath evaluation per issue) held the server for minutes. Expected figures are counted by hand below.

const QUIET = { info: () => undefined, error: () => undefined };
const CAP = 100;

/** An add-allergy message whose entries after the MessageHeader are `n` empty objects. */
function emptyEntries(n: number) {
  const bundle = messageBundle("add-allergy", []);
  for (let i = 0; i < n; i++) bundle.entry?.push({});
  return bundle;
}

interface Issue {
  severity: string;
  code: string;
  diagnostics: string;
  expression?: string[];
}

/** The last issue of a capped list: the count it gives. */
function moreOf(issues: Issue[]): number {
  const said = /^…and (\d+) more issues? not shown/.exec(issues.at(-1)?.diagnostics ?? "");
  expect(said, issues.at(-1)?.diagnostics).not.toBeNull();
  return Number(said?.[1]);
}

describe("a message of 100,000 `{}` entries (issue 21)", () => {
  it("is refused with the first 100 issues and one counting the other 99,901; the journal shows it at once", {
    timeout: 60_000,
  }, async () => {
    const { app } = createApp({}, { logger: QUIET });
    // Each of the 100,000 entries has no resource (one issue each), and add-allergy's focus is missing (one more):
    // 100,001 issues, of which 100 are listed.
    const reply = await post(app, emptyEntries(100_000));

    expect(reply.status).toBe(400);
    const issues = reply.body.issue as Issue[];
    expect(issues).toHaveLength(CAP + 1);
    expect(issues.slice(0, CAP).map((i) => i.expression?.[0])).toEqual(
      Array.from({ length: CAP }, (_, i) => `Bundle.entry[${i + 1}]`),
    );
    expect(issues.at(-1)).toMatchObject({ severity: "error", code: "too-costly" });
    expect(issues.at(-1)?.expression).toBeUndefined();
    expect(moreOf(issues)).toBe(100_001 - CAP);
    expect(JSON.stringify(reply.body).length).toBeLessThan(64 * 1024);

    // The journal's view of the call: the same 101 issues, each of the 100 with the place it points at. The old
    // code evaluated FHIRPath over the 100,000 entries for each of 100,001 issues.
    const id = reply.headers.get("x-sandbox-call-id");
    const began = performance.now();
    const view = await admin(app, "GET", `/calls/${id}`);
    const ms = performance.now() - began;
    expect(view.status).toBe(200);
    const shown = view.body.issues as Array<Issue & { locations: unknown[] }>;
    expect(shown).toHaveLength(CAP + 1);
    expect(shown[0]?.locations).toEqual([["entry", 1]]);
    expect(shown[CAP - 1]?.locations).toEqual([["entry", CAP]]);
    expect(shown.at(-1)).toMatchObject({ severity: "error", code: "too-costly", locations: [] });
    expect(moreOf(shown)).toBe(100_001 - CAP);
    // Generous for a loaded machine; the old code took minutes.
    expect(ms).toBeLessThan(5_000);

    // Exports of such calls stay small and quick (they carried the 19 MB answer each).
    for (const format of ["ndjson", "scenario"]) {
      const start = performance.now();
      const exported = await app.request(`/__admin/calls/export?format=${format}`);
      const text = await exported.text();
      expect(exported.status, format).toBe(200);
      expect(performance.now() - start, format).toBeLessThan(5_000);
      expect(text.length, format).toBeLessThan(1024 * 1024);
    }
  });

  it("at exactly 100 issues nothing is added; at 101 the last issue counts 1 more", async () => {
    const { app } = createApp({}, { logger: QUIET });
    // n entries: n issues, plus the missing focus.
    const at = await post(app, emptyEntries(CAP - 1));
    const over = await post(app, emptyEntries(CAP));

    expect(at.body.issue).toHaveLength(CAP);
    expect((at.body.issue as Issue[]).some((i) => i.code === "too-costly")).toBe(false);
    expect(over.body.issue).toHaveLength(CAP + 1);
    expect((over.body.issue as Issue[]).at(-1)?.diagnostics).toMatch(/^…and 1 more issue not shown/);
  });
});

describe("the journal's issue view of an answer the sandbox did not build", () => {
  it("lists 100 issues of a scripted body of 150 and counts the rest, as severe as the worst left out", async () => {
    const { app } = createApp({}, { logger: QUIET });
    // 149 warnings, then one fatal issue (the 150th): the last line must not look milder than what it hides.
    const issue = [
      ...Array.from({ length: 149 }, (_, i) => ({
        severity: "warning",
        code: "informational",
        diagnostics: `w${i}`,
        expression: ["Bundle.entry.where(fullUrl.exists())"],
      })),
      { severity: "fatal", code: "exception", diagnostics: "f" },
    ];
    const rule = {
      rules: [
        {
          name: "many issues",
          when: { operation: "add-allergy" },
          respond: { status: 400, body: { resourceType: "OperationOutcome", issue } },
        },
      ],
    };
    expect((await admin(app, "POST", "/scenarios", { body: rule })).status).toBe(201);
    const reply = await post(app, messageBundle("add-allergy", [example("allergyintolerance-example.json")]));
    expect(reply.body.issue).toHaveLength(150);

    const view = await admin(app, "GET", `/calls/${reply.headers.get("x-sandbox-call-id")}`);

    const shown = view.body.issues as Array<Issue & { locations: unknown[] }>;
    expect(shown).toHaveLength(CAP + 1);
    expect(shown[0]).toMatchObject({ diagnostics: "w0", locations: [] });
    expect(shown.at(-1)).toMatchObject({ severity: "fatal", code: "too-costly" });
    expect(moreOf(shown)).toBe(50);
  });
});
