import type { AllergyIntolerance, Bundle, Observation, OperationOutcome, Patient, Task } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { killStray } from "../cli/cli-process.js";
import { CONTRACT_OPERATION_IDS } from "../support/contract-operations.js";
import { envelope, example, focusOf, messageBundle, responseHeader } from "../support/messages.js";
import { startReceiver } from "../support/receiver.js";
import { within } from "../support/within.js";
import { adminReads, answerOf, messageReads, type ReadPlan, workspacesRead } from "./reads.js";
import {
  type Client,
  exampleOf,
  factsOf,
  type OrderView,
  type PharmacyPlan,
  StateSandbox,
  tempDir,
  writeIn,
} from "./state-sandbox.js";

/**
 * The issue's first "done when": a sandbox run with --state-file gets messages of every kind — the 18 operations,
 * a whole pharmacy flow and an order left open, runtime rules that were hit, workspaces under OAuth2 — then stops
 * (SIGTERM, or SIGKILL as a crash) and starts again on the same file; every read gives what it gave before.
 */

afterEach(killStray);
const receivers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const r of receivers.splice(0)) await r.close();
});

const CLINIC: Client = { id: "clinic", secret: "clinic-secret" };
const PHARMACY_A: Client = { id: "pharmacy-a", secret: "pharmacy-a-secret" };
const PHARMACY_B: Client = { id: "pharmacy-b", secret: "pharmacy-b-secret" };
const TEAM_B: Client = { id: "team-b-ehr", secret: "team-b-secret" };

// Two workspaces by their clients: default, and team-b (with an admin token of its own).
const CLIENTS = `clients:
  - { id: clinic, secret: clinic-secret }
  - { id: pharmacy-a, secret: pharmacy-a-secret, scopes: [drug-orders] }
  - { id: pharmacy-b, secret: pharmacy-b-secret, scopes: [drug-orders] }
  - { id: team-b-ehr, secret: team-b-secret, workspace: team-b }
workspaces:
  team-b: { adminToken: team-b-admin }
`;

/** Rules added at run time: one that answers twice, one that answers in turn; counted across the restart. */
const RUNTIME_RULES = `name: restart rules
rules:
  - name: twice-then-built-in
    when: { operation: add-allergy, headers: { X-Sandbox-Scenario: twice } }
    times: 2
    respond:
      status: 503
      headers: { Retry-After: "1" }
      outcome: { code: transient, diagnostics: "Down (call {{ rule.hit }} of 2)." }
  - name: ladder
    when: { operation: get-pending-tasks, headers: { X-Sandbox-Scenario: ladder } }
    sequence:
      - { status: 503, outcome: { code: transient, diagnostics: "first answer" } }
      - { status: 503, outcome: { code: transient, diagnostics: "second answer" } }
      - { builtIn: true }
`;

/** The patients of these tests: Emirates IDs with valid check digits (the example command's own is one). */
const PATIENT = "784-1990-1234567-6";
/** Mariam, the fixture patient of the shipped scenarios (scenarios/00-test-patients.yaml), in every workspace. */
const MARIAM = "784-1985-1000001-5";
const EMIRATES_ID = "urn:ae:emirates-id";
const patientOf = (value: string): Patient => ({
  resourceType: "Patient",
  identifier: [{ system: EMIRATES_ID, value }],
});

/** The fixture patient of the shipped scenarios (scenarios/00-test-patients.yaml): her weight, corrected. */
function correctedFixtureWeight(): Bundle {
  const weight: Observation = {
    resourceType: "Observation",
    id: "fixture-mariam-weight",
    status: "final",
    category: [
      {
        coding: [{ system: "http://terminology.hl7.org/CodeSystem/observation-category", code: "vital-signs" }],
      },
    ],
    code: { coding: [{ system: "http://loinc.org", code: "29463-7", display: "Body weight" }] },
    effectiveDateTime: "2025-11-02T09:00:00+04:00",
    valueQuantity: { value: 69.1, unit: "kg", system: "http://unitsofmeasure.org", code: "kg" },
  };
  const bundle = messageBundle("update-measurement", [weight, patientOf(MARIAM)], { focus: [0] });
  (bundle.entry?.[1]?.resource as Observation).subject = { reference: bundle.entry?.[2]?.fullUrl as string };
  return bundle;
}

