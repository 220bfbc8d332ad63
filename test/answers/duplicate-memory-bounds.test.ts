import type { AllergyIntolerance, Bundle } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { ReplayCache } from "../../src/pipeline/replay-cache.js";
import { messageBundle, post } from "../support/messages.js";

// The duplicate memory outlives the journal's calls: it is bounded by the same byte budget
// (--journal-max-bytes), or a sandbox whose journal drops large calls would still hold their answers.

const allergy = (id: string, text: string): Bundle =>
  messageBundle(
    "add-allergy",
    [
      {
        resourceType: "AllergyIntolerance",
        clinicalStatus: {
          coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", code: "active" }],
        },
        code: { text },
        patient: { identifier: { system: "urn:ae:emirates-id", value: "784-1987-7777777-6" } },
      } as AllergyIntolerance,
    ],
    { id },
  );

describe("the duplicate memory's budget", () => {
  it("an answer past --journal-max-bytes of newer ones is forgotten: its resend is processed again", async () => {
    // Each answer is a few kilobytes: 40 KB holds some, not twenty.
    const { app } = createApp({ journalMaxBytes: 40_000 });
    const first = allergy("budget-first", "sesame");
    expect((await post(app, first)).headers.get("x-sandbox-duplicate")).toBeNull();
    expect((await post(app, first)).headers.get("x-sandbox-duplicate")).toBe("true");
    const later = Array.from({ length: 20 }, (_, i) => allergy(`budget-${i}`, "x".repeat(1000)));
    for (const message of later) await post(app, message);

    const resent = await post(app, first);
    expect(resent.status).toBe(200);
    expect(resent.headers.get("x-sandbox-duplicate")).toBeNull();
    // A recent one is still remembered.
    expect((await post(app, later[19] as Bundle)).headers.get("x-sandbox-duplicate")).toBe("true");
  });

  it("ReplayCache: oldest first past the count or the characters; the newest kept however large; a re-remembered id moves up", () => {
    const cache = new ReplayCache<string>(3, { maxChars: 10, sizeOf: (s) => s.length });
    cache.remember("a", "aaaa");
    cache.remember("b", "bbbb");
    expect([cache.size, cache.chars]).toEqual([2, 8]);
    cache.remember("a", "aa");
    cache.remember("c", "cccc");
    // a (2) + b (4) + c (4) = 10: all kept; then d pushes b out first (a was remembered again after it).
    expect([cache.size, cache.chars]).toEqual([3, 10]);
    cache.remember("d", "d");
    expect([cache.get("b"), cache.get("a"), cache.get("c"), cache.get("d")]).toEqual([undefined, "aa", "cccc", "d"]);
    cache.remember("huge", "h".repeat(50));
    expect([cache.size, cache.get("huge")?.length]).toEqual([1, 50]);
    cache.clear();
    expect([cache.size, cache.chars]).toEqual([0, 0]);
  });
});
