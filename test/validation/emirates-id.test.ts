import type { AllergyIntolerance, Patient } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { EMIRATES_ID_SYSTEM as EID, emiratesId, luhnDigit, luhnValid, withCheckDigit } from "../support/emirates-id.js";
import { detailsOutcome, expectIssueAt, expectNodeAt, expectRefused } from "../support/fhir-issues.js";
import { messageBundle, post, responseHeader } from "../support/messages.js";
import { FOCUS, patientKnown, sandboxWith } from "../support/validation-app.js";

/**
 * Emirates IDs (CONTRACT §11): on an Identifier of the Emirates ID system the
 * value must be 784-YYYY-NNNNNNN-C with C the Luhn check digit over the 14
 * digits 784YYYYNNNNNNN; otherwise a `value` issue at the identifier's value.
 * `emiratesIdCheck: "error" | "warning" | "off"` (default error).
 */

const profileOf = (value: string, system = EID) =>
  messageBundle("view-patient-profile", [{ resourceType: "Patient", identifier: [{ system, value }] } as Patient]);

describe("the test's own Luhn implementation", () => {
  it.each([
    ["7992739871", 3], // the textbook example (ISO/IEC 7812-1 Annex B, as quoted everywhere)
    ["4992739871", 6],
    ["000000000000000", 0],
    ["1", 8],
  ])("Luhn digit of %s is %i", (digits, digit) => {
    expect(luhnDigit(digits)).toBe(digit);
    expect(luhnValid(`${digits}${digit}`)).toBe(true);
    expect(luhnValid(`${digits}${(digit + 1) % 10}`)).toBe(false);
  });

  it("builds IDs of the 784-YYYY-NNNNNNN-C form whose 15 digits pass Luhn", () => {
    const id = emiratesId(1990, 1_234_567);
    expect(id).toMatch(/^784-1990-1234567-\d$/);
    expect(luhnValid(id.replaceAll("-", ""))).toBe(true);
  });
});

describe("Emirates ID check digits", () => {
  const valid = emiratesId(1990, 1_234_567);
  const right = Number(valid.at(-1));

  it.each([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])("check digit %i", async (digit) => {
    const { app } = sandboxWith();
    const value = withCheckDigit(valid, digit);
    const request = profileOf(value);
    const reply = await post(app, request);
    if (digit === right) {
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      expect(responseHeader(reply.body).response?.code).toBe("ok");
      return;
    }
    expectNodeAt(request, { expression: `${FOCUS}.identifier[0].value`, target: value });
    const outcome = expectRefused(reply);
    expectIssueAt(outcome, request, {
      code: "value",
      expression: `${FOCUS}.identifier[0].value`,
      target: value,
      says: [new RegExp(value), /check digit/i],
    });
    expect(await patientKnown(app, EID, value)).toBe(false);
  });
});

describe("Emirates ID check digits: every digit, for IDs whose right digit is each of 0–9", () => {
  /** The first ID from 784-1987-1000000 on whose Luhn digit (the test's own implementation) is `digit`. */
  const idWithCheckDigit = (digit: number): string => {
    for (let serial = 1_000_000; serial < 1_000_100; serial++) {
      const id = emiratesId(1987, serial);
      if (Number(id.at(-1)) === digit) return id;
    }
    throw new Error(`no serial in range gives check digit ${digit}`);
  };

  it.each([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])(
    "right digit %i: accepted, and each of the nine others refused",
    async (right) => {
      const id = idWithCheckDigit(right);
      const { app } = sandboxWith();
      const answers: Array<[number, number, string | undefined]> = [];
      for (let digit = 0; digit <= 9; digit++) {
        const reply = await post(app, profileOf(withCheckDigit(id, digit)));
        answers.push([
          digit,
          reply.status,
          reply.status === 200 ? responseHeader(reply.body).response?.code : undefined,
        ]);
      }
      expect(answers).toEqual(
        Array.from({ length: 10 }, (_, digit) => (digit === right ? [digit, 200, "ok"] : [digit, 400, undefined])),
      );
    },
  );
});

describe("Emirates ID format", () => {
  const good = emiratesId(1985, 7_654_321);
  it.each([
    ["too short", "12345"],
    ["no dashes", good.replaceAll("-", "")],
    ["a two-digit year", `784-85-7654321-${good.at(-1)}`],
    ["letters", "784-ABCD-7654321-1"],
    ["not 784", (() => `785-1985-7654321-${luhnDigit("78519857654321")}`)()],
    ["spaces around", ` ${good} `],
  ])("%s (%j): value at the identifier's value", async (_what, value) => {
    const { app } = sandboxWith();
    const request = profileOf(value);
    expectNodeAt(request, { expression: `${FOCUS}.identifier[0].value`, target: value });

    const outcome = expectRefused(await post(app, request));

    expectIssueAt(outcome, request, {
      code: "value",
      expression: `${FOCUS}.identifier[0].value`,
      target: value,
      says: [/784-YYYY-NNNNNNN-C/],
    });
  });

  it("any identifier of that system is checked, e.g. a logical reference AllergyIntolerance.patient.identifier", async () => {
    const { app } = sandboxWith();
    const allergy: AllergyIntolerance = {
      resourceType: "AllergyIntolerance",
      code: { text: "cashew nut" },
      patient: { identifier: { system: EID, value: "12345" } },
    };
    const request = messageBundle("add-allergy", [allergy]);

    const outcome = expectRefused(await post(app, request));

    expectIssueAt(outcome, request, {
      code: "value",
      expression: `${FOCUS}.patient.identifier.value`,
      target: "12345",
    });
  });

  it("an identifier of another system is not an Emirates ID: 12345 is fine there", async () => {
    const { app } = sandboxWith();
    const reply = await post(app, profileOf("12345", "urn:oid:1.2.36.146.595.217.0.1"));
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(responseHeader(reply.body).response?.code).toBe("ok");
  });
});

describe("emiratesIdCheck", () => {
  const wrong = withCheckDigit(emiratesId(1990, 1_234_567), (luhnDigit("78419901234567") + 5) % 10);

  it('"warning": accepted and processed, the problem a warning in response.details', async () => {
    const { app } = sandboxWith({ emiratesIdCheck: "warning" });
    const request = profileOf(wrong);

    const reply = await post(app, request);

    const outcome = detailsOutcome(reply);
    expectIssueAt(outcome, request, {
      code: "value",
      severity: "warning",
      expression: `${FOCUS}.identifier[0].value`,
      target: wrong,
    });
    expect(await patientKnown(app, EID, wrong)).toBe(true);
  });

  it('"off": accepted with no issue about it', async () => {
    const { app } = sandboxWith({ emiratesIdCheck: "off" });
    const reply = await post(app, profileOf(wrong));
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(responseHeader(reply.body).response?.code).toBe("ok");
    expect(responseHeader(reply.body).response?.details).toBeUndefined();
  });

  it('"error" is the default', async () => {
    for (const options of [{}, { emiratesIdCheck: "error" as const }]) {
      const { app } = sandboxWith(options);
      expectRefused(await post(app, profileOf(wrong)));
    }
  });
});
