import type {
  AllergyIntolerance,
  Bundle,
  Composition,
  Condition,
  Observation,
  Patient,
  Procedure,
  Resource,
} from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { ALTERNATE, example, focusOf, messageBundle, post, responseHeader } from "../support/messages.js";

const EID = "urn:ae:emirates-id";
const patientRef = (value: string) => ({ identifier: { system: EID, value } });

function newSandbox(options: Parameters<typeof createApp>[0] = {}) {
  const sandbox = createApp(options);
  const send = (event: string, resources: Resource[], path?: string) =>
    post(sandbox.app, messageBundle(event, resources), path ? { path } : {});
  const profile = async (value: string) => {
    const reply = await send("view-patient-profile", [
      { resourceType: "Patient", identifier: [{ system: EID, value }] } as Patient,
    ]);
    expect(reply.status).toBe(200);
    const bundle = reply.body as Bundle;
    const resources = (bundle.entry ?? []).slice(1).map((e) => e.resource as Resource);
    const composition = resources.find((r) => r.resourceType === "Composition") as Composition;
    const section = (code: string) =>
      composition.section?.find((s) => s.code?.coding?.[0]?.code === code)?.entry?.map((e) => e.reference) ?? [];
    return { bundle, resources, composition, section };
  };
  return { ...sandbox, send, profile };
}

const ok = (reply: { status: number; body: Bundle }) => {
  expect(reply.status).toBe(200);
  expect(responseHeader(reply.body).response?.code).toBe("ok");
  return focusOf(reply.body);
};

describe("patient profile (CONTRACT §6)", () => {
  it("add → view lists it; update → new version; remove → gone from view, kept as entered-in-error", async () => {
    const s = newSandbox();
    const cashew = {
      ...example<AllergyIntolerance>("allergyintolerance-example.json"),
      patient: patientRef("784-1990-1234567-6"),
    };
    const [added] = ok(await s.send("add-allergy", [cashew])) as AllergyIntolerance[];
    expect(added?.meta?.versionId).toBe("1");

    let view = await s.profile("784-1990-1234567-6");
    expect(view.section("48765-2")).toContain(`AllergyIntolerance/${added?.id}`);
    expect(view.resources.find((r) => r.id === added?.id)).toMatchObject({ code: cashew.code });

    const changed = { ...added, criticality: "low", patient: patientRef("784-1990-1234567-6") } as AllergyIntolerance;
    const [updated] = ok(await s.send("update-allergy", [changed])) as AllergyIntolerance[];
    expect(updated).toMatchObject({ id: added?.id, criticality: "low", meta: { versionId: "2" } });
    view = await s.profile("784-1990-1234567-6");
    expect(view.resources.find((r) => r.id === added?.id)).toMatchObject({
      criticality: "low",
      meta: { versionId: "2" },
    });

    const [removed] = ok(
      await s.send(
        "remove-allergy",
        // R4 requires AllergyIntolerance.patient: the client sends the record as the sandbox returned it.
        [added as AllergyIntolerance],
        ALTERNATE,
      ),
    ) as AllergyIntolerance[];
    expect(removed?.verificationStatus?.coding?.[0]?.code).toBe("entered-in-error");
    expect(removed?.clinicalStatus).toBeUndefined();
    view = await s.profile("784-1990-1234567-6");
    expect(view.section("48765-2")).not.toContain(`AllergyIntolerance/${added?.id}`);

    const state = await s.app.request(`/__admin/patients/${encodeURIComponent(`${EID}|784-1990-1234567-6`)}`);
    const kept = ((await state.json()) as { records: Resource[] }).records.find((r) => r.id === added?.id);
    expect(kept).toMatchObject({
      meta: { versionId: "3" },
      verificationStatus: { coding: [{ code: "entered-in-error" }] },
    });
  });

  it("the same key gives the same generated profile in two separate sandboxes", async () => {
    const a = await newSandbox().profile("784-1985-7654321-3");
    const b = await newSandbox().profile("784-1985-7654321-3");
    const clinical = (v: typeof a) =>
      v.resources.filter((r) => r.resourceType !== "Composition").map((r) => JSON.stringify(r));
    expect(clinical(a)).toEqual(clinical(b));
    const other = await newSandbox({ seed: "another" }).profile("784-1985-7654321-3");
    expect(clinical(other)).not.toEqual(clinical(a));
  });

  it("measurements are reduced to the latest per code in the vital-signs section", async () => {
    const s = newSandbox();
    const weight = (value: number, at: string) =>
      ({
        ...example<Observation>("observation-example.json"),
        subject: patientRef("784-1970-1111111-5"),
        effectiveDateTime: at,
        valueQuantity: { value, unit: "kg", system: "http://unitsofmeasure.org", code: "kg" },
      }) as Observation;
    const [older] = ok(await s.send("add-measurement", [weight(80, "2030-01-01T00:00:00Z")]));
    const [newer] = ok(await s.send("add-measurement", [weight(78, "2030-02-01T00:00:00Z")]));
    const view = await s.profile("784-1970-1111111-5");
    const vitals = view.section("8716-3");
    expect(vitals).toContain(`Observation/${newer?.id}`);
    expect(vitals).not.toContain(`Observation/${older?.id}`);
    const weights = vitals
      .map((ref) => view.resources.find((r) => `${r.resourceType}/${r.id}` === ref) as Observation)
      .filter((o) => o.code.coding?.some((c) => c.code === "29463-7"));
    expect(weights).toHaveLength(1);
  });

  it("refuses a measurement whose unit does not fit its LOINC code", async () => {
    const s = newSandbox();
    const wrong = {
      ...example<Observation>("observation-example.json"),
      subject: patientRef("784-1970-1111111-5"),
      valueQuantity: { value: 80, unit: "cm", system: "http://unitsofmeasure.org", code: "cm" },
    } as Observation;
    const reply = await s.send("add-measurement", [wrong]);
    expect(reply.status).toBe(400);
    expect(reply.body.issue[0].diagnostics).toMatch(/kg/);
    expect(reply.body.issue[0].expression).toEqual(["Bundle.entry[1].resource.value.ofType(Quantity).code"]);
  });
});

