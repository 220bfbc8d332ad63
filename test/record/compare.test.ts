import { describe, expect, it } from "vitest";
import { compareAnswers, type ObservedAnswer } from "../../src/record/compare.js";

const BASE = "http://127.0.0.1:1111/uae-fhir/r4";

/** A response message as a sandbox at `base` answers it; `change` edits a copy. */
// biome-ignore lint/suspicious/noExplicitAny: tests edit arbitrary FHIR JSON
function answer(base = BASE, change: (bundle: any) => void = () => undefined): ObservedAnswer {
  const bundle = {
    resourceType: "Bundle",
    id: "bundle-1",
    type: "message",
    timestamp: "2026-01-31T10:00:00.000Z",
    entry: [
      {
        fullUrl: "urn:uuid:11111111-1111-4111-8111-111111111111",
        resource: {
          resourceType: "MessageHeader",
          id: "11111111-1111-4111-8111-111111111111",
          eventCoding: { code: "add-allergy" },
          source: { endpoint: `${base}/$process-message` },
          response: { identifier: "request-1", code: "ok" },
          focus: [{ reference: `${base}/AllergyIntolerance/a1` }],
        },
      },
      {
        fullUrl: `${base}/AllergyIntolerance/a1`,
        resource: {
          resourceType: "AllergyIntolerance",
          id: "a1",
          meta: { versionId: "1", lastUpdated: "2026-01-31T10:00:00.000Z" },
          code: { coding: [{ system: "http://snomed.info/sct", code: "227493005" }] },
          onsetDateTime: "2004-01-01",
          recordedDate: "2026-01-31T10:00:00Z",
          patient: { reference: "Patient/p1" },
        },
      },
    ],
  };
  change(bundle);
  return { status: 200, body: bundle };
}

const CODE = "Bundle.entry[1].resource.code.coding[0].code";

describe("compareAnswers", () => {
  it.each<[string, ObservedAnswer]>([
    ["the same answer", answer()],
    [
      "new ids, fullUrls, timestamps and the target's own URL",
      answer("http://staging.example.ae/fhir", (b) => {
        b.id = "bundle-2";
        b.timestamp = "2026-02-01T08:00:00+04:00";
        b.entry[0].fullUrl = "urn:uuid:22222222-2222-4222-8222-222222222222";
        b.entry[0].resource.id = "22222222-2222-4222-8222-222222222222";
        b.entry[1].resource.id = "a2";
        b.entry[1].fullUrl = "http://staging.example.ae/fhir/AllergyIntolerance/a2";
        b.entry[0].resource.focus[0].reference = "AllergyIntolerance/a2";
        b.entry[1].resource.meta.lastUpdated = "2026-02-01T08:00:00.123Z";
        b.entry[1].resource.recordedDate = "2026-02-01T08:00:00Z";
      }),
    ],
    ["the same Bundle in a response envelope", { status: 200, body: { content: JSON.stringify(answer().body) } }],
  ])("finds nothing different in %s", (_name, now) => {
    expect(compareAnswers(answer(), now)).toEqual({ same: true, differences: [], total: 0 });
  });

  it.each<[string, ObservedAnswer, Array<{ path: string; recorded: unknown; replayed: unknown }>]>([
    [
      "another code",
      answer(BASE, (b) => {
        b.entry[1].resource.code.coding[0].code = "91935009";
      }),
      [{ path: CODE, recorded: "227493005", replayed: "91935009" }],
    ],
    ["another status", { ...answer(), status: 422 }, [{ path: "status", recorded: 200, replayed: 422 }]],
    [
      "a date without a time part",
      answer(BASE, (b) => {
        b.entry[1].resource.onsetDateTime = "2005-01-01";
      }),
      [{ path: "Bundle.entry[1].resource.onsetDateTime", recorded: "2004-01-01", replayed: "2005-01-01" }],
    ],
    [
      "another version",
      answer(BASE, (b) => {
        b.entry[1].resource.meta.versionId = "2";
      }),
      [{ path: "Bundle.entry[1].resource.meta.versionId", recorded: "1", replayed: "2" }],
    ],
    [
      "focus on another entry",
      answer(BASE, (b) => {
        b.entry[0].resource.focus[0].reference = b.entry[0].fullUrl;
      }),
      [
        {
          path: "Bundle.entry[0].resource.focus[0].reference",
          recorded: "Bundle.entry[1]",
          replayed: "Bundle.entry[0]",
        },
      ],
    ],
    [
      "a reference outside the Bundle",
      answer(BASE, (b) => {
        b.entry[1].resource.patient.reference = "Patient/p2";
      }),
      [{ path: "Bundle.entry[1].resource.patient.reference", recorded: "Patient/p1", replayed: "Patient/p2" }],
    ],
    [
      "an entry missing",
      answer(BASE, (b) => {
        b.entry.pop();
        b.entry[0].resource.focus = undefined;
      }),
      [
        { path: "Bundle.entry[0].resource.focus", recorded: [{ reference: "Bundle.entry[1]" }], replayed: undefined },
        { path: "Bundle.entry[1]", recorded: expect.objectContaining({ fullUrl: "(volatile)" }), replayed: undefined },
      ],
    ],
    [
      "no answer",
      { status: null, body: null, error: "ECONNREFUSED" },
      [{ path: "answer", recorded: "HTTP 200", replayed: "no answer (ECONNREFUSED)" }],
    ],
  ])("reports %s with its FHIRPath", (_name, now, expected) => {
    const comparison = compareAnswers(answer(), now);
    expect(comparison.same).toBe(false);
    expect(comparison.differences).toEqual(expected);
    expect(comparison.total).toBe(expected.length);
  });

  it("two missing answers are the same (a recorded reset, reset again)", () => {
    const none = { status: null, body: null, error: "scripted fault: connection-reset" };
    expect(compareAnswers(none, { status: null, body: null, error: "ECONNRESET" }).same).toBe(true);
  });

  it("lists at most `limit` differences but counts them all", () => {
    const many = (n: number) => ({
      status: 200,
      body: { resourceType: "Basic", extension: Array.from({ length: n }, (_, i) => i) },
    });
    const comparison = compareAnswers(
      many(5),
      { status: 200, body: { resourceType: "Basic", extension: [9, 9, 9, 9, 9] } },
      2,
    );
    expect(comparison.differences.map((d) => d.path)).toEqual(["Basic.extension[0]", "Basic.extension[1]"]);
    expect(comparison.total).toBe(5);
  });
});
