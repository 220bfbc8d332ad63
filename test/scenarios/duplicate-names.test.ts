import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type SandboxDeps } from "../../src/app.js";
import { admin } from "../admin/admin-client.js";
import { ROOT } from "../cli/cli-process.js";

// Two files giving one patient the same id were merged into one patient in silence; two rules of one name made
// the journal's `rule` ambiguous. Names that must be unique are checked across the files, naming both places.

const quiet: Partial<SandboxDeps> = { logger: { info: () => undefined, error: () => undefined } };
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("names given twice in the scenarios", () => {
  it("across a folder's files: the sandbox does not start, and says where both are", () => {
    const dir = mkdtempSync(join(tmpdir(), "duplicate-names-"));
    dirs.push(dir);
    cpSync(join(ROOT, "test/fixtures/scenarios/duplicates"), dir, { recursive: true });

    let error: unknown;
    try {
      createApp({ scenarios: dir }, quiet);
    } catch (e) {
      error = e;
    }
    const text = (error as Error).message;
    expect(text).toMatch(/20-second\.yaml:16:11: rule name "allergy-down" is already given at 10-first\.yaml:19:11/);
    expect(text).toMatch(
      /20-second\.yaml:7:13: fixture patient id "fixture-amina" is already given at 10-first\.yaml:7:13/,
    );
    expect(text).toMatch(
      /20-second\.yaml:10:15: fixture record "AllergyIntolerance\/amina-penicillin" is already given at 10-first\.yaml:12:15/,
    );
    expect(text).toMatch(
      /20-second\.yaml:14:16: pharmacy licence "PH-DXB-0001" is already given at 10-first\.yaml:16:16/,
    );
  });

  it("within one document added at run time: 400, nothing added; a folder rule's name may be reused on purpose", async () => {
    const { app, scenarios } = createApp({ scenarios: join(ROOT, "scenarios") }, quiet);
    const folderRule = scenarios.view().rules[0]?.name as string;
    const twice = `rules:\n  - name: busy\n    respond: { builtIn: true }\n  - name: busy\n    respond: { builtIn: true }\n`;

    const refused = await admin(app, "POST", "/scenarios", {
      body: twice,
      headers: { "content-type": "application/yaml" },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.issue[0].diagnostics).toMatch(
      /runtime-1:4:11: rule name "busy" is already given at runtime-1:2:11/,
    );

    const override = `rules:\n  - name: ${folderRule}\n    respond: { builtIn: true }\n`;
    const added = await admin(app, "POST", "/scenarios", {
      body: override,
      headers: { "content-type": "application/yaml" },
    });
    expect(added.status).toBe(201);
  });
});
