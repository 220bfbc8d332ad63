/** What a workspace's memory grows with. */
export interface MemoryFigures {
  /** Calls in its journal, and their body bytes. */
  calls: number;
  journalBytes: number;
  patients: number;
  records: number;
  orders: number;
  /** Scenario rules added at run time (the files' rules are shared). */
  runtimeRules: number;
}

/**
 * Heap bytes per item, measured by `npm run bench` (section workspaces,
 * docs/benchmarks.md): an empty workspace with the shipped scenarios'
 * fixtures, then workspaces filled with calls, patients and orders.
 * Bodies are counted at a quarter of their size: the journal keeps them
 * deflated in blocks of many calls (PackedTexts, about fivefold), but for
 * the block still being filled. A record shares its recurring parts with
 * other records (RecordInterner).
 */
const BODY_SHARE = 0.25;

const COST = {
  empty: 64 * 1024,
  call: 1_200,
  patient: 6_000,
  record: 400,
  order: 12_000,
  runtimeRule: 4_000,
} as const;

/**
 * An estimate of the heap a workspace's state takes, from its counts: what
 * GET /__admin/workspaces and health show, for watching a shared sandbox
 * (not an exact measure: V8 does not say which object belongs to whom).
 */
export function workspaceBytes(f: MemoryFigures): number {
  return (
    COST.empty +
    f.journalBytes * BODY_SHARE +
    f.calls * COST.call +
    f.patients * COST.patient +
    f.records * COST.record +
    f.orders * COST.order +
    f.runtimeRules * COST.runtimeRule
  );
}
