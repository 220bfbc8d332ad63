import type { CallDraft, CallRecord } from "./call-record.js";

/** Members of a record the state file does not keep: the trace holds compiled rules; the rest it adds back. */
const NOT_SAVED = new Set(["trace", "size", "workspace"]);

/**
 * A recorded call as the state file keeps it (JSON.stringify writes the bodies through their toJSON), with its
 * page cursor (`seq`); in the trace's place, that there was one (explain tells a call the rules met from one they
 * never saw).
 */
export function savedCall(record: CallRecord, seq: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key in record) {
    if (key === "trace") {
      if (record.trace) out.traceNotKept = true;
    } else if (!NOT_SAVED.has(key)) out[key] = (record as unknown as Record<string, unknown>)[key];
  }
  out.seq = seq;
  return out;
}

/** A call read back from the state file, as the draft the journal keeps it from (with its id), and its cursor. */
export function savedCallDraft(saved: unknown): { draft: CallDraft & { id: string }; seq: number | undefined } {
  const { seq, ...call } = saved as CallDraft & { id: string; at: string | Date; seq?: number };
  call.at = new Date(call.at);
  return { draft: call as CallDraft & { id: string }, seq: typeof seq === "number" ? seq : undefined };
}
