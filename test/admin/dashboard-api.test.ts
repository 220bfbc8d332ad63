import type { AllergyIntolerance, Bundle, Patient } from "fhir/r4.js";
import type { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { createApp } from "../../src/app.js";
import { subscriptionMessage } from "../orders/pharmacy-client.js";
import { post } from "../support/messages.js";
import { startReceiver } from "../support/receiver.js";
import { addAllergy, EMIRATES_ID } from "../ui/messages.js";
import { admin } from "./admin-client.js";

// What the admin API gained for the dashboard: call filters and summaries, the places of a call's issues,
// resend, one call as a scenario rule, the patients list, the push queue and pharmacies' last deliveries.

const QUIET = { info: () => undefined, error: () => undefined };

/** add-allergy for another patient (the shipped magic patients: scenarios/10-magic-patients.yaml). */
function withPatient(emiratesId: string): Bundle {
  const bundle = addAllergy();
  const patient = bundle.entry?.[2]?.resource as Patient;
  patient.identifier = [{ system: "urn:ae:emirates-id", value: emiratesId }];
  return bundle;
}

/** The three mistakes of the browser test, and where they are: written by hand from the message. */
const invalidAllergy = () =>
  addAllergy((a: AllergyIntolerance) => {
    (a.clinicalStatus?.coding?.[0] as { code: string }).code = "bogus";
    Object.assign(a, { onsetAge: { value: "x" } });
    delete (a as Partial<AllergyIntolerance>).patient;
  });

/**
 * A journal of five calls: (1) add-allergy 200 ok, (2) a scripted business refusal 200 fatal-error,
 * (3) a scripted 500 transient-error, (4) an invalid message 400, (5) GET /nowhere 404.
 */
async function fiveCalls() {
  const sandbox = createApp({ scenarios: "scenarios" }, { logger: QUIET });
  const { app } = sandbox;
  const ids: string[] = [];
  const expectStatus = async (reply: Promise<{ status: number; headers: Headers }>, status: number) => {
    const r = await reply;
    expect(r.status).toBe(status);
    ids.push(r.headers.get("x-sandbox-call-id") as string);
  };
  await expectStatus(post(app, addAllergy()), 200);
  await expectStatus(post(app, withPatient("784-1900-0000422-7")), 200);
  await expectStatus(post(app, withPatient("784-1900-0000500-0")), 500);
  await expectStatus(post(app, invalidAllergy()), 400);
  await expectStatus(Promise.resolve(app.request("/nowhere")), 404);
  return { sandbox, app, ids };
}

async function idsOf(app: Hono, query: string): Promise<string[]> {
  const reply = await admin(app, "GET", `/calls?${query}`);
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return (reply.body.calls as Array<{ id: string }>).map((c) => c.id);
}

describe("GET /__admin/calls: filters a person looks for", () => {
  it("by HTTP status or class, by response code, by patient, by free text", async () => {
    const { app, ids } = await fiveCalls();
    const [ok, refused, failed, invalid, nowhere] = ids;
    const cases: Array<[string, Array<string | undefined>]> = [
      ["status=200", [ok, refused]],
      ["status=5xx", [failed]],
      ["status=4xx", [invalid, nowhere]],
      ["code=ok", [ok]],
      ["code=fatal-error", [refused]],
      ["code=transient-error", [failed]],
      // The invalid message is about the README's patient too.
      [`patient=${EMIRATES_ID}`, [ok, invalid]],
      ["patient=urn%3Aae%3Aemirates-id%7C784-1900-0000422-7", [refused]],
      ["q=PENICILLIN", [ok, refused, failed, invalid]],
      ["q=%2Fnowhere", [nowhere]],
      ["status=200&code=fatal-error", [refused]],
      ["q=no-such-text-anywhere", []],
    ];
    for (const [query, expected] of cases) expect(await idsOf(app, query), query).toEqual(expected);
  });

  it("newest first with order=desc, a page at a time", async () => {
    const { app, ids } = await fiveCalls();
    const first = await admin(app, "GET", "/calls?order=desc&limit=2&view=summary");
    expect(first.body.calls.map((c: { id: string }) => c.id)).toEqual([ids[4], ids[3]]);
    const second = await admin(app, "GET", `/calls?order=desc&limit=2&view=summary&cursor=${first.body.next}`);
    expect(second.body.calls.map((c: { id: string }) => c.id)).toEqual([ids[2], ids[1]]);
  });

  it("view=summary: the row a list shows, without headers or bodies", async () => {
    const { app, ids } = await fiveCalls();
    const reply = await admin(app, "GET", "/calls?view=summary&code=fatal-error");
    expect(reply.body.calls).toEqual([
      {
        id: ids[1],
        at: expect.any(String),
        direction: "inbound",
        method: "POST",
        path: "/uae-fhir/r4/$process-message",
        operation: "add-allergy",
        messageId: expect.any(String),
        status: 200,
        code: "fatal-error",
        rule: "magic-business-refusal",
        durationMs: expect.any(Number),
      },
    ]);
  });

  it("refuses a filter it cannot read", async () => {
    const { app } = createApp({}, { logger: QUIET });
    for (const query of ["status=20", "status=6xx", "code=okay", "view=all"]) {
      const reply = await admin(app, "GET", `/calls?${query}`);
      expect(reply.status, query).toBe(400);
      expect(reply.body.issue[0].diagnostics).toMatch(/^Bad call filter: /);
    }
  });
});

describe("GET /__admin/calls/{id}: issues and where they point", () => {
  it("gives each issue the JSON path of the node its FHIRPath names in the request Bundle", async () => {
    const { app, ids } = await fiveCalls();
    const reply = await admin(app, "GET", `/calls/${ids[3]}`);
    const byCode = Object.fromEntries(
      (reply.body.issues as Array<{ code: string; locations: unknown }>).map((i) => [i.code, i.locations]),
    );
    expect(byCode).toEqual({
      "code-invalid": [["entry", 1, "resource", "clinicalStatus", "coding", 0, "code"]],
      // A choice element: FHIRPath says onsetAge (or onset), JSON has onsetAge.
      structure: [["entry", 1, "resource", "onsetAge", "value"]],
      // A missing element: at its parent.
      required: [["entry", 1, "resource"]],
    });
  });

  it("reads the issues of a refusal inside a response message, and has none for an ok answer", async () => {
    const { app, ids } = await fiveCalls();
    const refused = await admin(app, "GET", `/calls/${ids[1]}`);
    expect(refused.body.issues.map((i: { code: string }) => i.code)).toEqual(["business-rule"]);
    expect((await admin(app, "GET", `/calls/${ids[0]}`)).body.issues).toEqual([]);
  });
});

describe("POST /__admin/calls/{id}/resend", () => {
  it("sends the call again: with a new MessageHeader id it is processed again, as it was it is a resend", async () => {
    const { app, ids } = await fiveCalls();
    const original = (await admin(app, "GET", `/calls/${ids[0]}`)).body;

    const fresh = await admin(app, "POST", `/calls/${ids[0]}/resend`, { body: { newMessageId: true } });
    expect(fresh.status).toBe(201);
    expect(fresh.body.status).toBe(200);
    const again = (await admin(app, "GET", `/calls/${fresh.body.callId}`)).body;
    expect(again.messageId).not.toBe(original.messageId);
    expect(again.duplicate).toBeUndefined();
    expect(again.response.body.entry[0].resource.response.code).toBe("ok");

    const same = await admin(app, "POST", `/calls/${ids[0]}/resend`);
    const resent = (await admin(app, "GET", `/calls/${same.body.callId}`)).body;
    expect(resent.messageId).toBe(original.messageId);
    expect(resent.duplicate).toBe(true);
  });

  it("refuses an unknown call and bad options", async () => {
    const { app, ids } = await fiveCalls();
    expect((await admin(app, "POST", "/calls/999/resend")).status).toBe(404);
    expect((await admin(app, "POST", `/calls/${ids[0]}/resend`, { body: { newId: true } })).status).toBe(400);
  });
});

describe("GET /__admin/calls/export?format=scenario&id=", () => {
  it("exports that one call as a scenario rule", async () => {
    const { app, ids } = await fiveCalls();
    const res = await app.request(`/__admin/calls/export?format=scenario&id=${ids[1]}`);
    expect(res.status).toBe(200);
    const scenario = parse(await res.text());
    expect(scenario.rules).toHaveLength(1);
    expect(scenario.rules[0].when.operation).toBe("add-allergy");
    expect((await app.request("/__admin/calls/export?format=scenario&id=999")).status).toBe(404);
  });
});

describe("GET /__admin/patients", () => {
  it("lists the patients the sandbox knows, most recent first, and finds them by identifier", async () => {
    const { app } = createApp({}, { logger: QUIET });
    await post(app, addAllergy());
    await post(app, withPatient("784-1985-0000001-7"));
    const all = await admin(app, "GET", "/patients");
    expect(all.body.patients.map((p: { identifier: Array<{ value: string }> }) => p.identifier[0]?.value)).toEqual([
      "784-1985-0000001-7",
      EMIRATES_ID,
    ]);
    // The message's allergy beside the generated profile's.
    expect(all.body.patients[1].records.AllergyIntolerance).toBeGreaterThanOrEqual(2);
    const found = await admin(app, "GET", "/patients?q=1234567");
    expect(found.body).toMatchObject({ total: 1, patients: [{ identifier: [{ value: EMIRATES_ID }] }] });
    expect((await admin(app, "GET", "/patients?limit=1")).body.patients).toHaveLength(1);
    expect((await admin(app, "GET", "/patients?limit=0")).status).toBe(400);
  });
});

describe("the push queue, pharmacies' last delivery, pushes and the allocation policy", () => {
  it("counts a push in flight in GET /__admin/health, and shows its outcome on the pharmacy", async () => {
    const receiver = await startReceiver(() => "hang");
    const { app } = createApp({}, { logger: QUIET });
    try {
      expect((await post(app, subscriptionMessage("PH-Q-1", receiver.url))).status).toBe(200);
      expect((await admin(app, "GET", "/pharmacies")).body.pharmacies[0].lastDelivery).toBeNull();
      expect((await admin(app, "POST", "/orders", { body: { pharmacies: ["PH-Q-1"] } })).status).toBe(201);
      await receiver.next();
      expect((await admin(app, "GET", "/health")).body.pushes).toEqual({
        pending: 1,
        inFlight: 1,
        queued: 0,
        concurrency: 32,
        // No asynchronous answer ($process-message?async=true) held: a push is not one.
        asyncAnswers: { held: 0, waiting: 0 },
      });
      receiver.release();
      const wait = await admin(app, "POST", "/calls/wait", {
        body: { operation: "order-fulfillment-request", direction: "outbound", count: 1, timeoutMs: 4000 },
      });
      expect(wait.body.ok).toBe(true);
      await expect
        .poll(async () => (await admin(app, "GET", "/health")).body.pushes.pending, { timeout: 4000 })
        .toBe(0);
      expect((await admin(app, "GET", "/pharmacies")).body.pharmacies[0].lastDelivery).toMatchObject({
        operation: "order-fulfillment-request",
        attempt: 1,
        status: 200,
        error: null,
      });
    } finally {
      await receiver.close();
    }
  });

  it("names the messages the sandbox sends (CONTRACT §3) and the allocation policy", async () => {
    const { app } = createApp({ allocation: "manual" }, { logger: QUIET });
    const ops = await admin(app, "GET", "/operations");
    expect(ops.body.pushes.map((p: { id: string }) => p.id)).toEqual(["order-fulfillment-request", "order-allocation"]);
    expect((await admin(app, "GET", "/orders")).body).toEqual({ orders: [], allocation: "manual" });
  });
});
