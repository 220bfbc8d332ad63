import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { loadScenarioFolder } from "../../src/scenarios/load.js";
import { quietLogger } from "../orders/pharmacy-client.js";
import { envelope, example, messageBundle, STANDARD } from "../support/messages.js";

// Issue 21 defect 11, CONTRACT §15: a rule answered `content-type: text/html` with a <script> in its body. A rule's
// Content-Type is limited to JSON and plain-text types unless the rule says `allowAnyContentType: true`.

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A scenario folder holding one file, 10-page.yaml. */
function folderWith(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), "content-type-"));
  dirs.push(dir);
  writeFileSync(join(dir, "10-page.yaml"), text);
  return dir;
}

const rule = (contentType: string, extra = "") => `rules:
  - name: page${extra}
    when: { operation: add-allergy }
    respond:
      status: 200
      headers:
        X-Other: fine
        Content-Type: "${contentType}"
      body: "<script>alert(document.domain)</script>"
`;

describe("a rule's Content-Type (CONTRACT §15)", () => {
  // Types a browser renders as a document or runs, written out here.
  it.each([
    "text/html",
    "text/html; charset=utf-8",
    "image/svg+xml",
    "application/xhtml+xml",
    "text/xml",
    "application/javascript",
    "{{ request.headers.x-type }}",
    "application/json, text/html",
  ])("%s: refused at load, at the header's file:line", (type) => {
    const load = loadScenarioFolder(folderWith(rule(type)));
    expect(load.ok).toBe(false);
    if (load.ok) return;
    expect(load.problems).toHaveLength(1);
    const [problem] = load.problems;
    // Line 8 of the file: `Content-Type: …` under respond.headers.
    expect(problem).toMatchObject({ file: "10-page.yaml", line: 8 });
    expect(problem?.message).toContain("allowAnyContentType: true");
    expect(problem?.message).toContain("application/fhir+json");
  });

  it.each([
    "application/json",
    "application/fhir+json; charset=utf-8",
    "application/problem+json",
    "text/plain",
    "TEXT/PLAIN; charset=UTF-8",
  ])("%s: loaded", (type) => {
    expect(loadScenarioFolder(folderWith(rule(type))).ok).toBe(true);
  });

  it("any type with the rule's explicit allowAnyContentType: true; the answer still carries nosniff, the CSP, and no raw <", async () => {
    const text = rule("text/html").replace("  - name: page\n", "  - name: page\n    allowAnyContentType: true\n");
    const dir = folderWith(text);
    expect(loadScenarioFolder(dir).ok).toBe(true);
    const { app } = createApp({ scenarios: dir, watch: false }, { logger: quietLogger });
    const res = await app.request(STANDARD, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: envelope(messageBundle("add-allergy", [example("allergyintolerance-example.json")])),
    });
    expect(res.headers.get("content-type")).toBe("text/html");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("content-security-policy")).toMatch(/^default-src 'none'/);
    const body = await res.text();
    expect(body).not.toContain("<");
    expect(JSON.parse(body)).toBe("<script>alert(document.domain)</script>");
  });

  it("a sequence's responses are checked each, and a rule added at run time is refused with its line (400)", async () => {
    const sequence = `rules:
  - name: seq
    when: { operation: add-allergy }
    sequence:
      - { status: 200, body: {} }
      - status: 200
        headers: { content-type: text/html }
        body: {}
`;
    const load = loadScenarioFolder(folderWith(sequence));
    expect(load.ok).toBe(false);
    if (!load.ok) expect(load.problems[0]).toMatchObject({ line: 7 });

    const { app } = createApp({ scenarios: "/nonexistent-scenarios-folder", watch: false }, { logger: quietLogger });
    const res = await app.request("/__admin/scenarios", {
      method: "POST",
      headers: { "content-type": "application/yaml" },
      body: sequence,
    });
    expect(res.status).toBe(400);
    const said = JSON.stringify(await res.json());
    expect(said).toMatch(/:7:\d+/);
    expect(said).toContain("text/html");
    const rules = (await (await app.request("/__admin/scenarios")).json()) as { rules: unknown[] };
    expect(rules.rules).toEqual([]);
  });
});
