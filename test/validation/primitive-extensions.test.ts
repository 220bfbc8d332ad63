import type { AllergyIntolerance, Observation, OperationOutcome } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { expectRefused } from "../support/fhir-issues.js";
import { example, messageBundle, post } from "../support/messages.js";
import { FOCUS, sandboxWith } from "../support/validation-app.js";

/**
 * R4 JSON (json.html#primitive): a repeating primitive's id and extensions go in `_name`, an array as long as
 * `name` with null where an item has none. Checked on add-allergy's AllergyIntolerance.category (0..* code).
 */
const DATA_ABSENT = { url: "http://hl7.org/fhir/StructureDefinition/data-absent-reason", valueCode: "unknown" };
const allergyWith = (extra: Record<string, unknown>) => {
  const allergy: AllergyIntolerance = {
    ...example<AllergyIntolerance>("allergyintolerance-example.json"),
    category: ["food", "medication"],
  };
  return messageBundle("add-allergy", [{ ...allergy, ...extra }]);
};

describe("extensions of a repeating primitive (_category)", () => {
  it("as long as the values, null where an item has none: accepted", async () => {
    const reply = await post(sandboxWith().app, allergyWith({ _category: [null, { extension: [DATA_ABSENT] }] }));
    expect(reply.status, JSON.stringify(reply.body).slice(0, 400)).toBe(200);
  });

  it.each([
    ["shorter than the values", [{ extension: [DATA_ABSENT] }]],
    ["longer than the values", [null, null, { extension: [DATA_ABSENT] }]],
  ])("%s: refused at _category, saying the lengths", async (_, extensions) => {
    const outcome = expectRefused(await post(sandboxWith().app, allergyWith({ _category: extensions })));
    const issue = outcome.issue?.find((i) => i.code === "structure");
    expect(issue?.diagnostics).toMatch(/_category has \d items? and AllergyIntolerance\.category 2/);
    expect(issue?.expression).toEqual([FOCUS]);
  });

  it("not an array: refused", async () => {
    const outcome = expectRefused(
      await post(sandboxWith().app, allergyWith({ _category: { extension: [DATA_ABSENT] } })),
    );
    expect(outcome.issue?.map((i) => i.diagnostics)).toContainEqual(
      expect.stringMatching(/_category must be an array/),
    );
  });
});

/**
 * R4 JSON (json.html#primitive): a primitive with no value but an id or extensions is written as `_name` alone, and
 * is present: a required one with only a data-absent-reason extension meets its cardinality (the extension says why
 * the value is missing). Checked on add-measurement's Observation.status (1..1 code).
 */
describe("a required primitive given only as its _element", () => {
  const observation = (edit: (o: Record<string, unknown>) => void) => {
    const o = example<Observation>("observation-example-body-height.json") as unknown as Record<string, unknown>;
    edit(o);
    return messageBundle("add-measurement", [o as unknown as Observation]);
  };

  it("_status with a data-absent-reason extension and no status: present, not reported missing", async () => {
    const reply = await post(
      sandboxWith().app,
      observation((o) => {
        delete o.status;
        o._status = { extension: [DATA_ABSENT] };
      }),
    );
    const issues = (reply.body as OperationOutcome).issue ?? [];
    expect(
      issues.filter((i) => i.code === "required"),
      JSON.stringify(reply.body).slice(0, 400),
    ).toEqual([]);
    expect(reply.status, JSON.stringify(reply.body).slice(0, 400)).toBe(200);
  });

  it("neither status nor _status: refused as missing, at the Observation", async () => {
    const outcome = expectRefused(
      await post(
        sandboxWith().app,
        observation((o) => {
          delete o.status;
        }),
      ),
    );
    const issue = outcome.issue?.find((i) => i.code === "required");
    expect(issue?.diagnostics).toMatch(/Observation\.status is required/);
    expect(issue?.expression).toEqual([FOCUS]);
  });
});