/** A cancel-task message for a task the sandbox holds (as its answer gave it). */
function cancelled(task: Task): Bundle {
  const { meta: _meta, ...held } = task;
  const cancel: Task = { ...held, status: "cancelled", statusReason: { text: "No longer needed." } };
  const bundle = messageBundle("cancel-task", [cancel, patientOf(PATIENT)], { focus: [0] });
  (bundle.entry?.[1]?.resource as Task).for = { reference: bundle.entry?.[2]?.fullUrl as string };
  return bundle;
}

/** The diagnostics of the OperationOutcome a response message carries. */
const diagnosticsOf = (json: Bundle) =>
  (json.entry?.find((e) => e.resource?.resourceType === "OperationOutcome")?.resource as OperationOutcome | undefined)
    ?.issue[0]?.diagnostics;

/** The code of a response message's MessageHeader.response (ok, transient-error, fatal-error). */
const codeOf = (json: Bundle) => responseHeader(json).response?.code;

async function sendOk(s: StateSandbox, message: Bundle, client: Client, operation: string) {
  const reply = await s.send(message, { client, operation });
  expect(reply.status, `${operation}: ${reply.text}`).toBe(200);
  expect(codeOf(reply.json), `${operation}: ${reply.text}`).toBe("ok");
  return reply;
}

interface Setup {
  args: string[];
  a: Awaited<ReturnType<typeof startReceiver>>;
  b: Awaited<ReturnType<typeof startReceiver>>;
  c: Awaited<ReturnType<typeof startReceiver>>;
}

async function setup(): Promise<Setup> {
  const dir = tempDir();
  const [a, b, c] = await Promise.all([startReceiver(), startReceiver(), startReceiver()]);
  receivers.push(a, b, c);
  const args = [
    "--state-file",
    `${dir}/state.db`,
    "--auth",
    "oauth2",
    "--clients",
    writeIn(dir, "clients.yaml", CLIENTS),
    // The receivers are on this machine: under OAuth2 pushes go there only when allowed.
    "--push-allow",
    "127.0.0.1",
  ];
  return { args, a, b, c };
}

/** What the first run did that the checks after the restart need. */
interface Done {
  /** Operations answered ok, by their id. */
  answered: Set<string>;
  /** An add-allergy message as sent, and its answer. */
  original: { body: string; status: number; text: string; id: string };
  openOrder: string;
  dispensedOrder: string;
}

