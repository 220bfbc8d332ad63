import type { AllergyIntolerance, Bundle, OperationOutcome, Patient } from "fhir/r4.js";
import type { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import type { SandboxApp } from "../../src/app.js";
import { resolveServeConfig, SERVE_FLAGS, UsageError } from "../../src/cli/flags.js";
import { admin } from "../admin/admin-client.js";
import { EMIRATES_ID_SYSTEM as EID, emiratesId } from "../support/emirates-id.js";
import { detailsOutcome, type ExpectedIssue, expectIssueAt, expectRefused } from "../support/fhir-issues.js";
import { messageBundle, post, responseHeader } from "../support/messages.js";
import { FOCUS, patientKnown, sandboxWith, type ValidationOptions } from "../support/validation-app.js";

/**
 * `validation: "strict" | "warn" | "off"` (CONTRACT §11; CLI --validation,
 * env VALIDATION; default strict) and scenario rules that see invalid
 * messages only when their `when` says `invalid: true`.
 */

const open: SandboxApp[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.close();
});
const sandbox = (options: Parameters<typeof sandboxWith>[0] = {}) => {
  const s = sandboxWith(options);
  open.push(s);
  return s;
};

/** The AllergyIntolerance of the validation issue with its five errors, for a patient of its own. */
function fiveErrors(patientId: string): { request: Bundle; issues: ExpectedIssue[] } {
  const allergy = {
    resourceType: "AllergyIntolerance",
    clinicalStatus: {
      coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", code: "bogus" }],
    },
    category: ["drug"],
    criticality: "severe",
    code: { coding: [{ system: "http://snomed.info/sct", code: "91936005", display: "Allergy to penicillin" }] },
    patient: { identifier: { system: EID, value: patientId } },
    recordedDate: "yesterday",
    severityScore: 3,
  } as unknown as AllergyIntolerance;
  return {
    request: messageBundle("add-allergy", [allergy]),
    issues: [
      { code: "code-invalid", expression: `${FOCUS}.clinicalStatus.coding[0].code`, target: "bogus" },
      { code: "code-invalid", expression: `${FOCUS}.category[0]`, target: "drug" },
      { code: "code-invalid", expression: `${FOCUS}.criticality`, target: "severe" },
      { code: "value", expression: `${FOCUS}.recordedDate`, target: "yesterday" },
      { code: "structure", expression: `${FOCUS}.severityScore`, target: 3 },
    ],
  };
}

async function allergyCodesOf(app: Hono, patientId: string): Promise<string[]> {
  const view = await post(
    app,
    messageBundle("view-patient-profile", [
      { resourceType: "Patient", identifier: [{ system: EID, value: patientId }] } as Patient,
    ]),
  );
  expect(view.status).toBe(200);
  return ((view.body as Bundle).entry ?? [])
    .map((e) => e.resource)
    .filter((r): r is AllergyIntolerance => r?.resourceType === "AllergyIntolerance")
    .flatMap((a) => (a.code?.coding ?? []).map((c) => c.code as string));
}

describe("validation modes", () => {
  it.each<[string, ValidationOptions]>([
    ["default", {}],
    ["strict", { validation: "strict" }],
  ])("%s: refused with 400, nothing stored", async (_name, options) => {
    const { app } = sandbox(options);
    const patientId = emiratesId(1966, 3_000_101);
    const { request, issues } = fiveErrors(patientId);

    const outcome = expectRefused(await post(app, request));

    for (const issue of issues) expectIssueAt(outcome, request, issue);
    expect(await patientKnown(app, EID, patientId)).toBe(false);
  });

  it("warn: processed (stored) and answered ok; every error comes back as a warning in response.details", async () => {
    const { app } = sandbox({ validation: "warn" });
    const patientId = emiratesId(1966, 3_000_102);
    const { request, issues } = fiveErrors(patientId);

    const reply = await post(app, request);

    const outcome = detailsOutcome(reply);
    for (const issue of issues) expectIssueAt(outcome, request, { ...issue, severity: "warning" });
    expect((outcome.issue ?? []).filter((i) => i.severity === "error" || i.severity === "fatal")).toEqual([]);
    expect(responseHeader(reply.body).focus?.length).toBeGreaterThan(0);
    expect(await allergyCodesOf(app, patientId)).toContain("91936005");
  });

  it("off: no R4 validation at all — processed, no issues", async () => {
    const { app } = sandbox({ validation: "off" });
    const patientId = emiratesId(1966, 3_000_103);
    const { request } = fiveErrors(patientId);

    const reply = await post(app, request);

    expect(reply.status, JSON.stringify(reply.body).slice(0, 400)).toBe(200);
    const header = responseHeader(reply.body);
    expect(header.response?.code).toBe("ok");
    const details = header.response?.details?.reference;
    const outcome = (reply.body as Bundle).entry?.find((e) => e.fullUrl === details)?.resource as
      | OperationOutcome
      | undefined;
    expect(outcome?.issue ?? []).toEqual([]);
    expect(await allergyCodesOf(app, patientId)).toContain("91936005");
  });

  it("off still applies the message checks of CONTRACT §2/§3 (MessageHeader without source.endpoint; unknown event)", async () => {
    const { app } = sandbox({ validation: "off" });
    const { request } = fiveErrors(emiratesId(1966, 3_000_104));
    const header = request.entry?.[0]?.resource as { source?: unknown };
    delete header.source;
    expectRefused(await post(app, request));

    const unknown = messageBundle("no-such-event", [
      { resourceType: "Patient", identifier: [{ system: EID, value: emiratesId(1966, 3_000_105) }] } as Patient,
    ]);
    expectRefused(await post(app, unknown));
  });
});

