import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllergyIntolerance, Bundle } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { envelope, example, messageBundle, responseHeader, STANDARD } from "../support/messages.js";
import { http, killStray, startCli } from "./cli-process.js";

const EID = "urn:ae:emirates-id";
const ALICE = "784-1980-1111111-3";
const BOB = "784-1990-1234567-6";
/** When a rule moved a state: an instant, ISO 8601 in UTC with milliseconds. */
const INSTANT = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

const dirs: string[] = [];
afterEach(async () => {
  await killStray();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The sandbox from dist/ with one scenario file holding `yaml`. */
async function sandbox(yaml: string, args: string[] = []) {
  const dir = mkdtempSync(join(tmpdir(), "scenario-states-test-"));
  dirs.push(dir);
  writeFileSync(join(dir, "rules.yaml"), yaml);
  return (await startCli(["--scenarios", dir, "--no-watch", ...args])).url;
}

const addAllergy = (value: string) =>
  messageBundle("add-allergy", [
    {
      ...example<AllergyIntolerance>("allergyintolerance-example.json"),
      patient: { identifier: { system: EID, value } },
    } as AllergyIntolerance,
  ]);

async function send(url: string, bundle: Bundle) {
  const reply = await http(`${url}${STANDARD}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: envelope(bundle),
  });
  return {
    status: reply.status,
    rule: reply.headers.get("x-sandbox-rule"),
    callId: reply.headers.get("x-sandbox-call-id"),
    code: reply.status === 200 ? responseHeader(reply.json as Bundle).response?.code : undefined,
  };
}

// The first allergy a patient adds is accepted (the built-in answer); the second is refused; after that, the
// built-in behaviour answers again (no rule requires the last state).
const FLOW = `
rules:
  - name: first-accepted
    when: { operation: add-allergy }
    scenario: allergy-flow
    requiredState: Started
    newState: one-added
    respond: { builtIn: true }
  - name: second-refused
    when: { operation: add-allergy }
    scenario: allergy-flow
    requiredState: one-added
    newState: refused-once
    respond:
      status: 422
      outcome: { diagnostics: second allergy refused, response: none }
`;

describe("scenario states shared by rules, per patient (the real CLI)", { timeout: 30_000 }, () => {
  it("two patients go through the flow interleaved, each in its own state", async () => {
    const url = await sandbox(FLOW);
    const steps: Array<[string, string | null, number]> = [
      [ALICE, "first-accepted", 200],
      [BOB, "first-accepted", 200],
      [ALICE, "second-refused", 422],
      [BOB, "second-refused", 422],
      [ALICE, null, 200],
    ];
    const seen = [];
    for (const [patient] of steps) seen.push(await send(url, addAllergy(patient)));
    expect(seen.map((s) => [s.rule, s.status])).toEqual(steps.map(([, rule, status]) => [rule, status]));

    const view = await http(`${url}/__admin/scenarios`);
    expect(view.json.rules[1]).toMatchObject({
      name: "second-refused",
      scenario: { name: "allergy-flow", requiredState: "one-added", newState: "refused-once", stateKey: "patient" },
    });
    const states = await http(`${url}/__admin/scenarios/states`);
    expect(states.status).toBe(200);
    expect(states.json.states).toEqual([
      { scenario: "allergy-flow", key: `${EID}|${ALICE}`, state: "refused-once", changedAt: INSTANT },
      { scenario: "allergy-flow", key: `${EID}|${BOB}`, state: "refused-once", changedAt: INSTANT },
    ]);
    // Alice's state last moved on the third call, Bob's on the fourth.
    const [alice, bob] = states.json.states as Array<{ changedAt: string }>;
    expect(Date.parse(alice?.changedAt as string)).toBeLessThanOrEqual(Date.parse(bob?.changedAt as string));

    // Why the last call of Alice met no rule: the scenario's state, said for each rule.
    const call = await http(`${url}/__admin/calls/${seen[4]?.callId}`);
    const rules = call.json.explanation.rules as Array<{ rule: string; outcome: string; failed?: string }>;
    expect(rules).toEqual([
      expect.objectContaining({
        rule: "first-accepted",
        outcome: "not-matched",
        failed: `scenario allergy-flow is in state "refused-once" for key ${EID}|${ALICE}, the rule requires "Started"`,
      }),
      expect.objectContaining({
        rule: "second-refused",
        outcome: "not-matched",
        failed: `scenario allergy-flow is in state "refused-once" for key ${EID}|${ALICE}, the rule requires "one-added"`,
      }),
    ]);

    // One key back to Started: Alice starts over, Bob does not.
    const reset = await http(`${url}/__admin/scenarios/states?key=${encodeURIComponent(`${EID}|${ALICE}`)}`, {
      method: "DELETE",
    });
    expect(reset.json).toEqual({ reset: 1 });
    expect((await send(url, addAllergy(ALICE))).rule).toBe("first-accepted");
    expect((await send(url, addAllergy(BOB))).rule).toBeNull();

    // POST /__admin/reset puts every scenario back in Started.
    expect((await http(`${url}/__admin/reset`, { method: "POST" })).status).toBe(200);
    expect((await http(`${url}/__admin/scenarios/states`)).json).toEqual({ states: [] });
    expect((await send(url, addAllergy(BOB))).rule).toBe("first-accepted");
  });

  it("two test suites at once, one patient each: each key goes through the flow on its own", async () => {
    const url = await sandbox(FLOW);
    // Each suite's calls in order; the two suites' calls in flight together, as parallel CI jobs would send them.
    const suite = async (patient: string) => {
      const rules = [];
      for (let i = 0; i < 3; i++) rules.push((await send(url, addAllergy(patient))).rule);
      return rules;
    };
    const [alice, bob] = await Promise.all([suite(ALICE), suite(BOB)]);
    expect(alice).toEqual(["first-accepted", "second-refused", null]);
    expect(bob).toEqual(["first-accepted", "second-refused", null]);
    const states = (await http(`${url}/__admin/scenarios/states`)).json.states as Array<{ key: string; state: string }>;
    expect(states.map((s) => [s.key, s.state])).toEqual([
      [`${EID}|${ALICE}`, "refused-once"],
      [`${EID}|${BOB}`, "refused-once"],
    ]);
  });

  it("with --state-file, the states outlive a restart", async () => {
    const dir = mkdtempSync(join(tmpdir(), "scenario-states-file-"));
    dirs.push(dir);
    writeFileSync(join(dir, "rules.yaml"), FLOW);
    const args = ["--scenarios", dir, "--no-watch", "--state-file", join(dir, "state.db")];
    const first = await startCli(args);
    expect((await send(first.url, addAllergy(ALICE))).rule).toBe("first-accepted");
    const before = (await http(`${first.url}/__admin/scenarios/states`)).json.states;
    expect(before).toEqual([
      { scenario: "allergy-flow", key: `${EID}|${ALICE}`, state: "one-added", changedAt: INSTANT },
    ]);
    first.child.process.kill("SIGTERM");
    await first.child.waitForExit();
    const again = await startCli(args);
    // The state and when it moved, as before the restart.
    expect((await http(`${again.url}/__admin/scenarios/states`)).json.states).toEqual(before);
    expect((await send(again.url, addAllergy(ALICE))).rule).toBe("second-refused");
    expect((await send(again.url, addAllergy(BOB))).rule).toBe("first-accepted");
  });

  it("a FHIRPath state key: the state follows the allergy's code, not the patient", async () => {
    const url = await sandbox(
      FLOW.replaceAll(
        "    scenario: allergy-flow\n",
        '    scenario: allergy-flow\n    stateKey: { fhirpath: "Bundle.entry.resource.ofType(AllergyIntolerance).code.coding.first()" }\n',
      ),
    );
    expect((await send(url, addAllergy(ALICE))).rule).toBe("first-accepted");
    // Another patient, the same allergy code: the same key, so the second step.
    expect((await send(url, addAllergy(BOB))).rule).toBe("second-refused");
    const states = (await http(`${url}/__admin/scenarios/states`)).json.states as Array<{ key: string }>;
    expect(states).toHaveLength(1);
    expect(states[0]?.key).toMatch(/\|/);
  });
});

// One rule in two: a 503 on the calls the draw picks, the built-in answer on the others.
const FLAKY = `
rules:
  - name: flaky-allergies
    when: { operation: add-allergy }
    probability: 0.5
    respond:
      status: 503
      outcome: { diagnostics: the allergy service is flaky }
`;

/** The statuses of `n` add-allergy calls to a fresh sandbox started with --seed `seed`, and its call ids. */
async function flakyRun(seed: string, n: number) {
  const url = await sandbox(FLAKY, ["--seed", seed]);
  const replies = [];
  for (let i = 0; i < n; i++) replies.push(await send(url, addAllergy(ALICE)));
  return { url, statuses: replies.map((r) => r.status), replies };
}

describe("random faults: probability, drawn from --seed (the real CLI)", { timeout: 60_000 }, () => {
  it("two runs with the same seed and the same calls answer the same; the trace says when the draw passed over", async () => {
    const first = await flakyRun("repeatable", 12);
    await killStray();
    const second = await flakyRun("repeatable", 12);
    expect(second.statuses).toEqual(first.statuses);
    // Both outcomes occur: the rule answers some of the calls it matches, not all or none.
    expect(new Set(first.statuses)).toEqual(new Set([200, 503]));

    const passed = second.replies.find((r) => r.status === 200);
    const call = await http(`${second.url}/__admin/calls/${passed?.callId}`);
    expect(call.json.explanation.rules[0]).toMatchObject({
      rule: "flaky-allergies",
      outcome: "not-matched",
      failed: expect.stringMatching(/^the random draw passed over it: probability 0\.5, drew 0\.\d{3}/),
    });
    // What the rules matched and answered: every call matched, the 503s were answered.
    const view = await http(`${second.url}/__admin/scenarios`);
    expect(view.json.rules[0]).toMatchObject({
      probability: 0.5,
      matched: 12,
      answered: second.statuses.filter((s) => s === 503).length,
    });
    await killStray();
    const other = await flakyRun("another seed", 12);
    expect(other.statuses).not.toEqual(first.statuses);
  });
});

// The built-in answer, written in 4 pieces over 600 ms.
const DRIBBLE = `
rules:
  - name: slow-network
    when: { operation: add-allergy }
    respond: { builtIn: true, dribble: { chunks: 4, over: 600ms } }
`;

/** POSTs `body` with node:http and notes when each piece of the answer arrives (performance.now()). */
function rawPost(url: string, path: string, body: string) {
  return new Promise<{ status: number; headers: Record<string, unknown>; pieces: Array<{ at: number; text: string }> }>(
    (resolve, reject) => {
      const target = new URL(path, url);
      const req = request(
        target,
        { method: "POST", headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } },
        (res) => {
          const pieces: Array<{ at: number; text: string }> = [];
          res.on("data", (chunk: Buffer) => pieces.push({ at: performance.now(), text: chunk.toString("latin1") }));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, pieces }));
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(body);
    },
  );
}

describe("dribbled answers (the real CLI, a raw HTTP client)", { timeout: 30_000 }, () => {
  it.each([
    ["the Node message path", STANDARD],
    ["the Hono path (a query string)", `${STANDARD}?_format=json`],
  ])("%s: the body arrives in several pieces over the time; the journal keeps it whole", async (_, path) => {
    const url = await sandbox(DRIBBLE);
    const sent = performance.now();
    const reply = await rawPost(url, path, envelope(addAllergy(ALICE)));
    expect(reply.status).toBe(200);
    expect(reply.headers["x-sandbox-rule"]).toBe("slow-network");
    // Four writes; TCP may join two that meet on the way, never all.
    expect(reply.pieces.length).toBeGreaterThanOrEqual(3);
    const first = reply.pieces[0]?.at as number;
    const last = reply.pieces.at(-1)?.at as number;
    // The last piece leaves 600 ms after the first (timers fire no earlier than asked; a little slack for clocks).
    expect(last - first).toBeGreaterThanOrEqual(550);
    expect(last - sent).toBeLessThan(10_000);
    const text = Buffer.from(reply.pieces.map((p) => p.text).join(""), "latin1").toString("utf8");
    const bundle = JSON.parse(text) as Bundle;
    expect(responseHeader(bundle).response?.code).toBe("ok");

    const calls = await http(`${url}/__admin/calls`);
    const call = await http(`${url}/__admin/calls/${calls.json.calls[0].id}`);
    expect(call.json.response.body).toEqual(bundle);
  });
});
