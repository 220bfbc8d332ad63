import { PUSH_MESSAGES } from "../orders/push-messages.js";
import { nearest } from "../text/suggest.js";
import type { Catalogue } from "./catalogue.js";

export type ResolvedName = { ok: true; id: string } | { ok: false; problem: string };

/**
 * The operation names a person may write where an operation is asked for
 * (scenario rules, verify and wait queries, call filters): an operation id,
 * or an event code that routes to it (an operations file's renamed codes and
 * aliases included), case-insensitive. Anything else is refused with the
 * known ids and the nearest one, never matched against nothing.
 */
export interface OperationNames {
  /** The operation id a name stands for, or why it stands for none. */
  resolve(name: string): ResolvedName;
  /** The ids, in catalogue order (then the pushes, when they count). */
  readonly ids: readonly string[];
}

/**
 * @param options.pushes also the event codes of the messages the sandbox
 *   sends to pharmacies (the `operation` of outbound calls in the journal).
 *
 * @example
 *   operationNames(catalogue).resolve("add-alergy")
 *   // { ok: false, problem: 'unknown operation "add-alergy"; did you mean "add-allergy"? Known: …' }
 */
export function operationNames(catalogue: Catalogue, options: { pushes?: boolean } = {}): OperationNames {
  const ids = [...catalogue.operations.map((op) => op.id), ...(options.pushes ? PUSH_MESSAGES.map((p) => p.id) : [])];
  const byLowerId = new Map(ids.map((id) => [id.toLowerCase(), id]));
  const spellings = [...ids, ...catalogue.knownEvents];
  return {
    ids,
    resolve(name) {
      const id = byLowerId.get(name.toLowerCase()) ?? catalogue.byEvent(name)?.id;
      if (id !== undefined) return { ok: true, id };
      const near = nearest(name, spellings);
      const meant = near === undefined ? undefined : (byLowerId.get(near.toLowerCase()) ?? catalogue.byEvent(near)?.id);
      const suggestion = near === undefined ? "." : `; did you mean "${near}"${meant !== near ? ` (${meant})` : ""}?`;
      return {
        ok: false,
        problem: `unknown operation "${name}"${suggestion} Known operations: ${ids.join(", ")} (GET /__admin/operations lists them with their event codes).`,
      };
    },
  };
}
