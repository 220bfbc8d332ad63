import { fileURLToPath } from "node:url";
import type { AllergyIntolerance, Bundle, Patient } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { admin } from "../admin/admin-client.js";
import { EMIRATES_ID_SYSTEM, emiratesId } from "../support/emirates-id.js";
import { example, focusOf, messageBundle, post, responseHeader } from "../support/messages.js";

// The store's limits (--max-patients, --max-records-per-patient): expected
// values are counted by hand from the messages each test sends.

const SCENARIOS = fileURLToPath(new URL("../../scenarios/", import.meta.url));
const QUIET = { info: () => undefined, error: () => undefined };

const patient = (serial: number): Patient => ({
  resourceType: "Patient",
  identifier: [{ system: EMIRATES_ID_SYSTEM, value: emiratesId(1980, serial) }],
});
const keyOf = (serial: number) => encodeURIComponent(`${EMIRATES_ID_SYSTEM}|${emiratesId(1980, serial)}`);

/** An allergy for the patient with this serial, as a logical reference (no Patient entry needed). */
const allergyFor = (serial: number): AllergyIntolerance => ({
  ...example<AllergyIntolerance>("allergyintolerance-example.json"),
  id: undefined,
  patient: { identifier: { system: EMIRATES_ID_SYSTEM, value: emiratesId(1980, serial) } },
});

type App = ReturnType<typeof createApp>["app"];
const view = (app: App, serial: number) => post(app, messageBundle("view-patient-profile", [patient(serial)]));
const known = async (app: App, serial: number) => (await admin(app, "GET", `/patients/${keyOf(serial)}`)).status;

describe("the store keeps at most --max-patients patients, the least recently used forgotten first", () => {
  it("forgets the least recently used patient, a use counting as recent", async () => {
    const { app } = createApp({ maxPatients: 2 }, { logger: QUIET });
    await view(app, 1);
    await view(app, 2);
    await view(app, 1); // 1 is now more recent than 2
    await view(app, 3); // over the limit: 2 goes

    expect([await known(app, 1), await known(app, 2), await known(app, 3)]).toEqual([200, 404, 200]);
    const health = await admin(app, "GET", "/health");
    expect(health.body.store).toMatchObject({
      patients: 2,
      pinnedPatients: 0,
      evictedPatients: 1,
      limits: { patients: 2, recordsPerPatient: 50 },
    });
  });

  it("generates a forgotten patient's profile again, the same as before, on its next message", async () => {
    const { app } = createApp({ maxPatients: 1 }, { logger: QUIET });
    const first = await view(app, 1);
    await view(app, 2); // 1 forgotten
    expect(await known(app, 1)).toBe(404);

    const again = await view(app, 1);

    const entries = (reply: { body: Bundle }) =>
      (reply.body.entry ?? [])
        .slice(1)
        .map((e) => ({ ...e.resource, ...(e.resource?.resourceType === "Composition" ? { id: "", date: "" } : {}) }));
    expect(again.status).toBe(200);
    expect(entries(again)).toEqual(entries(first));
  });

  it("forgets what was added to a forgotten patient: a later update of its record is refused as unknown", async () => {
    const { app } = createApp({ maxPatients: 1 }, { logger: QUIET });
    const added = await post(app, messageBundle("add-allergy", [allergyFor(1)]));
    const stored = focusOf(added.body)[0] as AllergyIntolerance;
    await view(app, 2); // 1 forgotten, with its records

    const update = await post(
      app,
      messageBundle("update-allergy", [{ ...stored, criticality: "low" } as AllergyIntolerance]),
    );

    expect(responseHeader(update.body).response?.code).toBe("fatal-error");
    expect(JSON.stringify(update.body)).toContain("not-found");
  });

  it("keeps fixture patients and the patients scenario rules name, whatever the limit", async () => {
    // The shipped scenarios: 00-test-patients.yaml has fixture patient Mariam, 784-1985-1000001-5.
    const { app, store } = createApp({ scenarios: SCENARIOS, maxPatients: 1 }, { logger: QUIET });
    const pinnedBefore = store.counts().pinnedPatients;
    const fixture = encodeURIComponent(`${EMIRATES_ID_SYSTEM}|784-1985-1000001-5`);

    for (let serial = 1; serial <= 4; serial++) await view(app, serial);

    expect((await admin(app, "GET", `/patients/${fixture}`)).status).toBe(200);
    expect([await known(app, 1), await known(app, 2), await known(app, 3), await known(app, 4)]).toEqual([
      404, 404, 404, 200,
    ]);
    expect(store.counts()).toMatchObject({ pinnedPatients: pinnedBefore, evictedPatients: 3 });
  });

  it("pins a patient named by a rule added at run time, when it first appears", async () => {
    const { app } = createApp({ maxPatients: 1 }, { logger: QUIET });
    const key = `${EMIRATES_ID_SYSTEM}|${emiratesId(1980, 1)}`;
    const rule = `rules:\n  - name: slow patient\n    when: { patient: "${key}" }\n    respond: { builtIn: true }\n`;
    expect(
      (await admin(app, "POST", "/scenarios", { body: rule, headers: { "content-type": "application/yaml" } })).status,
    ).toBe(201);

    await view(app, 1);
    await view(app, 2);
    await view(app, 3);

    expect([await known(app, 1), await known(app, 2), await known(app, 3)]).toEqual([200, 404, 200]);
  });
});

