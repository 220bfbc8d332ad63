import type { AllergyIntolerance, Observation, Patient, Task } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { EMIRATES_ID_SYSTEM as EID, emiratesId } from "../support/emirates-id.js";
import { expectIssueAt, expectRefused, expectWellFormedIssues } from "../support/fhir-issues.js";
import { messageBundle, post, responseHeader } from "../support/messages.js";
import { FOCUS, patientKnown, sandboxWith } from "../support/validation-app.js";

/**
 * The invalid inputs the validation issue lists (CONTRACT §11): each message
 * is refused with 400 and a bare OperationOutcome that reports every problem
 * at once, each at its FHIRPath; nothing is stored.
 */

const ALLERGY_CLINICAL = "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical";
const ALLERGY_VERIFICATION = "http://terminology.hl7.org/CodeSystem/allergyintolerance-verification";

const errorsOf = (outcome: { issue?: Array<{ severity?: string }> }) =>
  (outcome.issue ?? []).filter((i) => i.severity === "error" || i.severity === "fatal");

describe("the invalid inputs of the validation issue are refused, every problem at once", () => {
  it("an AllergyIntolerance with five errors: one 400 naming all five; nothing stored", async () => {
    const { app } = sandboxWith();
    const patientId = emiratesId(1985, 4_200_001);
    const allergy = {
      resourceType: "AllergyIntolerance",
      clinicalStatus: { coding: [{ system: ALLERGY_CLINICAL, code: "bogus" }] },
      verificationStatus: { coding: [{ system: ALLERGY_VERIFICATION, code: "confirmed" }] },
      category: ["drug"],
      criticality: "severe",
      code: { coding: [{ system: "http://snomed.info/sct", code: "91936005", display: "Allergy to penicillin" }] },
      patient: { identifier: { system: EID, value: patientId } },
      recordedDate: "yesterday",
      severityScore: 3,
    } as unknown as AllergyIntolerance;
    const request = messageBundle("add-allergy", [allergy]);

    const outcome = expectRefused(await post(app, request));

    expectIssueAt(outcome, request, {
      code: "code-invalid",
      expression: `${FOCUS}.clinicalStatus.coding[0].code`,
      target: "bogus",
      says: [/bogus/, /active/, /inactive/, /resolved/],
    });
    expectIssueAt(outcome, request, {
      code: "code-invalid",
      expression: `${FOCUS}.category[0]`,
      target: "drug",
      says: [/drug/, /food/, /medication/, /environment/, /biologic/],
    });
    expectIssueAt(outcome, request, {
      code: "code-invalid",
      expression: `${FOCUS}.criticality`,
      target: "severe",
      says: [/severe/, /low/, /high/, /unable-to-assess/],
    });
    expectIssueAt(outcome, request, {
      code: "value",
      expression: `${FOCUS}.recordedDate`,
      target: "yesterday",
      says: [/yesterday/, /dateTime/],
    });
    expectIssueAt(outcome, request, {
      code: "structure",
      expression: `${FOCUS}.severityScore`,
      target: 3,
      says: [/severityScore/],
    });
    expect(errorsOf(outcome), JSON.stringify(outcome.issue, null, 1)).toHaveLength(5);
    expectWellFormedIssues(outcome, request);
    // Nothing stored: the patient was never even created (a valid message would create it).
    expect(await patientKnown(app, EID, patientId)).toBe(false);
  });

  it("the same allergy made valid is stored, so the check above is not vacuous", async () => {
    const { app } = sandboxWith();
    const patientId = emiratesId(1985, 4_200_002);
    const allergy: AllergyIntolerance = {
      resourceType: "AllergyIntolerance",
      clinicalStatus: { coding: [{ system: ALLERGY_CLINICAL, code: "active" }] },
      verificationStatus: { coding: [{ system: ALLERGY_VERIFICATION, code: "confirmed" }] },
      category: ["medication"],
      criticality: "high",
      code: { coding: [{ system: "http://snomed.info/sct", code: "91936005", display: "Allergy to penicillin" }] },
      patient: { identifier: { system: EID, value: patientId } },
      recordedDate: "2026-01-15",
    };
    const request = messageBundle("add-allergy", [allergy]);
    const reply = await post(app, request);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(responseHeader(reply.body).response?.code).toBe("ok");
    expect(await patientKnown(app, EID, patientId)).toBe(true);
  });

  it('a Patient with gender "M" and birthDate "15/01/1990": both reported; no profile generated', async () => {
    const { app } = sandboxWith();
    const patientId = emiratesId(1990, 1_500_001);
    const patient = {
      resourceType: "Patient",
      identifier: [{ system: EID, value: patientId }],
      gender: "M",
      birthDate: "15/01/1990",
    } as unknown as Patient;
    const request = messageBundle("view-patient-profile", [patient]);

    const outcome = expectRefused(await post(app, request));

    expectIssueAt(outcome, request, {
      code: "code-invalid",
      expression: `${FOCUS}.gender`,
      target: "M",
      says: [/male/, /female/, /other/, /unknown/],
    });
    expectIssueAt(outcome, request, {
      code: "value",
      expression: `${FOCUS}.birthDate`,
      target: "15/01/1990",
      says: [/15\/01\/1990/, /YYYY-MM-DD|date/],
    });
    expect(errorsOf(outcome)).toHaveLength(2);
    expect(await patientKnown(app, EID, patientId)).toBe(false);
  });

  it.each([
    ["not in the 784-YYYY-NNNNNNN-C form", "12345"],
    [
      "a wrong Luhn check digit",
      (() => {
        const valid = emiratesId(1990, 1_234_567);
        return `${valid.slice(0, -1)}${(Number(valid.at(-1)) + 1) % 10}`;
      })(),
    ],
  ])("an Emirates ID %s (%s): value issue at the identifier's value", async (_what, value) => {
    const { app } = sandboxWith();
    const patient: Patient = { resourceType: "Patient", identifier: [{ system: EID, value }] };
    const request = messageBundle("view-patient-profile", [patient]);

    const outcome = expectRefused(await post(app, request));

    expectIssueAt(outcome, request, {
      code: "value",
      expression: `${FOCUS}.identifier[0].value`,
      target: value,
      says: [new RegExp(value), /784-YYYY-NNNNNNN-C|check digit/],
    });
    expect(await patientKnown(app, EID, value)).toBe(false);
  });

  it('a Task with intent "whatever" and priority "high": both reported; no task stored', async () => {
    const { app } = sandboxWith();
    const patientId = emiratesId(1979, 2_000_001);
    const task = {
      resourceType: "Task",
      status: "ready",
      intent: "whatever",
      priority: "high",
      code: { coding: [{ system: "urn:uae-fhir-sandbox:task-kind", code: "assessment" }], text: "Foot check" },
      for: { identifier: { system: EID, value: patientId } },
      performerType: [{ text: "Physician" }],
    } as unknown as Task;
    const request = messageBundle("add-task", [task]);

    const outcome = expectRefused(await post(app, request));

    expectIssueAt(outcome, request, {
      code: "code-invalid",
      expression: `${FOCUS}.intent`,
      target: "whatever",
      says: [/whatever/, /order/, /proposal/, /plan/],
    });
    expectIssueAt(outcome, request, {
      code: "code-invalid",
      expression: `${FOCUS}.priority`,
      target: "high",
      says: [/high/, /routine/, /urgent/, /asap/, /stat/],
    });
    expect(errorsOf(outcome)).toHaveLength(2);
    const pending = await post(
      app,
      messageBundle("get-pending-tasks", [
        { resourceType: "Patient", identifier: [{ system: EID, value: patientId }] } as Patient,
      ]),
    );
    expect(pending.status).toBe(200);
    const tasks = (pending.body.entry ?? []).filter(
      (e: { resource?: { resourceType?: string; code?: { text?: string } } }) =>
        e.resource?.resourceType === "Task" && e.resource.code?.text === "Foot check",
    );
    expect(tasks).toEqual([]);
  });

  const weight = (extra: Record<string, unknown>, patientId: string) =>
    ({
      resourceType: "Observation",
      category: [
        {
          coding: [{ system: "http://terminology.hl7.org/CodeSystem/observation-category", code: "vital-signs" }],
        },
      ],
      code: { coding: [{ system: "http://loinc.org", code: "29463-7", display: "Body weight" }] },
      subject: { identifier: { system: EID, value: patientId } },
      effectiveDateTime: "2026-01-15T09:30:00+04:00",
      ...extra,
    }) as unknown as Observation;

  it('an Observation with status "done": code-invalid at status', async () => {
    const { app } = sandboxWith();
    const patientId = emiratesId(1970, 3_000_001);
    const request = messageBundle("add-measurement", [
      weight(
        {
          status: "done",
          valueQuantity: { value: 70, unit: "kg", system: "http://unitsofmeasure.org", code: "kg" },
        },
        patientId,
      ),
    ]);

    const outcome = expectRefused(await post(app, request));

    expectIssueAt(outcome, request, {
      code: "code-invalid",
      expression: `${FOCUS}.status`,
      target: "done",
      says: [/done/, /registered/, /preliminary/, /final/, /amended/],
    });
    expect(errorsOf(outcome)).toHaveLength(1);
    expect(await patientKnown(app, EID, patientId)).toBe(false);
  });

  it('an Observation with "value": "70.0" and status "done": both issues in one answer', async () => {
    const { app } = sandboxWith();
    const patientId = emiratesId(1970, 3_000_002);
    const request = messageBundle("add-measurement", [weight({ status: "done", value: "70.0" }, patientId)]);

    const outcome = expectRefused(await post(app, request));

    // A bare choice name cannot be reached by FHIRPath: the issue points at the resource and names the choices.
    expectIssueAt(outcome, request, {
      code: "structure",
      expression: FOCUS,
      says: [/\bvalue\b/, /valueQuantity/, /valueString/],
    });
    expectIssueAt(outcome, request, { code: "code-invalid", expression: `${FOCUS}.status`, target: "done" });
    // No exact count: the operation's own "needs a value" check may or may not add a third issue (§11 is silent).
    expect(errorsOf(outcome).length).toBeGreaterThanOrEqual(2);
    expectWellFormedIssues(outcome, request);
    expect(await patientKnown(app, EID, patientId)).toBe(false);
  });
});