describe("CLI: --validation / VALIDATION and --emirates-id-check / EMIRATES_ID_CHECK", () => {
  const sandboxOf = (values: Record<string, string>, env: Record<string, string> = {}) =>
    resolveServeConfig(values, env).sandbox as ReturnType<typeof resolveServeConfig>["sandbox"] & ValidationOptions;

  it("are serve flags with their environment variables", () => {
    const flags = Object.fromEntries(SERVE_FLAGS.map((f) => [f.name, f]));
    expect(flags.validation?.env).toBe("VALIDATION");
    expect(flags["emirates-id-check"]?.env).toBe("EMIRATES_ID_CHECK");
  });

  it("default strict and error", () => {
    expect(sandboxOf({})).toMatchObject({ validation: "strict", emiratesIdCheck: "error" });
  });

  it.each(["strict", "warn", "off"] as const)("--validation %s", (mode) => {
    expect(sandboxOf({ validation: mode }).validation).toBe(mode);
    expect(sandboxOf({}, { VALIDATION: mode }).validation).toBe(mode);
  });

  it.each(["error", "warning", "off"] as const)("--emirates-id-check %s", (mode) => {
    expect(sandboxOf({ "emirates-id-check": mode }).emiratesIdCheck).toBe(mode);
    expect(sandboxOf({}, { EMIRATES_ID_CHECK: mode }).emiratesIdCheck).toBe(mode);
  });

  it("the flag wins over the environment; other values are usage errors", () => {
    expect(sandboxOf({ validation: "off" }, { VALIDATION: "warn" }).validation).toBe("off");
    expect(() => sandboxOf({ validation: "lenient" })).toThrow(UsageError);
    expect(() => sandboxOf({ "emirates-id-check": "warn" })).toThrow(UsageError);
  });
});

describe("scenario rules and invalid messages", () => {
  const addRules = async (app: Hono, yaml: string) => {
    const added = await admin(app, "POST", "/scenarios", {
      body: yaml,
      headers: { "content-type": "application/yaml" },
    });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
  };
  const rulesView = async (app: Hono) =>
    (await admin(app, "GET", "/scenarios")).body.rules as Array<{ name: string; matched: number }>;

  it("a rule whose when says invalid: true answers an invalid message instead of the 400", async () => {
    const { app } = sandbox();
    await addRules(
      app,
      `
rules:
  - name: invalid-allergy
    when: { operation: add-allergy, invalid: true }
    respond: { status: 422, body: { from: invalid-rule } }
`,
    );
    const { request } = fiveErrors(emiratesId(1971, 4_000_001));

    const reply = await post(app, request);

    expect(reply.status, JSON.stringify(reply.body).slice(0, 300)).toBe(422);
    expect(reply.body).toEqual({ from: "invalid-rule" });
    expect(reply.headers.get("x-sandbox-rule")).toBe("invalid-allergy");
  });

  it("a rule without it never sees an invalid message (the 400 stands), but still answers valid ones", async () => {
    const { app } = sandbox();
    await addRules(
      app,
      `
rules:
  - name: any-allergy
    when: { operation: add-allergy }
    respond: { status: 419, body: { from: plain-rule } }
`,
    );
    const patientId = emiratesId(1971, 4_000_002);
    const { request } = fiveErrors(patientId);

    expectRefused(await post(app, request));
    expect((await rulesView(app)).find((r) => r.name === "any-allergy")?.matched).toBe(0);

    const valid = messageBundle("add-allergy", [
      {
        resourceType: "AllergyIntolerance",
        // ait-1: an allergy that is not entered-in-error has a clinical status.
        clinicalStatus: {
          coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", code: "active" }],
        },
        code: { text: "cashew nut" },
        patient: { identifier: { system: EID, value: patientId } },
      } as AllergyIntolerance,
    ]);
    expect((await post(app, valid)).status).toBe(419);
  });
});
