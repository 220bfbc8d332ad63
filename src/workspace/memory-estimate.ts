/** What a workspace's memory grows with. */
export interface MemoryFigures {
  /** Calls in its journal, and their body bytes. */
  calls: number;
  journalBytes: number;
  patients: number;
  records: number;
  orders: number;
  /** Fulfillment requests of its orders: one per pharmacy an order went to. */
  orderRequests: number;
  pharmacies: number;
  /** Scenario rules added at run time (the files' rules are shared), their documents' bytes and FHIRPath bytes. */
  runtimeRules: number;
  runtimeScenarioBytes: number;
  runtimeFhirpathBytes: number;
}

/**
 * Heap bytes per item. Calls, patients and records: measured by `npm run
 * bench` (section workspaces, docs/benchmarks.md): an empty workspace with
 * the shipped scenarios' fixtures, then workspaces filled with calls and
 * patients. Bodies are counted at a quarter of their size: the journal keeps
 * them deflated in blocks of many calls (PackedTexts, about fivefold), but
 * for the block still being filled. A record shares its recurring parts with
 * other records (RecordInterner).
 *
 * Runtime rules, orders and pharmacies: heap after GC (node --expose-gc)
 * before and after adding N to one workspace, by test/bench/state-cost.mjs
 * (Node 24, docs/benchmarks.md#workspace-state):
 * - a rule matching on a header, answering an outcome: 2.4 KiB (2,000 of
 *   them, 238 bytes of YAML each): 2,000 a rule and 2.5 a byte of YAML are
 *   counted;
 * - a document's bytes: 2.5 heap bytes a byte for a body of long strings, 7
 *   for a body of many small objects (the estimate reads low there);
 * - FHIRPath: about 140 heap bytes a character of an expression (fhirpath.js
 *   keeps its parse tree), whatever its length (70 to 8,000 characters);
 * - an order: 6.3 KiB to one pharmacy, 9.6 KiB to three, 25 KiB to ten:
 *   4,600 an order and 2,000 a pharmacy it went to (a Task, a delivery) are
 *   counted. Its patient is the store's (counted as a patient); the generated
 *   profiles behind patients are a cache of 256 shared by every workspace;
 * - a subscribed pharmacy (its Subscription kept): 1.2 KiB.
 */
const BODY_SHARE = 0.25;

const COST = {
  empty: 64 * 1024,
  call: 1_200,
  patient: 6_000,
  record: 400,
  order: 4_600,
  orderRequest: 2_000,
  pharmacy: 1_200,
  runtimeRule: 2_000,
  runtimeScenarioByte: 2.5,
  runtimeFhirpathByte: 140,
} as const;

/**
 * An estimate of the heap a workspace's state takes, from its counts: what
 * GET /__admin/workspaces and health show, for watching a shared sandbox
 * (not an exact measure: V8 does not say which object belongs to whom).
 */
export function workspaceBytes(f: MemoryFigures): number {
  return Math.round(
    COST.empty +
      f.journalBytes * BODY_SHARE +
      f.calls * COST.call +
      f.patients * COST.patient +
      f.records * COST.record +
      f.orders * COST.order +
      f.orderRequests * COST.orderRequest +
      f.pharmacies * COST.pharmacy +
      f.runtimeRules * COST.runtimeRule +
      f.runtimeScenarioBytes * COST.runtimeScenarioByte +
      f.runtimeFhirpathBytes * COST.runtimeFhirpathByte,
  );
}
