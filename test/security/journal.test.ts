import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { http, killStray, runToExit } from "../cli/cli-process.js";
import { allergyMessage, genuineCall, startSharedSandbox, TEAMS, untouched } from "./shared-sandbox.js";

// Issue 21, defect 12 ("The journal as evidence"), black-box against the shared sandbox: team-a sends the bodies
// integrators send every day — the README's own `jq -Rs '{content: .}'` of its message files, pretty-printed JSON,
// a trailing newline, CRLF — and awkward ones (U+2028, `</script>`, a 1 MB string). Every line of the journal
// file and of team-a's export is one JSON value, each body comes back as sent, and team-b's evidence is untouched.

afterEach(killStray);

const README = readFileSync(fileURLToPath(new URL("../../README.md", import.meta.url)), "utf8");

/** The README's message files (`cat > add-allergy.json <<'EOF'`), as the shell writes them: with a final newline. */
const readmeFiles = [...README.matchAll(/cat > (\S+\.json) <<'EOF'\n([\s\S]*?)\nEOF\n/g)].map(
  (m) => [m[1] as string, `${m[2]}\n`] as const,
);

/** What `jq -Rs '{content: .}' file` prints: the file's text in "content", pretty-printed, with a final newline. */
const jqRs = (fileText: string) => `${JSON.stringify({ content: fileText }, null, 2)}\n`;

/** team-a's message with `note` in its allergy, as an envelope. */
const withNote = (note: string) => {
  const bundle = allergyMessage();
  const allergy = bundle.entry?.[1]?.resource as { note?: Array<{ text: string }> };
  allergy.note = [{ text: note }];
  return { content: JSON.stringify(bundle) };
};

/** What the journal should show of a body: its JSON value. */
const jsonValue = (text: string): unknown => JSON.parse(text);

/** Every line of `bytes`: valid UTF-8, one JSON value a line, no raw CR, U+2028 or U+2029. */
function ndjson(bytes: Uint8Array, where: string): Array<Record<string, unknown>> {
  const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  expect(text.endsWith("\n"), `${where} ends with a newline`).toBe(true);
  return text
    .slice(0, -1)
    .split("\n")
    .map((line, i) => {
      expect(line, `${where}:${i + 1} holds a raw line break`).not.toMatch(/[\r\u2028\u2029]/);
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch (error) {
        throw new Error(`${where}:${i + 1} is not JSON (${(error as Error).message}): ${line.slice(0, 120)}`);
      }
    });
}

type Call = { id: string; workspace: string; request: { body: unknown } };

describe("the journal as evidence: ordinary bodies with line breaks", { timeout: 120_000 }, () => {
  it("every line of the journal file and of the export is one call, each body as sent; team-b untouched", async () => {
    expect(readmeFiles.map(([name]) => name)).toEqual(["add-allergy.json", "view-profile.json"]);
    const sandbox = await startSharedSandbox();
    try {
      const evidence = await genuineCall(sandbox, "team-b");
      const token = await sandbox.token("team-a");
      // `uae-fhir-sandbox example add-allergy | curl --data-binary @-`: the envelope as the CLI prints it.
      const printed = await runToExit(["example", "add-allergy"]);
      expect(printed.code, printed.stderr).toBe(0);
      const bodies: string[] = [
        ...readmeFiles.map(([, text]) => jqRs(text)),
        printed.stdout,
        JSON.stringify(withNote("pretty"), null, 2),
        `${JSON.stringify(withNote("a trailing newline"))}\n`,
        JSON.stringify(withNote("crlf"), null, 2).replaceAll("\n", "\r\n"),
        JSON.stringify(withNote("line\u2028and paragraph\u2029separators")),
        JSON.stringify(withNote("</script><script>alert(document.domain)</script>"), null, 2),
        JSON.stringify(withNote("m".repeat(1_000_000)), null, 2),
      ];
      const ids: string[] = [];
      for (const body of bodies) {
        const reply = await http(`${sandbox.url}/uae-fhir/r4/$process-message`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
          body,
        });
        expect(reply.status, reply.text.slice(0, 300)).toBeLessThan(500);
        ids.push(reply.headers.get("x-sandbox-call-id") as string);
      }

      // The journal file: every line of both teams, then team-a's calls with their bodies as sent.
      const lines = ndjson(readFileSync(sandbox.journalFile), "the journal file") as Call[];
      const teamA = lines.filter((c) => c.workspace === "team-a" && ids.includes(c.id));
      expect(teamA.map((c) => c.id)).toEqual(ids);
      teamA.forEach((c, i) => {
        expect(c.request.body, `call ${c.id}`).toEqual(jsonValue(bodies[i] as string));
      });
      expect(lines.filter((c) => c.id === evidence.callId).map((c) => c.workspace)).toEqual(["team-b"]);

      // team-a's in-memory export: the same.
      const exported = await fetch(`${sandbox.url}/w/team-a/__admin/calls/export`, {
        headers: { authorization: `Bearer ${TEAMS["team-a"].admin}` },
      });
      expect(exported.status).toBe(200);
      const all = ndjson(new Uint8Array(await exported.arrayBuffer()), "team-a's export") as Call[];
      // Besides the messages, team-a's journal holds its token request.
      const calls = all.filter((c) => ids.includes(c.id));
      expect(calls.map((c) => c.id)).toEqual(ids);
      calls.forEach((c, i) => {
        expect(c.request.body, `exported call ${c.id}`).toEqual(jsonValue(bodies[i] as string));
      });

      await untouched(sandbox, evidence);
    } finally {
      sandbox.stop();
    }
  });
});
