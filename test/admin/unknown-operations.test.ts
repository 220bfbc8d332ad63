import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllergyIntolerance } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type SandboxDeps } from "../../src/app.js";
import { createSandbox, type Sandbox } from "../../src/index.js";
import { CONTRACT_OPERATION_IDS } from "../support/contract-operations.js";
import { example, messageBundle, post } from "../support/messages.js";
import { admin } from "./admin-client.js";

// No false green: an operation id that names nothing is an error wherever it can be written, with the known ids
// and the nearest one — never a query that counts zero calls, or a rule that never fires.

const OPERATION_IDS = CONTRACT_OPERATION_IDS;
const RENAMED = "test/fixtures/operations/rename-add-allergy.yaml"; // add-allergy → AllergyIntolerance-Create, alias allergy-add

const quiet: Partial<SandboxDeps> = { logger: { info: () => undefined, error: () => undefined } };
const cashew = () => example<AllergyIntolerance>("allergyintolerance-example.json");

const dirs: string[] = [];
const open: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function folder(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "unknown-operations-"));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

/** Every known id listed, and the suggestion. */
function expectRefusal(text: string, misspelt: string, meant: string): void {
  expect(text).toContain(`unknown operation "${misspelt}"`);
  expect(text).toContain(`did you mean "${meant}"`);
  for (const id of OPERATION_IDS) expect(text).toContain(id);
}

const diagnostics = (body: { issue?: Array<{ diagnostics?: string }> }) =>
  (body.issue ?? []).map((i) => i.diagnostics).join("\n");

describe("admin queries refuse an unknown operation (400, OperationOutcome)", () => {
  it.each([
    ["POST /__admin/calls/verify", "/calls/verify"],
    ["POST /__admin/calls/wait", "/calls/wait"],
  ])("%s with operation remove-alergy", async (_name, path) => {
    const { app } = createApp();
    await post(app, messageBundle("add-allergy", [cashew()]));

    const reply = await admin(app, "POST", path, { body: { operation: "remove-alergy", count: 0, timeoutMs: 0 } });

    expect(reply.status).toBe(400);
    expect(reply.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    expect(reply.body.resourceType).toBe("OperationOutcome");
    expectRefusal(diagnostics(reply.body), "remove-alergy", "remove-allergy");
  });

  it("GET /__admin/calls?operation=add-alergy", async () => {
    const { app } = createApp();
    const reply = await admin(app, "GET", "/calls?operation=add-alergy");
    expect(reply.status).toBe(400);
    expectRefusal(diagnostics(reply.body), "add-alergy", "add-allergy");
  });

  it("pushes count as operations of outbound calls; an event code or alias counts as its operation", async () => {
    const { app } = createApp({ operationsFile: RENAMED });
    const sent = messageBundle("AllergyIntolerance-Create", [cashew()]);
    expect((await post(app, sent)).status).toBe(200);

    const push = await admin(app, "POST", "/calls/verify", {
      body: { operation: "order-fulfillment-request", direction: "outbound", count: 0 },
    });
    expect(push.body).toMatchObject({ ok: true, matched: 0 });
    for (const name of ["add-allergy", "AllergyIntolerance-Create", "allergy-add", "ADD-ALLERGY"]) {
      const reply = await admin(app, "POST", "/calls/verify", { body: { operation: name, count: 1 } });
      expect(reply.body, name).toMatchObject({ ok: true, matched: 1 });
      const listed = await admin(app, "GET", `/calls?operation=${name}`);
      expect(
        listed.body.calls.map((c: { operation: string }) => c.operation),
        name,
      ).toEqual(["add-allergy"]);
    }
  });
});

describe("scenario rules refuse an unknown operation", () => {
  const RULE = "rules:\n  - name: typo\n    when:\n      operation: add-alergy\n    respond: { builtIn: true }\n";

  it("at start: createApp throws with file:line:column and the suggestion", () => {
    const dir = folder({ "rules.yaml": RULE });
    let error: unknown;
    try {
      createApp({ scenarios: dir }, quiet);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(Error);
    const text = (error as Error).message;
    expect(text).toMatch(/rules\.yaml:4:18: .*unknown operation "add-alergy"; did you mean "add-allergy"\?/);
    expectRefusal(text, "add-alergy", "add-allergy");
  });

  it("in a list, each unknown one at its own position", () => {
    const dir = folder({
      "rules.yaml": "rules:\n  - when:\n      operation: [add-allergy, add-tsak]\n    respond: { builtIn: true }\n",
    });
    expect(() => createApp({ scenarios: dir }, quiet)).toThrow(
      /rules\.yaml:3:32: .*unknown operation "add-tsak"; did you mean "add-task"\?/,
    );
  });

  it("added at run time: POST /__admin/scenarios answers 400 and adds nothing", async () => {
    const { app, scenarios } = createApp();
    const reply = await admin(app, "POST", "/scenarios", {
      body: RULE,
      headers: { "content-type": "application/yaml" },
    });
    expect(reply.status).toBe(400);
    expectRefusal(diagnostics(reply.body), "add-alergy", "add-allergy");
    expect(scenarios.view().rules.filter((r) => r.source.startsWith("runtime"))).toEqual([]);
  });

  it("a renamed event code or an alias of an operations file names its operation", async () => {
    const dir = folder({
      "rules.yaml":
        "rules:\n  - name: by-code\n    when: { operation: AllergyIntolerance-Create }\n    respond: { status: 503, outcome: { diagnostics: down } }\n",
    });
    const sandbox = createApp({ scenarios: dir, operationsFile: RENAMED }, quiet);
    const reply = await post(sandbox.app, messageBundle("allergy-add", [cashew()]));
    expect(reply.status).toBe(503);
    expect(sandbox.journal.list()[0]).toMatchObject({ operation: "add-allergy", rule: "by-code" });
    sandbox.close();
  });
});

describe("createSandbox() refuses an unknown operation", () => {
  async function sandbox(): Promise<Sandbox> {
    const s = await createSandbox({ listen: false, deps: quiet });
    open.push(s);
    return s;
  }

  it("in addRules, verify, waitFor and calls", async () => {
    const s = await sandbox();
    expect(() => s.addRules({ rules: [{ when: { operation: "add-alergy" }, respond: { builtIn: true } }] })).toThrow(
      /unknown operation "add-alergy"; did you mean "add-allergy"\?/,
    );
    expect(() => s.verify({ operation: "remove-alergy", count: 0 })).toThrow(/did you mean "remove-allergy"/);
    await expect(s.waitFor({ operation: "add-tsak" }, 0)).rejects.toThrow(/did you mean "add-task"/);
    expect(() => s.calls({ operation: "view-patient-profil" })).toThrow(/did you mean "view-patient-profile"/);
    expect(s.verify({ operation: "Add-Allergy", count: 0 }).ok).toBe(true);
  });
});
