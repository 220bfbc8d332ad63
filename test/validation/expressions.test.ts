import type { Bundle, OperationOutcome, Resource } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { locate } from "../support/fhir-issues.js";
import { messageBundle, post } from "../support/messages.js";

/**
 * Issue expressions on the awkward corners of R4 JSON (CONTRACT §11): each evaluates, with HL7's FHIRPath engine and
 * its R4 model, to the offending node, or to its parent where FHIRPath cannot reach the node itself.
 */
const patient = (extra: Record<string, unknown>) =>
  ({ resourceType: "Patient", id: "p1", identifier: [{ system: "urn:test", value: "1" }], ...extra }) as Resource;

async function refusal(resource: Resource): Promise<{ outcome: OperationOutcome; request: Bundle }> {
  const request = messageBundle("view-patient-profile", [resource]);
  const reply = await post(createApp().app, request);
  expect(reply.status, JSON.stringify(reply.body)).toBe(400);
  return { outcome: reply.body as OperationOutcome, request };
}

const where = (outcome: OperationOutcome, pattern: RegExp) =>
  outcome.issue.find((i) => pattern.test(i.diagnostics ?? ""))?.expression?.[0] as string;

describe("issue expressions that FHIRPath can evaluate", () => {
  it("an extension of a primitive that has no value: at name.extension, not at the resource's own extensions", async () => {
    // ext-1: an extension has a value or extensions (datatypes.html#Extension); this one has neither.
    const { outcome, request } = await refusal(patient({ _birthDate: { extension: [{ url: "http://x.example/e" }] } }));
    const at = where(outcome, /^ext-1:/);
    expect(at).toBe("Bundle.entry[1].resource.birthDate.extension[0]");
    expect(locate(request, at).map((n) => n.value)).toEqual([{ url: "http://x.example/e" }]);
  });

  it("an unknown element whose name FHIRPath cannot spell: at its parent", async () => {
    const { outcome, request } = await refusal(patient({ "a b": 1 }));
    const at = where(outcome, /"a b" is not an element/);
    expect(at).toBe("Bundle.entry[1].resource");
    expect(locate(request, at)).toHaveLength(1);
  });

  it("a narrative's div (a FHIRPath keyword): delimited, so it parses and finds the div", async () => {
    const { outcome, request } = await refusal(patient({ text: { status: "generated", div: "<p>no namespace</p>" } }));
    const at = where(outcome, /^Narrative\.div: txt-1/);
    expect(at).toBe("Bundle.entry[1].resource.text.`div`");
    expect(locate(request, at).map((n) => n.value)).toEqual(["<p>no namespace</p>"]);
  });

  it("a null item of an array: at the parent (FHIRPath skips nulls)", async () => {
    const { outcome, request } = await refusal(patient({ name: [null] }));
    const at = where(outcome, /name\[0\] is null/);
    expect(at).toBe("Bundle.entry[1].resource");
    expect(locate(request, at)).toHaveLength(1);
  });
});

describe("dom-3 (resource.html#invariants)", () => {
  const medication = { resourceType: "Medication", id: "m1", code: { text: "Vancomycin" } };
  it("a contained resource named only in free text is not referred to: refused", async () => {
    const { outcome } = await refusal(patient({ contained: [medication], name: [{ text: "#m1" }] }));
    expect(outcome.issue.map((i) => i.diagnostics)).toContainEqual(expect.stringMatching(/^dom-3: .*"m1"/));
  });

  it("a contained resource a Reference points at is fine", async () => {
    const reply = await post(
      createApp().app,
      messageBundle("view-patient-profile", [
        patient({
          contained: [{ resourceType: "Organization", id: "o1", name: "Clinic" }],
          managingOrganization: { reference: "#o1" },
        }),
      ]),
    );
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  });
});
