import type { AllergyIntolerance, Bundle, Composition, Patient, Subscription, Task } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type SandboxApp } from "../../src/app.js";
import {
  confirmationTask,
  fromPharmacy,
  pharmacyOrganization,
  quietLogger,
  taskOf,
} from "../orders/pharmacy-client.js";
import { example, messageBundle, post, type Reply, responseHeader } from "../support/messages.js";
import { type Received, startReceiver } from "../support/receiver.js";
import { type Naming, type WorkspaceClient, workspaceClient } from "./workspace-client.js";

// CONTRACT §13: two workspaces driven at the same time see none of each other's patients, calls, pharmacies,
// pushes or orders; a reset in one leaves the other untouched; verify and wait count only their own workspace.

/** The sandbox's URL as pharmacies see it: pushes name their source under it. */
const PUBLIC_URL = "http://sandbox.test";
const EID = "urn:ae:emirates-id";
/** One patient both teams write to: each must see only its own records. */
const SHARED_PATIENT = "784-1990-1234567-6";
/** One licence both teams subscribe with, each to its own receiver. */
const LICENCE = "PH-SHARED";

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function receiver() {
  const r = await startReceiver();
  closers.push(r.close);
  return r;
}

function sandbox(): SandboxApp {
  const s = createApp({ publicUrl: PUBLIC_URL, pushBackoffMs: 1 }, { logger: quietLogger });
  closers.push(s.close);
  return s;
}

/** An allergy of the shared patient, coded as each team's own (SNOMED codes written out). */
const allergy = (code: string, display: string): AllergyIntolerance => ({
  ...example<AllergyIntolerance>("allergyintolerance-example.json"),
  code: { coding: [{ system: "http://snomed.info/sct", code, display }] },
  patient: { identifier: { system: EID, value: SHARED_PATIENT } },
});

const subscription = (endpoint: string): Subscription => ({
  resourceType: "Subscription",
  status: "requested",
  reason: "Drug order fulfillment requests",
  criteria: "Task?code=fulfill",
  channel: { type: "rest-hook", endpoint, payload: "application/fhir+json" },
});

const ok = (reply: Reply) => {
  expect(reply.status, JSON.stringify(reply.body).slice(0, 300)).toBe(200);
  expect(responseHeader(reply.body as Bundle).response?.code).toBe("ok");
  return reply.body as Bundle;
};

/** The allergy codes the shared patient's profile lists. */
function allergyCodes(profile: Bundle): string[] {
  const composition = profile.entry?.find((e) => e.resource?.resourceType === "Composition")?.resource as Composition;
  const refs = composition.section?.find((s) => s.code?.coding?.[0]?.code === "48765-2")?.entry ?? [];
  const byRef = new Map(profile.entry?.map((e) => [`${e.resource?.resourceType}/${e.resource?.id}`, e.resource]));
  return refs.map((r) => (byRef.get(r.reference as string) as AllergyIntolerance).code?.coding?.[0]?.code as string);
}

const messageIdOf = (bundle: Bundle) => responseHeader(bundle).id as string;

interface TeamRun {
  profileCodes: string[];
  orderId: string;
  fulfillment: Received;
  allocation: Received;
  confirmedAt: string;
  sentMessageIds: string[];
}

/**
 * What one team does, start to end: subscribe its pharmacy, record an
 * allergy, view the profile, create an order through the admin API,
 * confirm it as its pharmacy at the URL the push names, and get the
 * allocation. Nothing here names another workspace.
 */
