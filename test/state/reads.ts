import type { Bundle, MessageHeader, Patient } from "fhir/r4.js";
import { expect } from "vitest";
import { messageBundle } from "../support/messages.js";
import type { Client, StateSandbox } from "./state-sandbox.js";

/**
 * Everything a user can read of a workspace, taken before a restart and after it to be compared by value. Only
 * what is by definition per-response is left out, each where it is dropped (with why).
 */

/** A workspace to read: its name, its OAuth2 client (for the message reads) and the patients it knows. */
export interface ReadPlan {
  workspace: string;
  client: Client;
  /** Patients to read by message (view-patient-profile, get-pending-tasks). */
  patients: Patient[];
  /** Patient keys (system|value or id) to read by GET /__admin/patients/{key}. */
  patientKeys: string[];
  /** Queries for POST /__admin/calls/verify. */
  verify: unknown[];
}

/** A response message without what each answer has of its own: its Bundle's id and timestamp, its MessageHeader's id. */
export function answerOf(reply: { status: number; json: unknown }, requestId: string) {
  const bundle = structuredClone(reply.json) as Bundle;
  expect(bundle.resourceType, JSON.stringify(bundle)).toBe("Bundle");
  // Bundle.id and Bundle.timestamp identify and date this answer: a new Bundle for each response.
  delete bundle.id;
  delete bundle.timestamp;
  const first = bundle.entry?.[0];
  const header = first?.resource as MessageHeader;
  // The MessageHeader's id names this answer message (its entry's urn:uuid fullUrl is that id).
  delete header.id;
  delete first?.fullUrl;
  // response.identifier is the id of the request it answers: each read is a new request, with a new id.
  expect(header.response?.identifier).toBe(requestId);
  if (header.response) (header.response as { identifier?: string }).identifier = undefined;
  for (const entry of bundle.entry ?? []) {
    if (entry.resource?.resourceType !== "Composition") continue;
    // view-patient-profile composes its summary for each answer: the Composition's id (its fullUrl, the focus
    // naming it) and date are the answer's.
    for (const focus of header.focus ?? []) if (focus.reference === entry.fullUrl) focus.reference = "Composition";
    delete entry.fullUrl;
    delete entry.resource.id;
    delete (entry.resource as { date?: string }).date;
  }
  return { status: reply.status, bundle };
}

/** The workspace's reads by message: each patient's profile and pending tasks, as its client sees them. */
export async function messageReads(s: StateSandbox, plan: ReadPlan) {
  const reads: Record<string, unknown> = {};
  for (const patient of plan.patients) {
    const name = JSON.stringify(patient.identifier?.[0]?.value ?? patient.id);
    for (const operation of ["view-patient-profile", "get-pending-tasks"]) {
      const message = messageBundle(operation, [patient]);
      const reply = await s.send(message, { client: plan.client, operation });
      expect(reply.status, reply.text).toBe(200);
      reads[`${operation} ${name}`] = answerOf(reply, message.entry?.[0]?.resource?.id as string);
    }
  }
  return reads;
}

/** The workspace's reads by the admin API: the journal, verify, rules, orders, pharmacies, patients. */
export async function adminReads(s: StateSandbox, plan: ReadPlan) {
  const get = async (path: string) => {
    const reply = await s.admin(path, { workspace: plan.workspace });
    expect(reply.status, `${path}: ${reply.text}`).toBe(200);
    return reply.json ?? reply.text;
  };
  const calls = (await get("/calls?limit=10000")) as { calls: Array<{ id: string }> };
  const oneByOne = Object.fromEntries(
    await Promise.all(calls.calls.map(async (c) => [c.id, await get(`/calls/${c.id}`)] as const)),
  );
  const verify = [];
  for (const query of plan.verify) {
    const reply = await s.admin("/calls/verify", { method: "POST", body: query, workspace: plan.workspace });
    expect(reply.status, reply.text).toBe(200);
    verify.push(reply.json);
  }
  // wait answers at once when its expectation holds already: the journal read back is what it waits on.
  const wait = await s.admin("/calls/wait", {
    method: "POST",
    body: { ...(plan.verify[0] as object), timeoutMs: 2000 },
    workspace: plan.workspace,
  });
  expect(wait.status, wait.text).toBe(200);
  const health = (await get("/health")) as Record<string, unknown>;
  const orders = (await get("/orders")) as { orders: Array<{ id: string }> };
  const patients: Record<string, unknown> = {};
  for (const key of plan.patientKeys) patients[key] = await get(`/patients/${encodeURIComponent(key)}`);
  return {
    calls,
    oneByOne,
    summaries: await get("/calls?limit=10000&view=summary"),
    export: await get("/calls/export"),
    verify,
    wait: wait.json,
    // What health counts of the workspace (the rest is the process's: memory, uptime, pushes in flight).
    health: {
      calls: health.calls,
      journal: health.journal,
      store: health.store,
      limits: (health.workspace as { limits: unknown }).limits,
      memoryEstimateBytes: (health.workspace as { memoryEstimateBytes: unknown }).memoryEstimateBytes,
    },
    scenarios: scenariosOf(await get("/scenarios")),
    orders,
    order: Object.fromEntries(await Promise.all(orders.orders.map(async (o) => [o.id, await get(`/orders/${o.id}`)]))),
    pharmacies: await get("/pharmacies"),
    patientList: await get("/patients?limit=10000"),
    patients,
  };
}

/** GET /__admin/scenarios but when the files were loaded: a start loads them again (they may have changed). */
function scenariosOf(view: { loadedAt?: string }) {
  const { loadedAt: _loadedAt, ...rest } = view;
  return rest;
}

/**
 * GET /__admin/workspaces but what changes with the clock: how long each has been idle (now minus its last use),
 * and the last use of default, which this very request, acting in it, is.
 */
export async function workspacesRead(s: StateSandbox) {
  const reply = await s.admin("/workspaces");
  expect(reply.status, reply.text).toBe(200);
  const list = reply.json as { workspaces: Array<Record<string, unknown>> };
  for (const w of list.workspaces) {
    delete w.idleSeconds;
    if (w.id === "default") delete w.lastUsedAt;
  }
  return list;
}
