import type { Journal } from "../journal/journal.js";
import { savedCallDraft } from "../journal/saved-call.js";
import type { SandboxLogger } from "../log/logger.js";
import type { OrderWorkflow } from "../orders/order-workflow.js";
import type { Pharmacy, PharmacyRegistry } from "../orders/pharmacy-registry.js";
import { revivedOrder } from "../orders/saved-order.js";
import type { StoredAnswer } from "../pipeline/process-message.js";
import type { ReplayCache } from "../pipeline/replay-cache.js";
import type { Counter, Scenarios } from "../scenarios/scenarios.js";
import type { StateRow } from "../state/state-file.js";
import type { SandboxStore, SavedPatient, SavedRecord } from "../store/sandbox-store.js";
import type { PackedTexts } from "../text/packed-texts.js";

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
 * A workspace's state from the rows a state file keeps of it, instead of what its parts hold; returns when it was
 * made, from its own row.
 */
export function restoreWorkspace(rows: readonly StateRow[], to: RestoreTargets): { createdAt: Date } | undefined {
  const kinds = new Map<string, Array<{ key: string; value: unknown }>>();
  for (const row of rows) {
    let list = kinds.get(row.kind);
    if (!list) {
      list = [];
      kinds.set(row.kind, list);
    }
    list.push({ key: row.key, value: JSON.parse(row.value) });
  }
  const of = (kind: string) => kinds.get(kind) ?? [];

  const documents = of("scenario").map(({ value }) => value as { number: number; text: string });
  const counters = new Map(of("hits").map(({ key, value }) => [key, value as Counter]));
  const dropped = to.scenarios.restore(documents, counters);
  if (dropped.length > 0) {
    to.logger.warn(
      `workspace ${to.id}: ${dropped.length} scenario document(s) added at run time no longer load, and were left out`,
      { event: "state-file", workspace: to.id },
    );
  }
  to.store.restore(
    of("patient").map(({ value }) => value as SavedPatient),
    of("record").map(({ value }) => value as SavedRecord),
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
  const own = of("workspace")[0]?.value as { createdAt?: string; journalSeq?: number } | undefined;
  if (to.resume) {
    to.journal.restore(
      of("call").map(({ value }) => savedCallDraft(value)),
      typeof own?.journalSeq === "number" ? own.journalSeq : 1,
    );
  }
  return own?.createdAt ? { createdAt: new Date(own.createdAt) } : undefined;
}