async function teamRun(
  app: SandboxApp["app"],
  team: WorkspaceClient,
  inbox: Awaited<ReturnType<typeof startReceiver>>,
  code: [string, string],
): Promise<TeamRun> {
  const sent: string[] = [];
  const send = async (bundle: Bundle) => {
    sent.push(messageIdOf(bundle));
    return ok(await team.send(bundle));
  };
  await send(messageBundle("subscribe-order-notifications", [subscription(inbox.url), pharmacyOrganization(LICENCE)]));
  await send(messageBundle("add-allergy", [allergy(...code)]));
  const profile = await send(
    messageBundle("view-patient-profile", [
      { resourceType: "Patient", identifier: [{ system: EID, value: SHARED_PATIENT }] } as Patient,
    ]),
  );
  const created = await team.admin("POST", "/orders", { body: { pharmacies: [LICENCE] } });
  expect(created.status).toBe(201);
  const fulfillment = await inbox.next();
  // The pharmacy answers where the push says the sandbox is: no prefix or header of its own.
  const source = responseHeader(fulfillment.bundle as Bundle).source?.endpoint as string;
  const confirm = fromPharmacy("confirm-drugs-availability", LICENCE, [
    confirmationTask(taskOf(fulfillment.bundle as Bundle), { availability: "available" }),
  ]);
  sent.push(messageIdOf(confirm));
  ok(await post(app, confirm, { path: new URL(source).pathname }));
  const allocation = await inbox.next();
  return {
    profileCodes: allergyCodes(profile),
    orderId: created.body.id,
    fulfillment,
    allocation,
    confirmedAt: source,
    sentMessageIds: sent,
  };
}

describe.each<Naming>(["prefix", "header"])("two workspaces named by %s, driven at the same time", (naming) => {
  it("see none of each other's patients, calls, pharmacies, pushes or orders; numbering and push URLs are their own", async () => {
    const s = sandbox();
    const [inboxA, inboxB] = await Promise.all([receiver(), receiver()]);
    const a = workspaceClient(s.app, "team-a", naming);
    const b = workspaceClient(s.app, "team-b", naming);

    const [runA, runB] = await Promise.all([
      teamRun(s.app, a, inboxA, ["91936005", "Allergy to penicillin"]),
      teamRun(s.app, b, inboxB, ["300913006", "Shellfish allergy"]),
    ]);

    // Patients: the same patient (generated alike from the same seed), each workspace with its own record only.
    expect(runA.profileCodes).toContain("91936005");
    expect(runA.profileCodes).not.toContain("300913006");
    expect(runB.profileCodes).toContain("300913006");
    expect(runB.profileCodes).not.toContain("91936005");
    expect(runA.profileCodes.filter((c) => c !== "91936005")).toEqual(
      runB.profileCodes.filter((c) => c !== "300913006"),
    );
    // Orders: each workspace numbers its own from 1.
    expect([runA.orderId, runB.orderId]).toEqual(["1", "1"]);
    // Pushes: each pharmacy got its own workspace's two pushes, and nothing else.
    expect(inboxA.received.map((r) => responseHeader(r.bundle).eventCoding?.code)).toEqual([
      "order-fulfillment-request",
      "order-allocation",
    ]);
    expect(inboxB.received).toHaveLength(2);
    // Push URLs lead back into the workspace (CONTRACT §13), whichever way it was named.
    for (const [run, name] of [
      [runA, "team-a"],
      [runB, "team-b"],
    ] as const) {
      const base = `${PUBLIC_URL}/w/${name}/uae-fhir/r4`;
      for (const push of [run.fulfillment, run.allocation]) {
        expect(responseHeader(push.bundle).source?.endpoint).toBe(`${base}/$process-message`);
        // The resources' fullUrls too (the MessageHeader's is a urn:uuid).
        for (const entry of (push.bundle as Bundle).entry?.slice(1) ?? [])
          expect(entry.fullUrl).toMatch(new RegExp(`^${base}/`));
      }
    }
    expect(focusTask(runA.allocation)).toMatchObject({ id: taskOf(runA.fulfillment.bundle).id, status: "in-progress" });

    for (const [team, run, other] of [
      [a, runA, runB],
      [b, runB, runA],
    ] as const) {
      // Calls: the journal holds this workspace's messages and pushes, none of the other's. (A push is recorded
      // once its answer is read, after the receiver has it.)
      const pushed = await team.admin("POST", "/calls/wait", { body: { operation: "order-allocation", count: 1 } });
      expect(pushed.body.ok).toBe(true);
      const calls = (await team.admin("GET", "/calls")).body.calls as Array<{
        direction: string;
        messageId: string;
        workspace: string;
      }>;
      const inbound = calls.filter((c) => c.direction === "inbound").map((c) => c.messageId);
      expect(inbound.sort()).toEqual([...run.sentMessageIds].sort());
      expect(calls.filter((c) => c.direction === "outbound")).toHaveLength(2);
      expect(new Set(calls.map((c) => c.workspace))).toEqual(new Set([team.name]));
      for (const id of other.sentMessageIds) expect(inbound).not.toContain(id);
      // verify counts only its own workspace.
      const verified = await team.admin("POST", "/calls/verify", { body: { operation: "add-allergy", count: 1 } });
      expect(verified.body).toMatchObject({ ok: true, matched: 1 });
      // Pharmacies and orders: its own.
      const pharmacies = (await team.admin("GET", "/pharmacies")).body.pharmacies;
      expect(pharmacies).toEqual([
        expect.objectContaining({ licence: LICENCE, endpoint: (team === a ? inboxA : inboxB).url }),
      ]);
      const orders = (await team.admin("GET", "/orders")).body.orders;
      expect(orders.map((o: { id: string; state: string }) => [o.id, o.state])).toEqual([["1", "allocated"]]);
    }

    // The default workspace saw none of it.
    expect(s.journal.size).toBe(0);
    expect(s.orders.list()).toEqual([]);
  });

  it("a reset in one workspace leaves the other untouched", async () => {
    const s = sandbox();
    const a = workspaceClient(s.app, "team-a", naming);
    const b = workspaceClient(s.app, "team-b", naming);
    await Promise.all([
      a.send(messageBundle("add-allergy", [allergy("91936005", "Allergy to penicillin")])),
      b.send(messageBundle("add-allergy", [allergy("300913006", "Shellfish allergy")])),
    ]);

    expect((await a.admin("POST", "/reset")).status).toBe(200);

    expect((await a.admin("GET", "/calls")).body.calls).toEqual([]);
    const left = (await b.admin("GET", "/calls")).body.calls;
    expect(left.map((c: { operation: string }) => c.operation)).toEqual(["add-allergy"]);
    const key = encodeURIComponent(`${EID}|${SHARED_PATIENT}`);
    // Team A's patient is gone (reset forgets generated patients); team B's keeps its recorded allergy.
    expect((await a.admin("GET", `/patients/${key}`)).status).toBe(404);
    const kept = (await b.admin("GET", `/patients/${key}`)).body.records as AllergyIntolerance[];
    expect(kept.some((r) => r.code?.coding?.[0]?.code === "300913006")).toBe(true);
  });
});

