import type { KeptText, PackedTexts } from "../text/packed-texts.js";
import type { CallDraft, CallRecord } from "./call-record.js";

const KEPT = Symbol("kept body");

type Kept = { [KEPT]: KeptText };

/** The `body` of a recorded side: one function for every record, so that records of one shape share a hidden class. */
function body(this: Kept): string {
  return this[KEPT].text;
}

/** A side of a call with its body kept by `texts`; `body` reads it back (an own, enumerable property, as before). */
function keptSide<T extends { body: string }>(side: T, texts: PackedTexts): T {
  const out: Record<string, unknown> = {};
  for (const key in side) if (key !== "body") out[key] = side[key];
  Object.defineProperty(out, KEPT, { value: texts.keep(side.body) });
  Object.defineProperty(out, "body", { get: body, enumerable: true });
  return out as T;
}

/**
 * The record the journal keeps of a call: the draft's members in the draft's
 * order, then the journal's, with both bodies kept by `texts` (packed with
 * other calls' bodies once their block is full). Built member by member: on
 * Node 20 an object spread followed by new members gives every record a hidden
 * class of its own, about 300 bytes per call.
 */
export function keptCall(
  draft: Omit<CallDraft, "secretHeaders">,
  extra: { id: string; workspace: string; size: number },
  texts: PackedTexts,
): CallRecord {
  const out: Record<string, unknown> = {};
  for (const key in draft) {
    const value = draft[key as keyof typeof draft];
    if (key === "request") out[key] = keptSide(draft.request, texts);
    else if (key === "response") out[key] = draft.response ? keptSide(draft.response, texts) : null;
    else out[key] = value;
  }
  out.id = extra.id;
  out.workspace = extra.workspace;
  out.size = extra.size;
  return out as unknown as CallRecord;
}
