import { readFileSync } from "node:fs";
import type { AllergyIntolerance } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { SharedParts } from "../../src/store/shared-parts.js";

const EXAMPLES = new URL("../../../shared/fhir-examples/", import.meta.url);
const text = readFileSync(new URL("allergyintolerance-example.json", EXAMPLES), "utf8");
const allergy = (): AllergyIntolerance => JSON.parse(text);

describe("shared parts of stored records", () => {
  it("makes equal parts of two records one frozen object, and leaves each record's JSON as it was", () => {
    const parts = new SharedParts();
    const a = parts.share({ ...allergy(), id: "a" });
    const b = parts.share({ ...allergy(), id: "b" });

    expect(JSON.stringify(a)).toBe(JSON.stringify({ ...allergy(), id: "a" }));
    expect(JSON.stringify(b)).toBe(JSON.stringify({ ...allergy(), id: "b" }));
    expect(b.clinicalStatus).toBe(a.clinicalStatus);
    expect(b.code).toBe(a.code);
    expect(b.reaction?.[0]?.manifestation).toBe(a.reaction?.[0]?.manifestation);
    expect(b).not.toBe(a);
    for (const record of [a, b]) {
      expect(Object.isFrozen(record)).toBe(true);
      expect(Object.isFrozen(record.code?.coding?.[0])).toBe(true);
      expect(Object.isFrozen(record.reaction?.[0]?.manifestation)).toBe(true);
    }
  });

  it("shares nothing that differs, however deep", () => {
    const parts = new SharedParts();
    const a = parts.share(allergy());
    const other = allergy();
    (other.code?.coding?.[0] as { code: string }).code = "227037003";
    const b = parts.share(other);

    expect(b.code).not.toBe(a.code);
    expect(b.code?.coding?.[0]?.code).toBe("227037003");
    expect(a.code?.coding?.[0]?.code).toBe("227493005");
    expect(b.clinicalStatus).toBe(a.clinicalStatus);
  });

  it("tells key order and types apart", () => {
    const parts = new SharedParts();
    const records = [
      { resourceType: "Basic", a: { x: 1, y: 2 } },
      { resourceType: "Basic", a: { y: 2, x: 1 } },
      { resourceType: "Basic", a: { x: "1", y: 2 } },
      { resourceType: "Basic", a: [1, 2] },
      { resourceType: "Basic", a: { x: 1, y: 2 } },
    ].map((r) => parts.share(r));

    expect(records.map((r) => JSON.stringify(r.a))).toEqual([
      '{"x":1,"y":2}',
      '{"y":2,"x":1}',
      '{"x":"1","y":2}',
      "[1,2]",
      '{"x":1,"y":2}',
    ]);
    expect(new Set(records.map((r) => r.a)).size).toBe(4);
    expect(records[4]?.a).toBe(records[0]?.a);
  });

  it("leaves meta alone: it is each record's own (version, last updated)", () => {
    const parts = new SharedParts();
    const meta = { versionId: "1", lastUpdated: "2026-11-24T10:00:00.000Z" };
    const a = parts.share({ resourceType: "Basic", meta: { ...meta } });
    const b = parts.share({ resourceType: "Basic", meta: { ...meta } });

    expect(b.meta).not.toBe(a.meta);
    expect(Object.isFrozen(b.meta)).toBe(true);
    expect(parts.size).toBe(0);
  });

  it("stays within its bound however many distinct parts come", () => {
    const parts = new SharedParts(100);
    for (let i = 0; i < 5000; i++) parts.share({ resourceType: "Basic", code: { text: `distinct ${i}` } });

    expect(parts.size).toBeLessThanOrEqual(100);
    expect(parts.size).toBeGreaterThan(0);
  });

  it("leaves long parts unshared", () => {
    const parts = new SharedParts(100, 50);
    const note = { text: "x".repeat(100) };
    const a = parts.share({ resourceType: "Basic", note: { ...note } });
    const b = parts.share({ resourceType: "Basic", note: { ...note } });

    expect(b.note).not.toBe(a.note);
    expect(b.note).toEqual(a.note);
  });
});
