import type { Journal } from "../journal/journal.js";
import { savedCallDraft } from "../journal/saved-call.js";
import type { SandboxLogger } from "../log/logger.js";
import type { OrderWorkflow } from "../orders/order-workflow.js";
import type { Pharmacy, PharmacyRegistry } from "../orders/pharmacy-registry.js";
import { revivedOrder } from "../orders/saved-order.js";
import type { StoredAnswer } from "../pipeline/process-message.js";
import type { ReplayCache } from "../pipeline/replay-cache.js";
import type { SavedDelivery } from "../push/response-delivery.js";
import type { Counter, ScenarioState, Scenarios } from "../scenarios/scenarios.js";
import type { StateFile, StateRow } from "../state/state-file.js";
import type { SandboxStore, SavedPatient, SavedRecord } from "../store/sandbox-store.js";
import type { PackedTexts } from "../text/packed-texts.js";
import { counted } from "../text/plural.js";

/** A remembered answer as the state file keeps it. */
interface SavedAnswer {
  status: number;
  body: string;
  identity: { body: string } | { fingerprint: string };
  callId: string | undefined;
  at: string;
}

/** A remembered answer (the duplicate memory's) as the state file keeps it: its texts as text. */
export function savedAnswer(answer: StoredAnswer): SavedAnswer {
  return {
    status: answer.status,
    body: answer.body.text,
    identity: "body" in answer.identity ? { body: answer.identity.body.text } : answer.identity,
    callId: answer.callId,
    at: answer.at.toISOString(),
  };
}

export interface RestoreTargets {
  id: string;
  store: SandboxStore;
  pharmacies: PharmacyRegistry;
  scenarios: Scenarios;
  orders: OrderWorkflow;
  replays: ReplayCache<StoredAnswer>;
  journal: Journal;
  texts: PackedTexts;
  logger: SandboxLogger;
  /** At start: the journal comes back too, and unfinished deliveries are sent again; after a failed write, not. */
  resume: boolean;
}

/**
 * A workspace's rows in a state file, records apart: most of a large state is records, which the store keeps one by
 * one as they are read (StateFile.read).
 */
export interface SavedRows {
  /** Every row but the records, in the order they were first written. */
  others(): Iterable<StateRow>;
  /** The records, in the order they were first written. */
  records(): Iterable<StateRow>;
}

/** The saved rows of a workspace in a state file. */
export function savedRows(file: StateFile, workspace: string): SavedRows {
  return { others: () => file.read(workspace, "record", false), records: () => file.read(workspace, "record", true) };
}

/**
 * A workspace's state from the rows a state file keeps of it, instead of what its parts hold; returns when it was
 * made and last used, from its own row.
 */
export function restoreWorkspace(
  from: SavedRows,
  to: RestoreTargets,
): { createdAt?: Date; lastUsedAt?: Date; answers: SavedDelivery[] } {
  const kinds = new Map<string, StateRow[]>();
  for (const row of from.others()) {
    let list = kinds.get(row.kind);
    if (!list) {
      list = [];
      kinds.set(row.kind, list);
    }
    list.push(row);
  }
  const of = (kind: string) => [...parsed(kinds.get(kind) ?? [])];

  const documents = of("scenario").map(({ value }) => value as { number: number; text: string });
  const counters = new Map(of("hits").map(({ key, value }) => [key, value as Counter]));
  const dropped = to.scenarios.restore(documents, counters);
  to.scenarios.restoreStates(of("states").map(({ value }) => value as ScenarioState));
  if (dropped.length > 0) {
    to.logger.warn(
      `workspace ${to.id}: ${counted(dropped.length, "scenario document")} added at run time no longer load, and were left out`,
      { event: "state-file", workspace: to.id },
    );
  }
  to.store.restore(
    of("patient").map(({ value }) => value as SavedPatient),
    // Each record parsed as it is read and kept at once: what the store shares of it is garbage while still young.
    values<SavedRecord>(parsed(from.records())),
  );
  to.pharmacies.restore(of("pharmacy").map(({ value }) => value as Pharmacy));
  const sequence = of("orders").find((row) => row.key === "sequence")?.value;
  to.orders.restore(
    of("order").map(({ value }) => revivedOrder(value)),
    typeof sequence === "number" ? sequence : 0,
    to.resume,
  );
  to.replays.restore(
    of("replay").map(({ key, value }) => {
      const saved = value as SavedAnswer;
      const answer: StoredAnswer = {
        status: saved.status,
        body: to.texts.keep(saved.body),
        identity: "body" in saved.identity ? { body: to.texts.keep(saved.identity.body) } : saved.identity,
        callId: saved.callId,
        at: new Date(saved.at),
      };
      return [key, answer];
    }),
  );
  const own = of("workspace")[0]?.value as { createdAt?: string; lastUsedAt?: string; journalSeq?: number } | undefined;
  if (to.resume) {
    to.journal.restore(
      drafts(parsed(kinds.get("call") ?? [])),
      typeof own?.journalSeq === "number" ? own.journalSeq : 1,
    );
  }
  return {
    ...(own?.createdAt ? { createdAt: new Date(own.createdAt) } : {}),
    ...(own?.lastUsedAt ? { lastUsedAt: new Date(own.lastUsedAt) } : {}),
    // Asynchronous answers not delivered when the sandbox stopped: sent once it serves again (at start only).
    answers: to.resume ? of("answer").map(({ value }) => value as SavedDelivery) : [],
  };
}

/** Rows, each parsed as it is taken (a journal keeps its calls one by one too). */
function* parsed(rows: Iterable<StateRow>): Generator<{ key: string; value: unknown }> {
  for (const row of rows) yield { key: row.key, value: JSON.parse(row.value) };
}

function* values<T>(rows: Iterable<{ value: unknown }>): Generator<T> {
  for (const { value } of rows) yield value as T;
}

function* drafts(rows: Iterable<{ value: unknown }>): Generator<ReturnType<typeof savedCallDraft>> {
  for (const { value } of rows) yield savedCallDraft(value);
}