describe("the store keeps at most --max-records-per-patient records per patient, the oldest forgotten first", () => {
  it("keeps the newest records of a patient", async () => {
    // A fixture patient without generated records, so the patient starts with none.
    const yaml = `fixtures:\n  patients:\n    - patient: { resourceType: Patient, id: p1, identifier: [{ system: "${EMIRATES_ID_SYSTEM}", value: "${emiratesId(1980, 1)}" }] }\n`;
    const { app } = createApp({ maxRecordsPerPatient: 3 }, { logger: QUIET });
    expect((await admin(app, "POST", "/scenarios", { body: yaml })).status).toBe(201);
    const stored: AllergyIntolerance[] = [];
    for (let i = 0; i < 5; i++) {
      const added = await post(app, messageBundle("add-allergy", [allergyFor(1)]));
      stored.push(focusOf(added.body)[0] as AllergyIntolerance);
    }
    const ids = stored.map((a) => a.id);

    const state = await admin(app, "GET", `/patients/${keyOf(1)}`);

    expect(state.body.records.map((r: AllergyIntolerance) => r.id)).toEqual(ids.slice(2));
    const health = await admin(app, "GET", "/health");
    expect(health.body.store).toMatchObject({ records: 3, evictedRecords: 2, limits: { recordsPerPatient: 3 } });
    const oldest = await post(
      app,
      messageBundle("update-allergy", [{ ...stored[0], criticality: "low" } as AllergyIntolerance]),
    );
    expect(responseHeader(oldest.body).response?.code).toBe("fatal-error");
  });
});

describe("GET /__admin/health reports what is held against the limits", () => {
  it("gives the journal's and the store's counts and limits, and the process memory", async () => {
    const { app } = createApp({ journalLimit: 7, maxPatients: 5, maxRecordsPerPatient: 9 }, { logger: QUIET });
    await view(app, 1);

    const health = await admin(app, "GET", "/health");

    expect(health.body).toMatchObject({
      status: "ok",
      calls: 1,
      journal: { calls: 1, maxCalls: 7 },
      store: { patients: 1, limits: { patients: 5, recordsPerPatient: 9 } },
    });
    expect(health.body.journal.bodyBytes).toBeGreaterThan(0);
    expect(health.body.store.records).toBeGreaterThan(0);
    expect(health.body.memory.rssBytes).toBeGreaterThan(health.body.memory.heapUsedBytes);
  });
});
