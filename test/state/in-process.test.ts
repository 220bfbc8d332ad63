import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllergyIntolerance, Bundle, BundleEntry, Patient } from "fhir/r4.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { admin, listCalls } from "../admin/admin-client.js";
import { messageBundle, post } from "../support/messages.js";

// A sandbox in-process on a state file, closed, and another on the same file: what the first was told, the second
// knows (the real CLI, its signals and a crash are test/state's CLI tests).

const who = { system: "urn:ae:emirates-id", value: "784-1987-7777777-6" };

const allergyMessage = (text: string, id: string = crypto.randomUUID()): Bundle =>
  messageBundle(
    "add-allergy",
    [
      {
        resourceType: "AllergyIntolerance",
        clinicalStatus: {
          coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", code: "active" }],
        },
        code: { text },
        patient: { identifier: who },
      } as AllergyIntolerance,
    ],
    { id },
  );

type App = ReturnType<typeof createApp>;

/** The allergies of the test patient, by text, as view-patient-profile lists them. */
async function allergyTexts(app: App["app"]): Promise<string[]> {
  const view = await post(
    app,
    messageBundle("view-patient-profile", [{ resourceType: "Patient", identifier: [who] } as Patient]),
  );
  expect(view.status).toBe(200);
  return ((view.body as Bundle).entry ?? [])
    .filter((e: BundleEntry) => e.resource?.resourceType === "AllergyIntolerance")
    .map((e: BundleEntry) => (e.resource as AllergyIntolerance).code?.text ?? "")
    .sort();
}

// A rule that answers the first add-allergy only (times: 1): once its count is kept, the next one is the sandbox's.
const RULE = `
name: once
rules:
  - name: first allergy refused
    when: { operation: add-allergy }
    times: 1
    respond:
      status: 503
      outcome: { code: transient, diagnostics: "scripted once" }
`;

let dir: string;
let open: App[];
const start = (options: Record<string, unknown> = {}): App => {
  const app = createApp({ stateFile: join(dir, "state.db"), ...options });
  open.push(app);
  return app;
};
const stop = (app: App) => {
  app.close();
  open = open.filter((a) => a !== app);
};

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "sandbox-state-"));
  open = [];
});
afterEach(() => {
  for (const app of open) app.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("a sandbox on a state file starts where the last one stopped", () => {
  it("keeps records, the journal, runtime rules and their counts, and the duplicate memory", async () => {
    const first = start();
    expect(
      (await admin(first.app, "POST", "/scenarios", { body: RULE, headers: { "content-type": "application/yaml" } }))
        .status,
    ).toBe(201);
    expect((await post(first.app, allergyMessage("scripted"))).status).toBe(503);
    const kept = allergyMessage("sesame", "kept-1");
    expect((await post(first.app, kept)).status).toBe(200);
    expect((await post(first.app, allergyMessage("kiwi"))).status).toBe(200);
    // The resend first: rules meet it too (a match counted), so the counts read after it are the last ones.
    const original = await post(first.app, kept);
    const before = {
      allergies: await allergyTexts(first.app),
      calls: await listCalls(first.app),
      rules: (await admin(first.app, "GET", "/scenarios")).body.rules,
      original,
    };
    expect(before.allergies).toEqual(expect.arrayContaining(["kiwi", "sesame"]));
    stop(first);

    const second = start();
    // The journal as it was: the same ids, operations, statuses and bodies (the view call above is one of them).
    expect((await listCalls(second.app)).slice(0, before.calls.length)).toEqual(before.calls);
    expect(await allergyTexts(second.app)).toEqual(before.allergies);
    const rules = (await admin(second.app, "GET", "/scenarios")).body.rules;
    expect(rules).toEqual(before.rules);
    expect(rules.find((r: { name: string }) => r.name === "first allergy refused")).toMatchObject({ answered: 1 });
    // An exact resend gets the original answer; another content under the same id is refused.
    const resend = await post(second.app, kept);
    expect(resend.status).toBe(200);
    expect(resend.headers.get("x-sandbox-duplicate")).toBe("true");
    expect(resend.body).toEqual(before.original.body);
    expect((await post(second.app, allergyMessage("mustard", "kept-1"))).status).toBe(409);
    // Ids go on after the highest one handed out before.
    const highest = Math.max(...before.calls.map((c: { id: string }) => Number(c.id)));
    // The rule answered its one time before the restart: the sandbox answers this one.
    const next = await post(second.app, allergyMessage("peanut"));
    expect(next.status).toBe(200);
    expect(Number(next.headers.get("x-sandbox-call-id"))).toBeGreaterThan(highest);
  });

  it("explains a call read back from the file: its rule trace was not kept", async () => {
    const first = start();
    await post(first.app, allergyMessage("sesame"));
    const [call] = await listCalls(first.app);
    expect((await admin(first.app, "GET", `/calls/${call.id}`)).body.explanation.summary).not.toMatch(/state file/);
    stop(first);
    const second = start();
    const explained = await admin(second.app, "GET", `/calls/${call.id}`);
    expect(explained.status).toBe(200);
    expect(explained.body.explanation.summary).toMatch(/before the sandbox last restarted.*state file/);
  });

  it("forgets in the file what a reset or a journal clear forgets", async () => {
    const first = start();
    await post(first.app, allergyMessage("sesame"));
    expect((await admin(first.app, "POST", "/reset")).status).toBe(200);
    await post(first.app, allergyMessage("kiwi"));
    expect((await admin(first.app, "DELETE", "/calls")).status).toBe(200);
    stop(first);
    const second = start();
    expect(await listCalls(second.app)).toEqual([]);
    const allergies = await allergyTexts(second.app);
    expect(allergies).toContain("kiwi");
    expect(allergies).not.toContain("sesame");
  });

  it("keeps nothing of a message it could not write, and answers 503 transient", async () => {
    // Room for the empty schema (five 4 KiB pages) and little more: the first message's rows do not fit (SQLITE_FULL).
    const first = start({ maxStateFile: 24 * 1024 });
    const refused = await post(first.app, allergyMessage("sesame".repeat(2000), "too-big"));
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(refused.body.resourceType).toBe("OperationOutcome");
    expect(refused.body.issue[0].code).toBe("transient");
    expect(refused.body.issue[0].diagnostics).toContain(join(dir, "state.db"));
    const health = await admin(first.app, "GET", "/health");
    expect(health.body.stateFile).toMatchObject({ status: "failing", path: join(dir, "state.db") });
    expect(health.body.stateFile.lastError).toMatch(/full/i);
    // The patient the message named was met for the first time: not kept either.
    const patients = await admin(first.app, "GET", "/patients");
    expect(patients.status).toBe(200);
    expect(JSON.stringify(patients.body)).not.toContain(who.value);
  });
});