async function populate(s: StateSandbox, t: Setup): Promise<Done> {
  const answered = new Set<string>();
  const url = s.url;
  const ok = async (message: Bundle, client: Client, operation: string) => {
    const reply = await sendOk(s, message, client, operation);
    answered.add(operation);
    return reply;
  };
  const pharmacyA: PharmacyPlan = { licence: "PH-A", name: "Pharmacy A", endpoint: t.a.url };
  const pharmacyB: PharmacyPlan = { licence: "PH-B", name: "Pharmacy B", endpoint: t.b.url };

  // The patient profile and health-program operations, as the example command builds them.
  const profileOps = CONTRACT_OPERATION_IDS.filter(
    (op) =>
      ![
        "subscribe-order-notifications",
        "confirm-drugs-availability",
        "receive-allocation",
        "send-dispense-summary",
      ].includes(op),
  );
  let original: Done["original"] | undefined;
  let added: Task | undefined;
  for (const operation of profileOps) {
    // The generated profile's last task is finished: the task added just before is the one cancelled.
    const message =
      operation === "cancel-task" && added ? cancelled(added) : exampleOf(operation, { url, patient: PATIENT });
    const reply = await ok(message, CLINIC, operation);
    if (operation === "add-task") added = focusOf(reply.json)[0] as Task;
    if (operation === "add-allergy") {
      original = {
        body: envelope(message),
        status: reply.status,
        text: reply.text,
        id: message.entry?.[0]?.resource?.id as string,
      };
    }
  }
  // HL7's own examples: Peter Chalmers (patient-example), his cashew allergy and a heart rate (both name Patient/example).
  await ok(
    messageBundle("view-patient-profile", [example<Patient>("patient-example.json")]),
    CLINIC,
    "view-patient-profile",
  );
  await ok(
    messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")]),
    CLINIC,
    "add-allergy",
  );
  await ok(
    messageBundle("add-measurement", [example<Observation>("observation-example-heart-rate.json")]),
    CLINIC,
    "add-measurement",
  );
  // A record of a fixture patient, changed: the restart must not put the fixture back over it.
  await ok(correctedFixtureWeight(), CLINIC, "update-measurement");

  // An exact resend, before the restart: the original answer, marked.
  if (!original) throw new Error("no add-allergy was sent");
  const resent = await s.send(original.body, { client: CLINIC, operation: "add-allergy" });
  expect(resent.headers.get("x-sandbox-duplicate")).toBe("true");
  expect(resent.text).toBe(original.text);

  // Rules: a file rule's sequence and two runtime rules, each hit once.
  const rules = await s.addScenario(RUNTIME_RULES);
  expect(rules.status, rules.text).toBe(201);
  const hit = async (operation: string, scenario: string) =>
    s.send(exampleOf(operation, { url, patient: PATIENT }), {
      client: CLINIC,
      operation,
      headers: { "X-Sandbox-Scenario": scenario },
    });
  const twice = await hit("add-allergy", "twice");
  expect([twice.status, diagnosticsOf(twice.json)]).toEqual([503, "Down (call 1 of 2)."]);
  const ladder = await hit("get-pending-tasks", "ladder");
  expect([ladder.status, diagnosticsOf(ladder.json)]).toEqual([503, "first answer"]);
  const flaky = await hit("add-allergy", "flaky-allergy");
  expect(flaky.status).toBe(503);

  // The pharmacy flow: two pharmacies subscribe; an order goes to both; A confirms, gets it, dispenses.
  await ok(
    exampleOf("subscribe-order-notifications", { url, patient: PATIENT, pharmacy: pharmacyA }),
    PHARMACY_A,
    "subscribe-order-notifications",
  );
  await ok(
    exampleOf("subscribe-order-notifications", { url, patient: PATIENT, pharmacy: pharmacyB }),
    PHARMACY_B,
    "subscribe-order-notifications",
  );
  // (Not the shipped fixtures' pharmacy too: its endpoint is nowhere, and its retries would still run at the stop.)
  const created = await s.admin("/orders", { method: "POST", body: { pharmacies: ["PH-A", "PH-B"] } });
  expect(created.status, created.text).toBe(201);
  const delivered = (o: { pharmacies: Array<{ delivery: { deliveredAt: string | null } }> }) =>
    o.pharmacies.every((p) => p.delivery.deliveredAt !== null);
  const order = await s.orderWhen(created.json.id, delivered);
  const facts = factsOf(order, "PH-A");
  await ok(
    exampleOf("confirm-drugs-availability", { url, patient: PATIENT, pharmacy: pharmacyA, order: facts }),
    PHARMACY_A,
    "confirm-drugs-availability",
  );
  await s.orderWhen(order.id, (o) => o.state === "allocated");
  await ok(
    exampleOf("receive-allocation", { url, patient: PATIENT, pharmacy: pharmacyA, order: facts }),
    PHARMACY_A,
    "receive-allocation",
  );
  await ok(
    exampleOf("send-dispense-summary", { url, patient: PATIENT, pharmacy: pharmacyA, order: facts }),
    PHARMACY_A,
    "send-dispense-summary",
  );
  // The allocation push was delivered too (its delivery is on the order): nothing is in flight at the stop.
  await s.orderWhen(
    order.id,
    (o) =>
      o.state === "dispensed" &&
      (o.pharmacies.find((p) => p.licence === "PH-A") as { allocationDelivery?: { deliveredAt: string | null } })
        .allocationDelivery?.deliveredAt != null,
  );
  // A second order, left open: an hour to confirm (60m).
  const open = await s.admin("/orders", { method: "POST", body: { deadline: "60m", pharmacies: ["PH-A", "PH-B"] } });
  expect(open.status, open.text).toBe(201);
  await s.orderWhen(open.json.id, delivered);

  // Workspace team-b, by its own client: a patient, a pharmacy, an open order of its own.
  const teamB = `${s.url}/w/team-b`;
  for (const operation of ["view-patient-profile", "add-allergy", "add-task"]) {
    await sendOk(s, exampleOf(operation, { url: teamB, patient: MARIAM }), TEAM_B, operation);
  }
  const pharmacyC: PharmacyPlan = { licence: "PH-C", name: "Pharmacy C", endpoint: t.c.url };
  await sendOk(
    s,
    exampleOf("subscribe-order-notifications", { url: teamB, patient: MARIAM, pharmacy: pharmacyC }),
    TEAM_B,
    "subscribe-order-notifications",
  );
  const teamBOrder = await s.admin("/orders", {
    method: "POST",
    body: { deadline: "60m", pharmacies: ["PH-C"] },
    workspace: "team-b",
  });
  expect(teamBOrder.status, teamBOrder.text).toBe(201);
  await s.orderWhen(teamBOrder.json.id, delivered, "team-b");

  return { answered, original, openOrder: open.json.id, dispensedOrder: order.id };
}

