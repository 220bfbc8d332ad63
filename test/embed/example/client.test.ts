import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createSandbox, type Sandbox } from "../../../src/index.js";
import { addAllergy } from "./client.js";

const PENICILLIN = { code: "91936005", display: "Allergy to penicillin" };
const PEANUT = { code: "91935009", display: "Allergy to peanut", criticality: "high" as const };

/** FHIRPath over the request Bundle: the message names this patient. */
const forPatient = (emiratesId: string) =>
  `Bundle.entry.resource.ofType(Patient).identifier.where(value = '${emiratesId}').exists()`;

describe("addAllergy against the sandbox", () => {
  let sandbox: Sandbox;

  beforeAll(async () => {
    sandbox = await createSandbox(); // 127.0.0.1, a free port
  });
  afterAll(() => sandbox.close());
  beforeEach(() => sandbox.reset()); // patients back to fixtures, journal cleared

  it("adds the allergy and returns its server id", async () => {
    const result = await addAllergy(sandbox.url, "784-1990-1234567-6", PENICILLIN);

    expect(result).toMatchObject({ ok: true, attempts: 1 });
    // The sandbox received exactly one add-allergy message, for this patient, with the SNOMED code.
    const check = sandbox.verify({
      operation: "add-allergy",
      where: `${forPatient("784-1990-1234567-6")} and Bundle.entry.resource.ofType(AllergyIntolerance).code.coding.code = '91936005'`,
      count: 1,
    });
    expect(check.ok, JSON.stringify(check.nearMisses)).toBe(true);
  });

  it("sends what the exchange expects, seen from the sandbox's journal", async () => {
    // Start waiting first, then act: waitFor resolves as soon as the call is recorded.
    const arrived = sandbox.waitFor(
      { operation: "add-allergy", where: "Bundle.entry.resource.ofType(AllergyIntolerance).criticality = 'high'" },
      2000,
    );
    const sent = addAllergy(sandbox.url, "784-1985-7654322-1", PEANUT);

    expect((await arrived).ok).toBe(true);
    const result = await sent;
    const [call] = sandbox.calls({ operation: "add-allergy" });
    expect(call?.request.headers["content-type"]).toBe("application/json");
    expect(call?.response?.status).toBe(200);
    expect(result.ok && result.allergyId).toBeTruthy();
  });

  it("retries a 503, honouring Retry-After, with the same message", async () => {
    sandbox.addRules(`
rules:
  - name: allergy-service-down-once
    when:
      operation: add-allergy
      patient: "urn:ae:emirates-id|784-1979-1111111-6"
    times: 1
    respond:
      status: 503
      headers: { Retry-After: "2" }
      outcome: { code: transient, diagnostics: "The allergy service is restarting." }
`);
    const waits: number[] = [];

    const result = await addAllergy(sandbox.url, "784-1979-1111111-6", PENICILLIN, {
      wait: async (ms) => {
        waits.push(ms);
      },
    });

    expect(result).toMatchObject({ ok: true, attempts: 2 });
    expect(waits).toEqual([2000]);
    const calls = sandbox.calls({ operation: "add-allergy" });
    expect(calls.map((c) => [c.rule, c.response?.status])).toEqual([
      ["allergy-service-down-once", 503],
      [null, 200],
    ]);
    expect(new Set(calls.map((c) => c.messageId))).toEqual(new Set([result.messageId]));
  });

  it("gives up after three attempts and reports the outcome", async () => {
    sandbox.addRules({
      rules: [
        {
          name: "allergy-service-down",
          when: { operation: "add-allergy", patient: "urn:ae:emirates-id|784-1979-2222222-5" },
          respond: { status: 503, outcome: { diagnostics: "Down for maintenance." } },
        },
      ],
    });

    const result = await addAllergy(sandbox.url, "784-1979-2222222-5", PENICILLIN, { wait: async () => {} });

    expect(result).toMatchObject({
      ok: false,
      status: 503,
      code: "transient-error",
      diagnostics: ["Down for maintenance."],
      attempts: 3,
    });
    expect(sandbox.verify({ operation: "add-allergy", count: 3 }).ok).toBe(true);
  });
});

describe("addAllergy in-process, without a port", () => {
  let sandbox: Sandbox;

  beforeAll(async () => {
    sandbox = await createSandbox({ listen: false });
  });
  afterAll(() => sandbox.close());

  it("talks to app.fetch through the client's fetch option", async () => {
    const inProcess: typeof fetch = async (input, init) => sandbox.app.fetch(new Request(input, init));

    const result = await addAllergy("http://sandbox.test", "784-1990-1234567-6", PENICILLIN, { fetch: inProcess });

    expect(result).toMatchObject({ ok: true });
    expect(sandbox.url).toBe("");
    expect(sandbox.calls()).toHaveLength(1);
  });
});
