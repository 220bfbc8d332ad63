import { describe, expect, it } from "vitest";
import type { CallRecord } from "../../src/journal/call-record.js";
import { ResourceIndex } from "../../src/journal/resource-index.js";

// The index finds each RESTful fullUrl (…/{type}/{id}, R4 bundle.html) in a body as the sandbox writes it: a Bundle,
// pretty or not, or the JSON string of the {"content": …} envelope; urn: fullUrls and other URLs are not read paths.

const call = (id: string) => ({ id }) as unknown as CallRecord;
const ids = (index: ResourceIndex, type: string, id: string) => [...index.calls(type, id)].map((c) => c.id);

const BASE = "http://localhost:8080/uae-fhir/r4";
const bundle = {
  resourceType: "Bundle",
  entry: [
    { fullUrl: "urn:uuid:0c3a5a3e-6f3e-4b8e-9d3a-1f2b3c4d5e01", resource: { resourceType: "MessageHeader" } },
    { fullUrl: `${BASE}/OperationOutcome/oo-1`, resource: { resourceType: "OperationOutcome", id: "oo-1" } },
    { fullUrl: `${BASE}/Patient/p.1`, resource: { resourceType: "Patient", id: "p.1" } },
    { fullUrl: `${BASE}/Patient/p.1/_history/2`, resource: { resourceType: "Patient", id: "p.1" } },
  ],
};

describe("the journal's index of RESTful fullUrls", () => {
  it.each([
    ["a Bundle", JSON.stringify(bundle)],
    ["a pretty Bundle", JSON.stringify(bundle, null, 2)],
    ["the envelope", JSON.stringify({ content: JSON.stringify(bundle) })],
  ])("reads the fullUrls of %s", (_, body) => {
    const index = new ResourceIndex();
    index.add(call("1"), body);
    expect(ids(index, "OperationOutcome", "oo-1")).toEqual(["1"]);
    // Named twice (its own entry and a _history URL, which is not a read path of this shape): one call.
    expect(ids(index, "Patient", "p.1")).toEqual(["1"]);
    expect(index.size).toEqual({ resources: 2, calls: 1 });
  });

  it("gives the calls newest first, and forgets a call when it is removed, and all on clear", () => {
    const index = new ResourceIndex();
    const body = JSON.stringify(bundle);
    for (const id of ["1", "2", "3"]) index.add(call(id), body);
    const [first] = [...index.calls("Patient", "p.1")].reverse();
    expect(ids(index, "Patient", "p.1")).toEqual(["3", "2", "1"]);
    index.remove(first as CallRecord);
    expect(ids(index, "Patient", "p.1")).toEqual(["3", "2"]);
    expect(index.size).toEqual({ resources: 2, calls: 2 });
    index.clear();
    expect(ids(index, "Patient", "p.1")).toEqual([]);
    expect(index.size).toEqual({ resources: 0, calls: 0 });
  });

  it("keeps nothing of a body without a RESTful fullUrl", () => {
    const index = new ResourceIndex();
    index.add(call("1"), '{"resourceType":"OperationOutcome","issue":[]}');
    index.add(call("2"), '{"entry":[{"fullUrl":"urn:uuid:1"},{"fullUrl":"http://x/not a path"}]}');
    index.add(call("3"), undefined);
    expect(index.size).toEqual({ resources: 0, calls: 0 });
  });
});

describe("the index when one resource is carried by many calls (a patient named by every answer)", () => {
  const body = JSON.stringify(bundle);
  const filled = (n: number) => {
    const index = new ResourceIndex();
    const calls = Array.from({ length: n }, (_, i) => call(String(i + 1)));
    for (const c of calls) index.add(c, body);
    return { index, calls };
  };

  it("drops calls oldest first, as the journal does, and still lists the rest newest first", () => {
    const { index, calls } = filled(1000);
    for (const c of calls.slice(0, 990)) index.remove(c);
    expect(ids(index, "Patient", "p.1")).toEqual([
      "1000",
      "999",
      "998",
      "997",
      "996",
      "995",
      "994",
      "993",
      "992",
      "991",
    ]);
    expect(index.size).toEqual({ resources: 2, calls: 10 });
    // More calls after the drops, then one taken out of the middle.
    for (const id of ["1001", "1002"]) index.add(call(id), body);
    index.remove(calls[994] as CallRecord);
    expect(ids(index, "OperationOutcome", "oo-1")).toEqual([
      "1002",
      "1001",
      "1000",
      "999",
      "998",
      "997",
      "996",
      "994",
      "993",
      "992",
      "991",
    ]);
    for (const c of calls.slice(990)) index.remove(c);
    expect(ids(index, "Patient", "p.1")).toEqual(["1002", "1001"]);
  });

  it("keeps a single carrier without a queue once the others are dropped, and forgets the key with the last", () => {
    const { index, calls } = filled(40);
    for (const c of calls.slice(0, 39)) index.remove(c);
    expect(ids(index, "Patient", "p.1")).toEqual(["40"]);
    index.remove(calls[39] as CallRecord);
    expect(ids(index, "Patient", "p.1")).toEqual([]);
    expect(index.size).toEqual({ resources: 0, calls: 0 });
  });

  it("does not shift every later call when the oldest goes (10,000 drops, a few compactions)", () => {
    const { index, calls } = filled(10_000);
    const splice = Array.prototype.splice;
    let moved = 0;
    // Counts the slots each splice shifts: removing the oldest by splice(0, 1) would shift ~10,000 per drop.
    Array.prototype.splice = function (this: unknown[], start: number, ...rest: unknown[]) {
      moved += Math.max(0, this.length - start);
      return (splice as (...a: unknown[]) => unknown[]).call(this, start, ...rest);
    } as typeof splice;
    try {
      for (const c of calls.slice(0, 9_999)) index.remove(c);
    } finally {
      Array.prototype.splice = splice;
    }
    expect(ids(index, "Patient", "p.1")).toEqual(["10000"]);
    expect(moved).toBeLessThan(2 * 2 * 10_000);
  });
});