describe("the clinician summary is coded as the International Patient Summary (CONTRACT §4)", () => {
  // Written from CONTRACT §4 and the IPS implementation guide (hl7.org/fhir/uv/ips), not read from src/.
  const LOINC = "http://loinc.org";
  const PATIENT_SUMMARY = "60591-5";
  const SECTIONS = [
    { code: "48765-2", holds: "AllergyIntolerance" },
    { code: "11450-4", holds: "Condition" },
    { code: "47519-4", holds: "Procedure" },
    { code: "8716-3", holds: "Observation" },
  ];

  it("Composition.type is LOINC 60591-5; one section per IPS code, each record in its own", async () => {
    const s = newSandbox();
    const value = "784-1970-1111111-5";
    const subject = patientRef(value);
    const added = new Map<string, string | undefined>();
    const add = async (event: string, resource: AllergyIntolerance | Condition | Procedure | Observation) => {
      const [stored] = ok(await s.send(event, [resource]));
      added.set(resource.resourceType, stored?.id);
    };
    await add("add-allergy", { ...example<AllergyIntolerance>("allergyintolerance-example.json"), patient: subject });
    await add("add-history", { ...example<Condition>("condition-example.json"), subject });
    await add("add-history", { ...example<Procedure>("procedure-example.json"), subject });
    await add("add-measurement", {
      ...example<Observation>("observation-example.json"),
      subject,
      // The latest measurement per code is listed: this one is later than any generated one.
      effectiveDateTime: "2030-01-01T00:00:00Z",
      valueQuantity: { value: 70, unit: "kg", system: "http://unitsofmeasure.org", code: "kg" },
    });

    const view = await s.profile(value);

    expect(view.composition.type.coding).toEqual([expect.objectContaining({ system: LOINC, code: PATIENT_SUMMARY })]);
    expect(view.composition.section?.map((section) => section.code?.coding)).toEqual(
      SECTIONS.map(({ code }) => [expect.objectContaining({ system: LOINC, code })]),
    );
    for (const { code, holds } of SECTIONS) {
      expect(view.section(code), `section ${code}`).toContain(`${holds}/${added.get(holds)}`);
      const others = SECTIONS.filter((other) => other.code !== code).map((other) => other.code);
      for (const other of others) expect(view.section(other)).not.toContain(`${holds}/${added.get(holds)}`);
    }
  });
});

