import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllergyIntolerance, Bundle, OperationOutcome, Patient } from "fhir/r4.js";
import type { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type SandboxApp, type SandboxDeps } from "../../src/app.js";
import type { SandboxOptions } from "../../src/config/options.js";
import { admin, listCalls } from "../admin/admin-client.js";
import { example, messageBundle, post, responseHeader } from "../support/messages.js";

const EID = "urn:ae:emirates-id";
const quiet: Partial<SandboxDeps> = { logger: { info: () => undefined, error: () => undefined } };

const dirs: string[] = [];
const open: SandboxApp[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const FOLDER_RULE = `
rules:
  - name: folder-rule
    when: { operation: add-allergy }
    respond: { status: 418, body: { from: folder } }
`;

/** A sandbox whose scenarios folder holds one file with this YAML (an empty folder for null). */
function sandbox(yaml: string | null = FOLDER_RULE, options: Partial<SandboxOptions> = {}) {
  const dir = mkdtempSync(join(tmpdir(), "runtime-rules-test-"));
  dirs.push(dir);
  if (yaml !== null) writeFileSync(join(dir, "folder.yaml"), yaml);
  const sandbox = createApp({ scenarios: dir, ...options }, quiet);
  open.push(sandbox);
  return sandbox;
}

const addAllergy = () =>
  messageBundle("add-allergy", [
    {
      ...example<AllergyIntolerance>("allergyintolerance-example.json"),
      patient: { identifier: { system: EID, value: "784-1980-1111111-3" } },
    } as AllergyIntolerance,
  ]);
const viewProfile = (value: string) =>
  messageBundle("view-patient-profile", [{ resourceType: "Patient", identifier: [{ system: EID, value }] } as Patient]);

const addScenario = (app: Hono, body: string, contentType: string, token?: string) =>
  admin(app, "POST", "/scenarios", {
    body,
    headers: { "content-type": contentType },
    ...(token === undefined ? {} : { token }),
  });

async function scenariosView(app: Hono, token?: string) {
  const reply = await admin(app, "GET", "/scenarios", token === undefined ? {} : { token });
  expect(reply.status).toBe(200);
  return reply.body as {
    files: Array<{ source: string; rules: number }>;
    rules: Array<{ id: string; name: string; source: string; matched: number; answered: number }>;
  };
}

const RUNTIME_YAML = `
rules:
  - name: runtime-rule
    when: { operation: add-allergy }
    respond: { status: 419, body: { from: runtime } }
`;

const RUNTIME_JSON = JSON.stringify({
  rules: [
    {
      name: "runtime-json-rule",
      when: { operation: "add-allergy", headers: { "X-Suite": "json" } },
      respond: { status: 420, body: { from: "json" } },
    },
  ],
});

describe("rules added at run time: POST /__admin/scenarios (CONTRACT §7, §9)", () => {
  it("takes a YAML document: 201, and the rule answers", async () => {
    const { app } = sandbox(null);
    const added = await addScenario(app, RUNTIME_YAML, "application/yaml");
    expect(added.status).toBe(201);
    expect(added.body).toEqual({ source: "runtime-1", rules: ["runtime-1#1"] });

    const reply = await post(app, addAllergy());
    expect(reply.status).toBe(419);
    expect(reply.body).toEqual({ from: "runtime" });
    expect((await listCalls(app)).map((c) => c.rule)).toEqual(["runtime-rule"]);
    const view = await scenariosView(app);
    expect(view.rules).toMatchObject([{ name: "runtime-rule", source: "runtime-1", matched: 1, answered: 1 }]);
    expect(view.files).toContainEqual(expect.objectContaining({ source: "runtime-1", rules: 1 }));
  });

  it("takes a JSON document: 201, and the rule answers", async () => {
    const { app } = sandbox(null);
    const added = await addScenario(app, RUNTIME_JSON, "application/json");
    expect(added.status).toBe(201);
    expect(added.body).toEqual({ source: "runtime-1", rules: ["runtime-1#1"] });

    const reply = await post(app, addAllergy(), { headers: { "X-Suite": "json" } });
    expect(reply.status).toBe(420);
    expect(reply.body).toEqual({ from: "json" });
    const plain = await post(app, addAllergy());
    expect(plain.status).toBe(200);
    expect(responseHeader(plain.body as Bundle).response?.code).toBe("ok");
  });

  it("runtime rules come before folder rules, in the order added; DELETE removes them all", async () => {
    const { app } = sandbox();
    expect((await post(app, addAllergy())).body).toEqual({ from: "folder" });

    expect((await addScenario(app, RUNTIME_YAML, "application/yaml")).status).toBe(201);
    expect((await addScenario(app, RUNTIME_YAML.replace("419", "421"), "application/yaml")).status).toBe(201);
    const answered = await post(app, addAllergy());
    expect(answered.status).toBe(419);
    expect((await scenariosView(app)).rules.map((r) => r.id)).toEqual(["runtime-1#1", "runtime-2#1", "folder.yaml#1"]);

    const removed = await admin(app, "DELETE", "/scenarios");
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ removed: 2 });
    expect((await scenariosView(app)).rules.map((r) => r.id)).toEqual(["folder.yaml#1"]);
    const back = await post(app, addAllergy());
    expect(back.status).toBe(418);
    expect(back.body).toEqual({ from: "folder" });
  });

  it("DELETE with no runtime rules removes nothing and leaves the folder's rules", async () => {
    const { app } = sandbox();
    const removed = await admin(app, "DELETE", "/scenarios");
    expect(removed.body).toEqual({ removed: 0 });
    expect((await post(app, addAllergy())).status).toBe(418);
  });

  it("runtime rules stay through POST /__admin/reset, their counters back to 0", async () => {
    const { app } = sandbox(null);
    await addScenario(app, RUNTIME_YAML.replace("when:", "times: 1\n    when:"), "application/yaml");
    expect((await post(app, addAllergy())).status).toBe(419);
    expect((await post(app, addAllergy())).status).toBe(200);
    await admin(app, "POST", "/reset");
    expect((await scenariosView(app)).rules).toMatchObject([{ name: "runtime-rule", matched: 0, answered: 0 }]);
    expect((await post(app, addAllergy())).status).toBe(419);
  });

  const INVALID: Array<[string, string, RegExp]> = [
    [
      "an unknown key",
      "rules:\n  - name: typo\n    respnd: { builtIn: true }\n",
      /^runtime-\d+:3:5: rules\.0: .*respnd/,
    ],
    ["a YAML syntax error", "rules: [ { name: x\n", /^runtime-\d+:\d+:\d+: /],
    [
      "a rule with both respond and sequence",
      "rules:\n  - respond: { builtIn: true }\n    sequence: [{ builtIn: true }]\n",
      /^runtime-\d+:2:5: rules\.0: a rule needs exactly one of respond or sequence/,
    ],
    [
      "an invalid FHIRPath (JSON)",
      JSON.stringify({ rules: [{ when: { fhirpath: "Bundle.entry[" }, respond: { builtIn: true } }] }),
      /^runtime-\d+:1:\d+: rules\.0\.when: fhirpath "Bundle\.entry\[" is not a valid FHIRPath expression/,
    ],
    [
      "an unknown template function",
      "rules:\n  - respond:\n      body: { a: '{{ shout() }}' }\n",
      /^runtime-\d+:3:18: rules\.0\.respond\.body\.a: .*unknown function shout\(\)/,
    ],
    [
      "a fixture record of the wrong type",
      "fixtures:\n  patients:\n    - patient: { resourceType: Patient, id: p-1 }\n      allergies: [{ resourceType: Observation }]\n",
      /^runtime-\d+:4:19: fixtures\.patients\.0\.allergies\.0: allergies holds AllergyIntolerance resources, not Observation/,
    ],
    ["not a mapping", "- just\n- a list\n", /^runtime-\d+:1:1: /],
  ];

  it.each(INVALID)(
    "refuses %s: 400 OperationOutcome with line:column, and nothing changes",
    async (_kind, text, diagnostics) => {
      const { app } = sandbox();
      const before = await scenariosView(app);

      const reply = await addScenario(app, text, "application/yaml");

      expect(reply.status).toBe(400);
      expect(reply.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
      const outcome = reply.body as OperationOutcome;
      expect(outcome.resourceType).toBe("OperationOutcome");
      expect(outcome.issue.length).toBeGreaterThan(0);
      expect(outcome.issue[0]).toMatchObject({ severity: "error", code: "invalid" });
      // Among the document's problems, in file order (a rule missing its respond comes before its misspelt key).
      expect(outcome.issue.map((i) => i.diagnostics)).toContainEqual(expect.stringMatching(diagnostics));
      const after = await scenariosView(app);
      expect(after.rules).toEqual(before.rules);
      expect(after.files).toEqual(before.files);
      expect((await post(app, addAllergy())).body).toEqual({ from: "folder" });
      expect((await admin(app, "GET", "/patients/p-1")).status).toBe(404);
    },
  );

  it("applies the fixtures of a posted document at once", async () => {
    const { app } = sandbox(null);
    const eid = "784-1971-4000001-5";
    const added = await addScenario(
      app,
      JSON.stringify({
        fixtures: {
          patients: [
            {
              patient: { resourceType: "Patient", id: "rt-huda", identifier: [{ system: EID, value: eid }] },
              allergies: [{ resourceType: "AllergyIntolerance", id: "rt-huda-sesame", code: { text: "Sesame" } }],
            },
          ],
          pharmacies: [{ licence: "PH-RT-0001", name: "Runtime Pharmacy" }],
        },
      }),
      "application/json",
    );
    expect(added.status).toBe(201);
    expect(added.body).toEqual({ source: "runtime-1", rules: [] });

    const state = await admin(app, "GET", `/patients/${encodeURIComponent(`${EID}|${eid}`)}`);
    expect(state.status).toBe(200);
    expect(state.body.patient.id).toBe("rt-huda");
    expect(state.body.records.map((r: { id: string }) => r.id)).toEqual(["rt-huda-sesame"]);
    const view = await post(app, viewProfile(eid));
    const ids = (view.body as Bundle).entry?.map((e) => e.resource?.id);
    expect(ids).toContain("rt-huda-sesame");
    const pharmacies = await admin(app, "GET", "/pharmacies");
    expect(pharmacies.body.pharmacies).toContainEqual(
      expect.objectContaining({ licence: "PH-RT-0001", name: "Runtime Pharmacy", source: "fixture" }),
    );
  });
});