describe("generated patients, the same in every workspace", () => {
  it("a change to a generated record in one workspace leaves the other's as generated", async () => {
    const s = sandbox();
    const a = workspaceClient(s.app, "team-a", "prefix");
    const b = workspaceClient(s.app, "team-b", "header");
    const view = () =>
      messageBundle("view-patient-profile", [
        { resourceType: "Patient", identifier: [{ system: EID, value: SHARED_PATIENT }] } as Patient,
      ]);
    const generatedAllergy = (profile: Bundle) =>
      profile.entry?.find((e) => e.resource?.resourceType === "AllergyIntolerance")?.resource as AllergyIntolerance;
    const inA = generatedAllergy(ok(await a.send(view())));
    const inB = generatedAllergy(ok(await b.send(view())));
    // Generated alike: the same record, the same version.
    expect(inB).toEqual(inA);

    ok(await a.send(messageBundle("update-allergy", [{ ...inA, criticality: "high" } as AllergyIntolerance])));

    const recordIn = (reply: Reply) =>
      (reply.body as Bundle).entry?.find((e) => e.resource?.id === inA.id)?.resource as AllergyIntolerance;
    expect(recordIn(await a.send(view()))).toMatchObject({ criticality: "high", meta: { versionId: "2" } });
    expect(recordIn(await b.send(view()))).toEqual(inB);
  });
});

function focusTask(push: Received): Task {
  return taskOf(push.bundle as Bundle);
}