describe("patient-profile refusals (CONTRACT §5)", () => {
  const allergy = (value: string) =>
    ({
      ...example<AllergyIntolerance>("allergyintolerance-medication.json"),
      patient: patientRef(value),
    }) as AllergyIntolerance;
  const refusal = (reply: { status: number; body: Bundle }) => {
    const header = responseHeader(reply.body);
    expect(header.response?.code).toBe("fatal-error");
    const details = header.response?.details?.reference;
    const outcome = reply.body.entry?.find((e) => e.fullUrl === details)?.resource;
    expect(outcome?.resourceType).toBe("OperationOutcome");
    return (outcome as unknown as { issue: Array<{ code: string; diagnostics: string; expression?: string[] }> }).issue;
  };

  it.each([
    ["update-allergy", undefined],
    ["remove-allergy", ALTERNATE],
  ])("%s of an unknown id is refused, naming the id; nothing changes", async (event, path) => {
    const s = newSandbox();
    const reply = await s.send(event, [{ ...allergy("784-1990-1234567-6"), id: "not-there" }], path);
    expect(reply.status).toBe(200);
    const [problem] = refusal(reply);
    expect(problem).toMatchObject({ code: "not-found", expression: ["Bundle.entry[1].resource.id"] });
    expect(problem?.diagnostics).toContain("AllergyIntolerance/not-there");
    const state = await s.app.request(`/__admin/patients/${encodeURIComponent(`${EID}|784-1990-1234567-6`)}`);
    expect(state.status).toBe(404);
  });

  it("an update naming another patient is refused; 422 with --business-errors http", async () => {
    for (const [options, status] of [
      [{}, 200],
      [{ businessErrors: "http" as const }, 422],
    ] as const) {
      const s = newSandbox(options);
      const [added] = ok(await s.send("add-allergy", [allergy("784-1990-1234567-6")]));
      await s.profile("784-1980-7777777-3");
      const reply = await s.send("update-allergy", [{ ...allergy("784-1980-7777777-3"), id: added?.id }]);
      expect(reply.status).toBe(status);
      const [problem] = refusal(reply);
      expect(problem?.code).toBe("business-rule");
      expect(problem?.diagnostics).toContain(`AllergyIntolerance/${added?.id}`);
      const view = await s.profile("784-1990-1234567-6");
      expect(view.resources.find((r) => r.id === added?.id)).toMatchObject({ meta: { versionId: "1" } });
    }
  });

  it("a removed record cannot be updated or removed again", async () => {
    const s = newSandbox();
    const [added] = ok(await s.send("add-allergy", [allergy("784-1990-1234567-6")]));
    const removal = [added as AllergyIntolerance];
    ok(await s.send("remove-allergy", removal, ALTERNATE));
    expect(refusal(await s.send("remove-allergy", removal, ALTERNATE))[0]?.diagnostics).toMatch(/removed/);
    expect(
      refusal(await s.send("update-allergy", [{ ...allergy("784-1990-1234567-6"), id: added?.id }]))[0]?.code,
    ).toBe("business-rule");
  });

  it("removed history and measurements are entered-in-error the R4 way", async () => {
    const s = newSandbox();
    const subject = patientRef("784-1990-1234567-6");
    for (const [file, kind, check] of [
      ["condition-example2.json", "history", { verificationStatus: { coding: [{ code: "entered-in-error" }] } }],
      ["procedure-example.json", "history", { status: "entered-in-error" }],
      ["observation-example-heart-rate.json", "measurement", { status: "entered-in-error" }],
    ] as const) {
      const [added] = ok(await s.send(`add-${kind}`, [{ ...example(file), subject } as Resource]));
      const [removed] = ok(await s.send(`remove-${kind}`, [added as Resource]));
      expect(removed).toMatchObject(check);
      if (added?.resourceType === "Condition") expect(removed).not.toHaveProperty("clinicalStatus");
    }
  });
});
