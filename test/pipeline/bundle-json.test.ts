import type { Bundle } from "fhir/r4.js";
import { describe, expect, it, vi } from "vitest";
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

describe("bundleJson writes the text around the stored resources' own", () => {
  const escaped = (body: unknown) =>
    JSON.stringify(body).replace(/</g, "\\u003c").replace(/>/g, "\\u003e").replace(/&/g, "\\u0026");

  it("gives escaped JSON.stringify's text for members that are left out, toJSON, markup, holes and odd entries", () => {
    const stored = deepFrozen({ resourceType: "Basic", id: "s", text: { div: "<div>a & b</div>" } });
    const entries: unknown[] = [
      { fullUrl: "urn:uuid:<1>", resource: stored, skipped: undefined, fn: () => 1, after: { div: "<p>" } },
      { resource: stored, at: new Date(0), ["__proto__"]: { odd: true } },
      // toJSON is given its member's key, and a member whose toJSON gives nothing is left out.
      { resource: stored, keyed: { toJSON: (key: string) => `key ${key}` }, gone: { toJSON: () => undefined } },
      { toJSON: (key: string) => ({ key }), resource: stored },
      undefined,
      null,
      "text & more",
      { resource: { resourceType: "Patient", note: "<b>" } },
    ];
    entries[9] = { resource: stored };
    const body = { resourceType: "Bundle", id: undefined, entry: entries, meta: { tag: "<&>" }, total: Number.NaN };
    expect(bundleJson(body)).toBe(escaped(body));
    expect(bundleJson(body)).toBe(escaped(body));
  });

  it("keeps a stored resource's text from its second answer, even when it is the only one in the Bundle", () => {
    const stored = allergy();
    const stringify = vi.spyOn(JSON, "stringify");
    try {
      for (let round = 0; round < 5; round++) {
        const body = bundle([
          { fullUrl: "urn:uuid:1", resource: { resourceType: "MessageHeader" } },
          { resource: stored },
        ]);
        expect(bundleJson(body)).toBe(escaped(body));
      }
      expect(stringify.mock.calls.filter(([value]) => value === stored)).toHaveLength(2);
    } finally {
      stringify.mockRestore();
    }
  });
});
