import type { Bundle } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { http, killStray } from "../cli/cli-process.js";
import {
  allergyMessage,
  genuineCall,
  NORMAL_MS,
  type SharedSandbox,
  startSharedSandbox,
  TEAMS,
  timed,
  untouched,
} from "./shared-sandbox.js";

// Budgets (issue 21, defects 1, 6, 7; CONTRACT §15): every parser and check linear in its input, every list in an
// answer capped. Each attack runs at the issue's size against the real CLI as a shared sandbox; it is refused or
// answered quickly, and team-b's call, journal and health are untouched and answer at their normal speed.

afterEach(killStray);

/** How long one attacking request may take on a loaded CI machine; the defects held the process seconds to minutes. */
const ATTACK_MS = 10_000;

/** `k0=&k1=&…`: distinct, empty-valued form keys, as long as `bytes`. */
function distinctKeys(bytes: number): string {
  const parts: string[] = [];
  let length = 0;
  for (let i = 0; length < bytes - 16; i++) {
    const part = `k${i}=`;
    parts.push(part);
    length += part.length + 1;
  }
  return parts.join("&");
}

async function withSandbox(attack: (sandbox: SharedSandbox) => Promise<void>): Promise<void> {
  const sandbox = await startSharedSandbox();
  try {
    const evidence = await genuineCall(sandbox, "team-b");
    await attack(sandbox);
    await untouched(sandbox, evidence);
  } finally {
    sandbox.stop();
  }
}

describe("budgets: one request never holds the sandbox (issue 21)", { timeout: 120_000 }, () => {
  it("an anonymous 1 MiB token form of distinct keys is refused invalid_request at once (it froze every team 132 s)", async () => {
    await withSandbox(async (sandbox) => {
      const body = distinctKeys(1024 * 1024 - 64);

      const { result, ms } = await timed(() =>
        http(`${sandbox.url}/oauth2/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: `grant_type=client_credentials&${body}`,
        }),
      );

      expect(result.status).toBe(400);
      expect(result.json).toMatchObject({ error: "invalid_request" });
      expect((result.json as { error_description: string }).error_description).toMatch(/at most 32/);
      expect(ms).toBeLessThan(NORMAL_MS);
    });
  });

  it("a Bundle of 100,000 `{}` entries: 100 issues and a count, its call and the export answer quickly", async () => {
    await withSandbox(async (sandbox) => {
      const bundle: Bundle = allergyMessage();
      // The allergy stays; 100,000 entries without a resource follow (one issue each): 100,000 issues.
      for (let i = 0; i < 100_000; i++) bundle.entry?.push({});

      const sent = await timed(() => sandbox.send("team-a", bundle));

      expect(sent.result.status).toBe(400);
      const issues = (sent.result.json as { issue: Array<{ code: string; diagnostics: string }> }).issue;
      expect(issues).toHaveLength(101);
      expect(issues.at(-1)?.code).toBe("too-costly");
      expect(issues.at(-1)?.diagnostics).toMatch(/^…and 99900 more issues not shown/);
      expect(sent.result.text.length).toBeLessThan(64 * 1024);
      expect(sent.ms).toBeLessThan(ATTACK_MS);

      // Team-a opening the call, then exporting its journal (it hung the server over 6 minutes).
      const admin = TEAMS["team-a"].admin;
      const id = sent.result.headers.get("x-sandbox-call-id");
      const call = await timed(() => sandbox.admin("team-a", `/calls/${id}`, admin));
      expect(call.result.status).toBe(200);
      expect((call.result.json as { issues: unknown[] }).issues).toHaveLength(101);
      expect(call.ms).toBeLessThan(ATTACK_MS);
      for (const format of ["ndjson", "scenario"]) {
        const exported = await timed(() => sandbox.admin("team-a", `/calls/export?format=${format}`, admin));
        expect(exported.result.status, format).toBe(200);
        expect(exported.ms, format).toBeLessThan(ATTACK_MS);
      }
    });
  });

  it("a team admin's scenario of 20,000 unknown keys is refused with 100 positions and a count (it froze every team 2 minutes)", async () => {
    await withSandbox(async (sandbox) => {
      const text = `rules: []\n${Array.from({ length: 20_000 }, (_, i) => `k${i}: 1`).join("\n")}\n`;

      const { result, ms } = await timed(() =>
        sandbox.admin("team-a", "/scenarios", TEAMS["team-a"].admin, {
          method: "POST",
          headers: { "content-type": "application/yaml" },
          body: text,
        }),
      );

      expect(result.status).toBe(400);
      const issues = (result.json as { issue: Array<{ diagnostics: string }> }).issue;
      expect(issues).toHaveLength(101);
      expect(issues[0]?.diagnostics).toMatch(/:2:1: unknown key "k0"$/);
      expect(issues.at(-1)?.diagnostics).toMatch(/^…and 19900 more issues not shown/);
      expect(ms).toBeLessThan(ATTACK_MS);
    });
  });
});
