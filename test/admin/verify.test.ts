import type { AllergyIntolerance, Patient } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { example, messageBundle, post } from "../support/messages.js";
import { admin, listCalls } from "./admin-client.js";

type App = ReturnType<typeof createApp>["app"];

const cashew = () => example<AllergyIntolerance>("allergyintolerance-example.json");
const fish = () => example<AllergyIntolerance>("allergyintolerance-fishallergy.json");
const patient = () => example<Patient>("patient-example.json");

/** SNOMED 227493005 "cashew nuts" is the code of allergyintolerance-example.json only. */
const CASHEW = "Bundle.entry.resource.ofType(AllergyIntolerance).code.coding.where(code = '227493005').exists()";

const verify = (app: App, query: unknown) => admin(app, "POST", "/calls/verify", { body: query });

async function send(app: App, event: string, focus: AllergyIntolerance | Patient, id?: string): Promise<void> {
  const reply = await post(app, messageBundle(event, [focus], id === undefined ? {} : { id }));
  if (reply.status !== 200) throw new Error(`setup message ${event} answered ${reply.status}`);
}

describe("POST /__admin/calls/verify (CONTRACT §9)", () => {
  it("matches by operation", async () => {
    const { app } = createApp();
    await send(app, "add-allergy", cashew(), "msg-allergy");
    await send(app, "view-patient-profile", patient(), "msg-profile");

    const reply = await verify(app, { operation: "add-allergy" });

    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ ok: true, matched: 1, nearMisses: [] });
    const calls = await listCalls(app);
    expect(reply.body.callIds).toEqual([calls[0].id]);
  });

  it("matches a FHIRPath `where` over the request Bundle", async () => {
    const { app } = createApp();
    await send(app, "add-allergy", fish(), "msg-fish");
    await send(app, "add-allergy", cashew(), "msg-cashew");

    const reply = await verify(app, { operation: "add-allergy", where: CASHEW });

    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ ok: true, matched: 1 });
    const calls = await listCalls(app);
    expect(reply.body.callIds).toEqual([calls.find((c) => c.messageId === "msg-cashew").id]);
  });

  it("is ok:false (a 200) with no matching call", async () => {
    const { app } = createApp();

    const reply = await verify(app, { operation: "add-allergy" });

    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ ok: false, matched: 0, nearMisses: [] });
  });

  // Two cashew add-allergy calls and one fish add-allergy call are in the journal for each case.
  it.each([
    [{}, true, "default: at least one"],
    [{ count: 2 }, true, "exactly the count"],
    [{ count: 1 }, false, "fewer than found"],
    [{ count: 3 }, false, "more than found"],
    [{ count: 0 }, false, "none, but there are some"],
    [{ atLeast: 2 }, true, "atLeast met exactly"],
    [{ atLeast: 3 }, false, "atLeast not met"],
    [{ atMost: 2 }, true, "atMost met exactly"],
    [{ atMost: 1 }, false, "atMost exceeded"],
    [{ atLeast: 1, atMost: 3 }, true, "inside a range"],
    [{ atLeast: 3, atMost: 5 }, false, "below a range"],
  ])("counts %j → ok %s (%s)", async (counts, ok, _why) => {
    const { app } = createApp();
    await send(app, "add-allergy", cashew());
    await send(app, "add-allergy", fish());
    await send(app, "add-allergy", cashew());

    const reply = await verify(app, { operation: "add-allergy", where: CASHEW, ...counts });

    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ ok, matched: 2 });
  });

  it.each([
    [{ count: 0 }, true],
    [{ atMost: 0 }, true],
    [{}, false],
  ])("with no calls at all, %j → ok %s", async (counts, ok) => {
    const { app } = createApp();

    const reply = await verify(app, { operation: "add-allergy", ...counts });

    expect(reply.body).toMatchObject({ ok, matched: 0 });
  });

  it("lists near misses with readable reasons, the closest first", async () => {
    const { app } = createApp();
    await send(app, "add-allergy", fish(), "msg-fish");
    await send(app, "view-patient-profile", patient(), "msg-profile");
    await post(app, "not json at all");

    const reply = await verify(app, { operation: "add-allergy", where: CASHEW });

    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ ok: false, matched: 0 });
    const calls = await listCalls(app);
    const idOf = (messageId: string | null) => calls.find((c) => c.messageId === messageId).id;
    const misses = reply.body.nearMisses;
    expect(misses.map((m: { callId: string }) => m.callId).sort()).toEqual(calls.map((c) => c.id).sort());
    // Right operation, only the `where` false: the nearest miss.
    expect(misses[0]).toMatchObject({ callId: idOf("msg-fish"), operation: "add-allergy", direction: "inbound" });
    expect(misses[0].reasons).toHaveLength(1);
    expect(misses[0].reasons[0]).toMatch(/where .* is false/);
    expect(Date.parse(misses[0].at)).not.toBeNaN();
    const profile = misses.find((m: { callId: string }) => m.callId === idOf("msg-profile"));
    expect(profile.reasons).toContain("operation was view-patient-profile, expected add-allergy");
    const unreadable = misses.find((m: { callId: string }) => m.callId === idOf(null));
    expect(unreadable.operation).toBeNull();
    expect(unreadable.reasons.join(" ")).toMatch(/not recognised/);
    expect(unreadable.reasons.join(" ")).toMatch(/no readable message Bundle/);
  });

  it("has no near misses when the expectation holds", async () => {
    const { app } = createApp();
    await send(app, "add-allergy", cashew());
    await send(app, "view-patient-profile", patient());

    const reply = await verify(app, { operation: "add-allergy" });

    expect(reply.body).toMatchObject({ ok: true, nearMisses: [] });
  });

  it.each([
    ["inbound", true, 1],
    ["outbound", false, 0],
  ])("filters by direction %s", async (direction, ok, matched) => {
    const { app } = createApp();
    await send(app, "add-allergy", cashew());

    const reply = await verify(app, { operation: "add-allergy", direction });

    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ ok, matched });
    if (!ok) expect(reply.body.nearMisses[0].reasons).toContain("direction was inbound, expected outbound");
  });

  it.each([
    ["an invalid FHIRPath", { operation: "add-allergy", where: "Bundle.entry.where(" }, /FHIRPath/],
    ["count with atLeast", { operation: "add-allergy", count: 1, atLeast: 1 }, /count/],
    ["count with atMost", { operation: "add-allergy", count: 1, atMost: 1 }, /count/],
    ["an unknown key", { operation: "add-allergy", times: 2 }, /times/],
    ["a negative count", { operation: "add-allergy", count: -1 }, /count/],
    ["a count that is not a number", { operation: "add-allergy", count: "two" }, /count/],
    ["a direction that is not inbound/outbound", { operation: "add-allergy", direction: "sideways" }, /direction/],
    ["a body that is not JSON", "{operation: add-allergy", /JSON/],
  ])("answers 400 with an OperationOutcome for %s", async (_, query, diagnostics) => {
    const { app } = createApp();
    await send(app, "add-allergy", cashew());

    const reply = await verify(app, query);

    expect(reply.status).toBe(400);
    expect(reply.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    expect(reply.body).toMatchObject({ resourceType: "OperationOutcome", issue: [{ severity: "error" }] });
    expect(reply.body.issue[0].diagnostics).toMatch(diagnostics);
  });
});
