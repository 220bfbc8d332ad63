import { afterEach, describe, expect, it } from "vitest";
import { http, killStray } from "../cli/cli-process.js";
import { envelope, STANDARD } from "../support/messages.js";
import {
  allergyMessage,
  genuineCall,
  NORMAL_MS,
  startSharedSandbox,
  TEAMS,
  timed,
  untouched,
} from "./shared-sandbox.js";

// Issue 21, defect 5 (ReDoS): team-a's admin adds, at run time, a rule whose header pattern backtracks
// exponentially on V8's engine (`^(a+)+$`), then team-a's own client sends the header that triggers it (27 `a` and
// a `!` held the process 3.3 s, each further `a` doubling it; 40 would take hours), opens the call's explanation
// (which ran the pattern again) and asks verify for a FHIRPath `matches()` of the same pattern. User-written
// patterns now run on a linear-time engine: every answer comes at once, and team-b is not held up at all.

afterEach(killStray);

const EVIL = "^(a+)+$";
const evil = (n: number) => `${"a".repeat(n)}!`;
const json = { "content-type": "application/json" };

describe("hostile tenant: a rule whose pattern backtracks exponentially (ReDoS)", { timeout: 60_000 }, () => {
  it("team-a's evil pattern, header and verify answer at once; team-b is untouched", async () => {
    const sandbox = await startSharedSandbox();
    try {
      const evidence = await genuineCall(sandbox, "team-b");
      const { admin } = TEAMS["team-a"];

      const added = await sandbox.admin("team-a", "/scenarios", admin, {
        method: "POST",
        headers: { "content-type": "application/yaml" },
        body: `rules:\n  - name: evil\n    when:\n      operation: add-allergy\n      headers:\n        X-Evil: { matches: "${EVIL}" }\n    respond: { status: 418, body: { evil: true } }\n`,
      });
      expect(added.status, added.text).toBe(201);

      const token = await sandbox.token("team-a");
      for (const n of [27, 40]) {
        // The attack and team-b's ordinary traffic at the same time: team-b must not wait for team-a.
        const [attack, other] = await Promise.all([
          timed(() =>
            http(`${sandbox.url}/w/team-a${STANDARD}`, {
              method: "POST",
              headers: { ...json, authorization: `Bearer ${token}`, "x-evil": evil(n) },
              body: envelope(allergyMessage()),
            }),
          ),
          timed(() => genuineCall(sandbox, "team-b")),
        ]);
        expect(attack.result.status, attack.result.text).toBe(200); // no match: the built-in answer
        expect(attack.ms, `team-a's evil header of ${n + 1} characters`).toBeLessThan(NORMAL_MS);
        expect(other.ms, `team-b's call beside it`).toBeLessThan(NORMAL_MS);

        const id = attack.result.headers.get("x-sandbox-call-id");
        const explained = await timed(() => sandbox.admin("team-a", `/calls/${id}`, admin));
        expect(explained.result.status).toBe(200);
        expect(explained.ms, "the call's explanation").toBeLessThan(NORMAL_MS);
        expect(explained.result.json.explanation.rules[0]).toMatchObject({ rule: "evil", outcome: "not-matched" });

        const verified = await timed(() =>
          sandbox.admin("team-a", "/calls/verify", admin, {
            method: "POST",
            headers: json,
            body: JSON.stringify({ where: `'${evil(n)}'.matches('${EVIL}')` }),
          }),
        );
        expect(verified.result.status, verified.result.text).toBe(200);
        expect(verified.ms, "verify with FHIRPath matches()").toBeLessThan(NORMAL_MS);
      }

      // A pattern that needs backtracking is refused, and says why.
      const refused = await sandbox.admin("team-a", "/scenarios", admin, {
        method: "POST",
        headers: { "content-type": "application/yaml" },
        body: 'rules:\n  - when:\n      headers:\n        X-Pair: { matches: "^(a+)\\\\1$" }\n    respond: { status: 418, body: {} }\n',
      });
      expect(refused.status).toBe(400);
      expect(refused.json.resourceType).toBe("OperationOutcome");
      expect(refused.text).toMatch(/backreference/);

      await untouched(sandbox, evidence);
      // team-b has no rule of team-a's: its messages get the built-in answer.
      expect((await sandbox.admin("team-b", "/scenarios", TEAMS["team-b"].admin)).json.rules).not.toContainEqual(
        expect.objectContaining({ name: "evil" }),
      );
    } finally {
      sandbox.stop();
    }
  });
});
