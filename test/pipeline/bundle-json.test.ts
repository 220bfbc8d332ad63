import type { Bundle } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { bundleJson } from "../../src/fhir/bundle-json.js";

/** Frozen all the way down, as the store keeps a record. */
function deepFrozen<T>(value: T): T {
  if (value !== null && typeof value === "object") {
    for (const child of Object.values(value)) deepFrozen(child);
    Object.freeze(value);
  }
  return value;
}

const allergy = () =>
  deepFrozen({
    resourceType: "AllergyIntolerance",
    id: "a1",
    meta: { versionId: "1", lastUpdated: "2026-01-15T05:30:00.000Z" },
    code: { coding: [{ system: "http://snomed.info/sct", code: "91936005", display: "Allergy to penicillin" }] },
    patient: { reference: "Patient/p1" },
  });
const patient = deepFrozen({
  resourceType: "Patient",
  id: "p1",
  name: [{ text: "فاطمة الهاشمي", given: ["فاطمة"], family: "الهاشمي" }],
  note: 'quotes " and \\ and @@ in a value',
});

const bundle = (entries: unknown[]): Bundle =>
  ({
    resourceType: "Bundle",
    id: "b1",
    type: "message",
    timestamp: "2026-01-15T09:30:00+04:00",
    entry: entries,
  }) as Bundle;

describe("bundleJson: the text JSON.stringify gives, stored resources serialized once", () => {
  it("a Bundle of new and frozen (stored) resources, again and again (from the cache), gives JSON.stringify's text", () => {
    const stored = allergy();
    const others = [allergy(), allergy()];
    for (let round = 0; round < 3; round++) {
      const body = bundle([
        { fullUrl: "urn:uuid:1", resource: { resourceType: "MessageHeader", id: `h${round}` } },
        { fullUrl: "http://x/AllergyIntolerance/a1", resource: stored, search: { mode: "match" } },
        { resource: patient, fullUrl: "http://x/Patient/p1" },
        { fullUrl: "http://x/AllergyIntolerance/a2", resource: others[0] },
        { fullUrl: "http://x/AllergyIntolerance/a3", resource: others[1] },
        { fullUrl: "urn:uuid:2" },
      ]);
      expect(bundleJson(body)).toBe(JSON.stringify(body));
    }
  });

  it("bodies that are not Bundles, or hold no frozen resource, are JSON.stringify's text", () => {
    const outcome = { resourceType: "OperationOutcome", issue: [{ severity: "error", code: "invalid" }] };
    expect(bundleJson(outcome)).toBe(JSON.stringify(outcome));
    const open = bundle([{ resource: { resourceType: "Patient", id: "x" } }]);
    expect(bundleJson(open)).toBe(JSON.stringify(open));
    expect(bundleJson({ entry: "not an array" })).toBe(JSON.stringify({ entry: "not an array" }));
  });

  it("a frozen resource with a part that can still change is serialized anew each time, not kept", () => {
    const changing = { text: "before" };
    const resource = Object.freeze({ resourceType: "Basic", id: "b", code: changing });
    const body = () => bundle([{ resource }, { resource: patient }, { resource: allergy() }, { resource: allergy() }]);
    expect(bundleJson(body())).toBe(JSON.stringify(body()));
    changing.text = "after";
    expect(bundleJson(body())).toBe(JSON.stringify(body()));
    expect(bundleJson(body())).toContain('"text":"after"');
  });
});