const PLANS: ReadPlan[] = [
  {
    workspace: "default",
    client: CLINIC,
    patients: [patientOf(PATIENT), example<Patient>("patient-example.json"), patientOf(MARIAM)],
    patientKeys: [`${EMIRATES_ID}|${PATIENT}`, "example", "fixture-mariam"],
    verify: [
      { operation: "add-allergy", atLeast: 1 },
      { operation: "add-allergy", where: "Bundle.entry.resource.ofType(AllergyIntolerance).exists()", count: 1 },
      { operation: "order-fulfillment-request", direction: "outbound", count: 4 },
      { operation: "order-allocation", direction: "outbound", atLeast: 1 },
      { operation: "cancel-task", count: 0 },
    ],
  },
  {
    workspace: "team-b",
    client: TEAM_B,
    patients: [patientOf(MARIAM)],
    patientKeys: [`${EMIRATES_ID}|${MARIAM}`],
    verify: [{ operation: "add-task", count: 1 }],
  },
];

/**
 * Every read of every workspace. Message reads are calls (they go in the journal) and every read is a use of its
 * workspace (the workspaces list shows the last): before the restart they come first and the workspaces list
 * last; after it, in the other order.
 */
async function readAll(s: StateSandbox, when: "before" | "after") {
  const admin = async () => {
    const reads: Record<string, unknown> = {};
    for (const plan of PLANS) reads[plan.workspace] = await adminReads(s, plan);
    return reads;
  };
  const messages = async () => {
    const reads: Record<string, unknown> = {};
    for (const plan of PLANS) reads[plan.workspace] = await messageReads(s, plan);
    return reads;
  };
  if (when === "after") {
    const workspaces = await workspacesRead(s);
    const a = await admin();
    return { workspaces, admin: a, messages: await messages() };
  }
  const m = await messages();
  const a = await admin();
  return { workspaces: await workspacesRead(s), admin: a, messages: m };
}

/** A push as a receiver got it: its event and the Task it is about. */
const pushOf = (r: { bundle: Bundle }) => [responseHeader(r.bundle).eventCoding?.code, focusOf(r.bundle)[0]?.id];

/** The highest call id of the journals read. */
function highestId(reads: Record<string, unknown>): number {
  const ids = PLANS.flatMap((plan) =>
    (reads[plan.workspace] as { calls: { calls: Array<{ id: string }> } }).calls.calls.map((c) => Number(c.id)),
  );
  return Math.max(...ids);
}

