import type { AllergyIntolerance, Bundle, BundleEntry, Patient } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { ReplayCache } from "../../src/pipeline/replay-cache.js";
import { listCalls } from "../admin/admin-client.js";
import { envelope, messageBundle, post, responseHeader, STANDARD } from "../support/messages.js";

const EID = "urn:ae:emirates-id";
const who = { system: EID, value: "784-1987-7777777-6" };

const allergyMessage = (id: string, text = "sesame"): Bundle =>
  messageBundle(
    "add-allergy",
    [
      {
        resourceType: "AllergyIntolerance",
        clinicalStatus: {
          coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", code: "active" }],
        },
        code: { text },
        patient: { identifier: who },
      } as AllergyIntolerance,
    ],
    { id },
  );

/** The same JSON with every object's keys in reverse order. */
function reordered<T>(value: T): T {
  if (Array.isArray(value)) return value.map(reordered) as T;
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.keys(value)
      .reverse()
      .map((k) => [k, reordered((value as Record<string, unknown>)[k])]),
  ) as T;
}

/** The patient's allergies with this text, as view-patient-profile lists them. */
async function allergiesNamed(app: ReturnType<typeof createApp>["app"], text: string): Promise<number> {
  const view = await post(
    app,
    messageBundle("view-patient-profile", [{ resourceType: "Patient", identifier: [who] } as Patient]),
  );
  return ((view.body as Bundle).entry ?? []).filter(
    (e: BundleEntry) =>
      e.resource?.resourceType === "AllergyIntolerance" && (e.resource as AllergyIntolerance).code?.text === text,
  ).length;
}

describe("a reused MessageHeader id (CONTRACT §5)", () => {
  it("an exact resend — other Bundle.id, timestamp and meta, keys reordered — gets the original answer once applied", async () => {
    const { app } = createApp();
    const original = allergyMessage("dup-exact");
    const first = await post(app, original);
    expect(first.status).toBe(200);
    expect(first.headers.get("x-sandbox-duplicate")).toBeNull();

    const resend = reordered({
      ...structuredClone(original),
      id: "another-bundle-id",
      timestamp: "2026-11-23T10:00:00+04:00",
      meta: { lastUpdated: "2026-11-23T06:00:00Z" },
    });
    const again = await post(app, resend);

    expect(again.status).toBe(200);
    expect(again.headers.get("x-sandbox-duplicate")).toBe("true");
    expect(again.body).toEqual(first.body);
    expect(await allergiesNamed(app, "sesame")).toBe(1);
    const calls = await listCalls(app, "messageId=dup-exact");
    expect(calls.map((c) => c.duplicate ?? false)).toEqual([false, true]);
  });

  it("the same id with other content is a 409 duplicate naming the earlier call; nothing is applied", async () => {
    const { app } = createApp();
    const original = allergyMessage("dup-changed", "sesame");
    const first = await post(app, original);
    expect(first.status).toBe(200);
    const [earlier] = await listCalls(app, "messageId=dup-changed");

    const changed = await post(app, allergyMessage("dup-changed", "mustard"));

    expect(changed.status).toBe(409);
    expect(changed.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    expect(changed.headers.get("x-sandbox-duplicate")).toBeNull();
    expect(changed.body.resourceType).toBe("OperationOutcome");
    expect(changed.body.issue).toHaveLength(1);
    const [issue] = changed.body.issue;
    expect(issue).toMatchObject({ severity: "error", code: "duplicate", expression: ["Bundle.entry[0].resource.id"] });
    expect(issue.diagnostics).toContain("dup-changed");
    expect(issue.diagnostics).toContain(`call ${earlier?.id}`);
    expect(issue.diagnostics).toContain(new Date(earlier?.at as string).toISOString());
    expect(await allergiesNamed(app, "mustard")).toBe(0);
    expect(await allergiesNamed(app, "sesame")).toBe(1);
    // The id still belongs to the first message: its exact resend is answered as before.
    const resent = await post(app, original);
    expect([resent.status, resent.headers.get("x-sandbox-duplicate")]).toEqual([200, "true"]);
    expect(resent.body).toEqual(first.body);
  });

  it("a message refused with 400 may be resent, fixed, with the same id", async () => {
    const { app } = createApp();
    const broken = allergyMessage("dup-fixed");
    const allergy = broken.entry?.[1]?.resource as AllergyIntolerance & { code?: unknown };
    delete allergy.code;
    const refused = await post(app, broken);
    expect(refused.status).toBe(400);

    const fixed = await post(app, allergyMessage("dup-fixed", "kiwi"));
    expect(fixed.status).toBe(200);
    expect(fixed.headers.get("x-sandbox-duplicate")).toBeNull();
    expect(responseHeader(fixed.body).response).toEqual({ identifier: "dup-fixed", code: "ok" });
    expect(await allergiesNamed(app, "kiwi")).toBe(1);
  });

  it("the envelope's form does not matter: the same Bundle serialized with other whitespace is an exact resend", async () => {
    const { app } = createApp();
    const original = allergyMessage("dup-spaces");
    const first = await post(app, original);
    const res = await app.request(STANDARD, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ content: JSON.stringify(original, null, 2) }, null, 1),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-sandbox-duplicate")).toBe("true");
    expect(await res.json()).toEqual(first.body);
    expect(envelope(original)).not.toBe(JSON.stringify({ content: JSON.stringify(original, null, 2) }, null, 1));
  });
});

// The duplicate memory outlives the journal's calls: it is bounded by the same byte budget
// (--journal-max-bytes), or a sandbox whose journal drops large calls would still hold their answers.
describe("the duplicate memory's budget", () => {
  it("an answer past --journal-max-bytes of newer ones is forgotten: its resend is processed again", async () => {
    // Each answer is a few kilobytes: 40 KB holds some, not twenty.
    const { app } = createApp({ journalMaxBytes: 40_000 });
    const first = allergyMessage("budget-first", "sesame");
    expect((await post(app, first)).headers.get("x-sandbox-duplicate")).toBeNull();
    expect((await post(app, first)).headers.get("x-sandbox-duplicate")).toBe("true");
    const later = Array.from({ length: 20 }, (_, i) => allergyMessage(`budget-${i}`, "x".repeat(1000)));
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
