import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { loadClientsFile } from "../../src/auth/clients-file.js";
import { admin } from "../admin/admin-client.js";

// Scenario (and clients) YAML is checked in time linear in its size (issue 21, CONTRACT §15): 20,000 unknown
// top-level keys held the server about 2 minutes (5,000: 8.6 s), 5,000 keys in one fixture resource 3.7 s — the
// yaml library's unique-key check and the search for each unknown key's position were quadratic. Problems are
// capped as issues are: 100, then one counting the rest. Counts and positions below are worked out by hand.

const QUIET = { info: () => undefined, error: () => undefined };
const YAML = { "content-type": "application/yaml" };
/** Generous for a loaded machine; the old checks took minutes at these sizes. */
const QUICK_MS = 10_000;

/** `rules: []` and then `n` unknown keys k0…, one a line (line 2 holds k0). */
const unknownKeys = (n: number) => `rules: []\n${Array.from({ length: n }, (_, i) => `k${i}: 1`).join("\n")}\n`;

async function postScenario(body: string) {
  const { app } = createApp({}, { logger: QUIET });
  const began = performance.now();
  const reply = await admin(app, "POST", "/scenarios", { body, headers: YAML });
  return { reply, ms: performance.now() - began, app };
}

interface Issue {
  severity: string;
  code: string;
  diagnostics: string;
}

describe("POST /__admin/scenarios with 20,000 unknown top-level keys", () => {
  it("is refused with the first 100 unknown keys at their line and column, and a count of the other 19,900", {
    timeout: 60_000,
  }, async () => {
    const { reply, ms, app } = await postScenario(unknownKeys(20_000));

    expect(reply.status).toBe(400);
    const issues = reply.body.issue as Issue[];
    expect(issues).toHaveLength(101);
    expect(issues.slice(0, 100).map((i) => i.diagnostics)).toEqual(
      Array.from({ length: 100 }, (_, i) => `runtime-1:${i + 2}:1: unknown key "k${i}"`),
    );
    expect(issues.at(-1)).toMatchObject({ severity: "error", code: "too-costly" });
    expect(issues.at(-1)?.diagnostics).toMatch(/^…and 19900 more issues not shown/);
    expect(ms).toBeLessThan(QUICK_MS);
    // Nothing was added.
    expect((await admin(app, "GET", "/scenarios")).body.rules).toEqual([]);
  });

  it("a key given twice is found in one pass, at the second, naming the key", async () => {
    const text = `rules: []\n${Array.from({ length: 20_000 }, (_, i) => `k${i}: 1`).join("\n")}\nk7: 2\n`;
    const { reply, ms } = await postScenario(text);

    expect(reply.status).toBe(400);
    expect((reply.body.issue as Issue[]).map((i) => i.diagnostics)).toEqual([
      `runtime-1:20002:1: Map keys must be unique; "k7" is given twice`,
    ]);
    expect(ms).toBeLessThan(QUICK_MS);
  });
});

describe("a fixture resource of 20,000 keys (the issue's 5,000 took 3.7 s; quadratic, 20,000 a minute)", () => {
  it("is loaded quickly (keys of a resource are the resource's business)", { timeout: 60_000 }, async () => {
    const keys = Array.from({ length: 20_000 }, (_, i) => `        k${i}: ${i}`).join("\n");
    const text = `fixtures:\n  patients:\n    - patient:\n        resourceType: Patient\n        id: wide\n${keys}\n`;

    const { reply, ms } = await postScenario(text);

    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    expect(ms).toBeLessThan(QUICK_MS);
  });
});

describe("the clients file shares the checks", () => {
  const dir = mkdtempSync(join(tmpdir(), "yaml-budget-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("20,000 unknown keys: the first 100 at their place, and a count of the rest", () => {
    const file = join(dir, "clients.yaml");
    writeFileSync(
      file,
      `clients:\n  - { id: a, secret: s }\n${Array.from({ length: 20_000 }, (_, i) => `k${i}: 1`).join("\n")}\n`,
    );

    const began = performance.now();
    let said = "";
    try {
      loadClientsFile(file, ["patient-profile.read"]);
    } catch (error) {
      said = (error as Error).message;
    }
    const lines = said.split("\n");

    expect(performance.now() - began).toBeLessThan(QUICK_MS);
    expect(lines[0]).toBe("invalid clients file:");
    expect(lines[1]).toBe(`${file}:3:1: unknown key "k0"`);
    expect(lines[100]).toBe(`${file}:102:1: unknown key "k99"`);
    expect(lines[101]).toMatch(/^[^:]+: …and 19900 more problems not shown/);
    expect(lines).toHaveLength(102);
  });
});