/** After the restart: resends are still told apart, rules go on counting, the open order goes on, ids go on. */
async function carriesOn(s: StateSandbox, t: Setup, done: Done, before: Awaited<ReturnType<typeof readAll>>) {
  // The exact resend: the answer given before the restart, marked, and not applied again.
  const resent = await s.send(done.original.body, { client: CLINIC, operation: "add-allergy" });
  expect(resent.status).toBe(done.original.status);
  expect(resent.headers.get("x-sandbox-duplicate")).toBe("true");
  expect(resent.text).toBe(done.original.text);
  const profile = messageBundle("view-patient-profile", [patientOf(PATIENT)]);
  const read = await s.send(profile, { client: CLINIC, operation: "view-patient-profile" });
  expect(answerOf(read, profile.entry?.[0]?.resource?.id as string)).toEqual(
    (before.messages.default as Record<string, unknown>)[`view-patient-profile "${PATIENT}"`],
  );

  // The same MessageHeader id with other content: refused, as before the restart.
  const reused = exampleOf("add-allergy", { url: s.url, patient: PATIENT });
  (reused.entry?.[0]?.resource as { id: string }).id = done.original.id;
  const conflict = await s.send(reused, { client: CLINIC, operation: "add-allergy" });
  expect(conflict.status, conflict.text).toBe(409);

  // Call ids go on from the highest before the restart: the first call after it (a token request) has the next.
  const journal = await s.admin("/calls?limit=10000");
  const teamB = await s.admin("/calls?limit=10000", { workspace: "team-b" });
  const highest = highestId(before.admin);
  const newIds = [...journal.json.calls, ...teamB.json.calls]
    .map((c: { id: string }) => Number(c.id))
    .filter((id: number) => id > highest);
  expect(Math.min(...newIds)).toBe(highest + 1);
  expect(Number(conflict.headers.get("x-sandbox-call-id"))).toBeGreaterThan(highest);

  // The rules go on from their counts: the second of two, then the built-in; the ladder's second step.
  const hit = (operation: string, scenario: string) =>
    s.send(exampleOf(operation, { url: s.url, patient: PATIENT }), {
      client: CLINIC,
      operation,
      headers: { "X-Sandbox-Scenario": scenario },
    });
  const second = await hit("add-allergy", "twice");
  expect([second.status, diagnosticsOf(second.json)]).toEqual([503, "Down (call 2 of 2)."]);
  const third = await hit("add-allergy", "twice");
  expect([third.status, codeOf(third.json)]).toEqual([200, "ok"]);
  const ladder = await hit("get-pending-tasks", "ladder");
  expect([ladder.status, diagnosticsOf(ladder.json)]).toEqual([503, "second answer"]);
  const flaky = await hit("add-allergy", "flaky-allergy");
  expect([flaky.status, codeOf(flaky.json)]).toEqual([200, "ok"]);

  // The order left open goes on: A confirms it, gets it, and is told so by a push.
  const open = await s.orderWhen(done.openOrder, () => true);
  expect(open.state).toBe("open");
  const pharmacyA: PharmacyPlan = { licence: "PH-A", name: "Pharmacy A", endpoint: t.a.url };
  const facts = factsOf(open, "PH-A");
  await sendOk(
    s,
    exampleOf("confirm-drugs-availability", { url: s.url, patient: PATIENT, pharmacy: pharmacyA, order: facts }),
    PHARMACY_A,
    "confirm-drugs-availability",
  );
  await s.orderWhen(done.openOrder, (o) => o.state === "allocated");
  // The fourth push to A, the allocation (next() hands out what came already first).
  for (let i = 0; i < 4; i++) await within(t.a.next(), `push ${i + 1} to A`);
  // Each pharmacy got each push once: nothing delivered before the restart was sent again after it.
  const taskOf = (order: string, licence: string) =>
    (before.admin.default as { order: Record<string, OrderView> }).order[order]?.pharmacies.find(
      (p) => p.licence === licence,
    )?.taskId;
  expect(t.a.received.map(pushOf)).toEqual([
    ["order-fulfillment-request", taskOf(done.dispensedOrder, "PH-A")],
    ["order-allocation", taskOf(done.dispensedOrder, "PH-A")],
    ["order-fulfillment-request", taskOf(done.openOrder, "PH-A")],
    ["order-allocation", taskOf(done.openOrder, "PH-A")],
  ]);
  expect(t.b.received.map(pushOf)).toEqual([
    ["order-fulfillment-request", taskOf(done.dispensedOrder, "PH-B")],
    ["order-fulfillment-request", taskOf(done.openOrder, "PH-B")],
  ]);
  expect(t.c.received.length).toBe(1);
}

/**
 * The reads before the restart as they are after it: a call's rule trace (how each rule decided) is not kept in
 * the state file, so the explanation of a call the rules met says that, and which rule answered, instead.
 */
function withoutTraces(reads: Record<string, unknown>): Record<string, unknown> {
  const out = structuredClone(reads);
  for (const plan of PLANS) {
    const one = (out[plan.workspace] as { oneByOne: Record<string, { explanation: Record<string, unknown> }> })
      .oneByOne;
    for (const call of Object.values(one)) {
      if (!("rules" in call.explanation)) continue;
      call.explanation = {
        summary: expect.stringContaining("recorded before the sandbox last restarted"),
        answeredBy: call.explanation.answeredBy,
      };
    }
  }
  return out;
}

describe("a restart on the same --state-file", { timeout: 60_000 }, () => {
  for (const signal of ["SIGTERM", "SIGKILL"] as const) {
    it(`after ${signal}: every read gives what it gave before; resends, rules, orders and ids carry on`, async () => {
      const t = await setup();
      const first = await StateSandbox.start(t.args);
      const done = await populate(first, t);
      expect([...done.answered].sort()).toEqual([...CONTRACT_OPERATION_IDS].sort());

      const before = await readAll(first, "before");
      await first.stop(signal);
      const second = await first.restart();
      const after = await readAll(second, "after");

      expect(after.workspaces).toEqual(before.workspaces);
      expect(after.admin).toEqual(withoutTraces(before.admin));
      expect(after.messages).toEqual(before.messages);

      await carriesOn(second, t, done, before);
    });
  }
});