describe("the admin token guards runtime rules (CONTRACT §9)", () => {
  const TOKEN = "s3cret-admin-token";

  it.each([
    ["no token", undefined],
    ["a wrong token", "wrong-token"],
  ])("with %s: 401 for POST, GET and DELETE /__admin/scenarios, and nothing is added", async (_kind, token) => {
    const { app } = sandbox(FOLDER_RULE, { adminToken: TOKEN });
    const auth = token === undefined ? {} : { token };

    const added = await addScenario(app, RUNTIME_YAML, "application/yaml", token);
    expect(added.status).toBe(401);
    expect(added.body).toMatchObject({ resourceType: "OperationOutcome", issue: [{ code: "login" }] });
    expect((await admin(app, "GET", "/scenarios", auth)).status).toBe(401);
    expect((await admin(app, "DELETE", "/scenarios", auth)).status).toBe(401);
    expect((await post(app, addAllergy())).status).toBe(418);
    expect((await scenariosView(app, TOKEN)).rules.map((r) => r.name)).toEqual(["folder-rule"]);
  });

  it("with the token: 201, the rule answers, and DELETE removes it", async () => {
    const { app } = sandbox(FOLDER_RULE, { adminToken: TOKEN });
    expect((await addScenario(app, RUNTIME_YAML, "application/yaml", TOKEN)).status).toBe(201);
    expect((await post(app, addAllergy())).status).toBe(419);
    expect((await admin(app, "DELETE", "/scenarios", { token: TOKEN })).body).toEqual({ removed: 1 });
    expect((await post(app, addAllergy())).status).toBe(418);
  });
});
