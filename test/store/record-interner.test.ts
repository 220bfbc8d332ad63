import { describe, expect, it, vi } from "vitest";
import { RecordInterner } from "../../src/store/record-interner.js";

// What the store keeps: frozen, with one copy of each recurring part and
// vocabulary string, and never a copy that a reader could tell apart.

const SNOMED = "http://snomed.info/sct";
const TEXT = JSON.stringify({
  resourceType: "AllergyIntolerance",
  clinicalStatus: {
    coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", code: "active" }],
  },
  code: { coding: [{ system: SNOMED, code: "91936005", display: "Allergy to penicillin" }] },
  patient: { reference: "Patient/p1", display: "Ahmed Al Mansoori" },
  id: "a1",
  meta: { versionId: "1", lastUpdated: "2026-01-15T09:30:00.000Z" },
});

/** Every object and array in a value, the value included. */
function objectsIn(value: unknown): object[] {
  if (value === null || typeof value !== "object") return [];
  return [value, ...Object.values(value).flatMap(objectsIn)];
}

describe("RecordInterner", () => {
  it("freezes the resource and everything in it, and leaves its JSON as it was", () => {
    const kept = new RecordInterner().keep(JSON.parse(TEXT));

    expect(objectsIn(kept).filter((o) => !Object.isFrozen(o))).toEqual([]);
    expect(JSON.stringify(kept)).toBe(TEXT);
  });

  it("two records alike in a part hold that part once", () => {
    const interner = new RecordInterner();
    const a = interner.keep(JSON.parse(TEXT));
    const b = interner.keep(JSON.parse(TEXT));

    expect(b).not.toBe(a);
    expect(b.clinicalStatus).toBe(a.clinicalStatus);
    expect(b.code).toBe(a.code);
    expect(b.patient).toBe(a.patient);
    expect(JSON.stringify(b)).toBe(TEXT);
  });

  it("a part is shared below a part that differs", () => {
    const interner = new RecordInterner();
    const coding = { system: SNOMED, code: "39579001", display: "Anaphylaxis" };
    const a = interner.keep({
      resourceType: "AllergyIntolerance",
      reaction: [{ manifestation: [{ coding: [coding] }], onset: "2026-01-01" }],
    });
    const b = interner.keep(
      JSON.parse(JSON.stringify({ ...a, reaction: [{ ...a.reaction[0], onset: "2026-02-01" }] })),
    );

    expect(b.reaction).not.toBe(a.reaction);
    expect(b.reaction[0]?.onset).toBe("2026-02-01");
    expect(b.reaction[0]?.manifestation).toBe(a.reaction[0]?.manifestation);
  });

  // Pairs with the same JSON text that a reader can still tell apart: each record keeps its own.
  it.each([
    ["an element set to undefined, and none", { a: undefined, b: 1 }, { b: 1 }],
    ["-0 and 0", { value: -0 }, { value: 0 }],
    ["a Date and its ISO string", { at: new Date(0) }, { at: "1970-01-01T00:00:00.000Z" }],
    ["an object with toJSON, and what it gives", { toJSON: () => ({ b: 1 }) }, { b: 1 }],
  ])("%s stay apart", (_name, first, second) => {
    const interner = new RecordInterner();
    interner.keep({ resourceType: "Basic", part: first });
    const kept = interner.keep({ resourceType: "Basic", part: second });

    expect(kept.part).toBe(second);
    const again = interner.keep({ resourceType: "Basic", part: first });
    expect(again.part).toBe(first);
  });

  it("pools vocabulary strings (status, system, code, display…), not prose", () => {
    const interner = new RecordInterner();
    for (let i = 0; i < 50; i++) {
      interner.keep({
        resourceType: "Observation",
        status: "final",
        code: { coding: [{ system: "http://loinc.org", code: "8867-4", display: "Heart rate" }] },
        note: [{ text: `Measured after exercise, visit ${i}` }],
      });
    }

    expect(interner.size.strings).toBe(4);
  });

  it("does not look up a resource's own meta and narrative: they never recur", () => {
    const interner = new RecordInterner();
    for (let i = 0; i < 50; i++) {
      interner.keep({
        resourceType: "Basic",
        meta: { versionId: "1", lastUpdated: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString() },
        text: { status: "generated", div: `<div xmlns="http://www.w3.org/1999/xhtml">${i}</div>` },
      });
    }

    expect(interner.size.parts).toBe(0);
  });

  it("holds no more than its limits, however many distinct values it is sent", () => {
    const interner = new RecordInterner();
    const small = new RecordInterner({ strings: 100, parts: 50 });
    for (let i = 0; i < 20_000; i++) {
      const record = () => ({
        resourceType: "AllergyIntolerance",
        code: { coding: [{ system: SNOMED, code: `${100000 + i}`, display: `Allergy number ${i}` }] },
      });
      interner.keep(record());
      small.keep(record());
    }

    expect(interner.size.strings).toBeLessThanOrEqual(4_096);
    expect(interner.size.parts).toBeLessThanOrEqual(2_048);
    expect(small.size.strings).toBeLessThanOrEqual(100);
    expect(small.size.parts).toBeLessThanOrEqual(50);
  });
});

describe("a deep, large part", () => {
  it("is serialized at most once: what a hostile message costs stays proportional to its size", () => {
    let node: Record<string, unknown> = { url: "http://example.org/leaf", valueString: "a".repeat(100_000) };
    for (let i = 0; i < 60; i++) node = { url: `http://example.org/level-${i}`, extension: [node] };
    const record = { resourceType: "AllergyIntolerance", extension: [node] };
    let serialized = 0;
    const stringify = JSON.stringify;
    const spy = vi.spyOn(JSON, "stringify").mockImplementation((...args: Parameters<typeof JSON.stringify>) => {
      const text = stringify(...args);
      serialized += text?.length ?? 0;
      return text;
    });
    try {
      new RecordInterner().keep(record);
    } finally {
      spy.mockRestore();
    }

    expect(serialized).toBeLessThan(2 * 100_000);
    expect(Object.isFrozen(node)).toBe(true);
  });
});
