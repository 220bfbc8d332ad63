import { z } from "zod";
import { compileMatcher, type MatcherSpec } from "../matching/matcher.js";
import type { OperationNames } from "../routing/operation-names.js";
import { factsOfCall } from "./call-facts.js";
import type { CallRecord } from "./call-record.js";

/** The body of POST /__admin/calls/verify and /__admin/calls/wait. */
export const expectationSchema = z
  .object({
    operation: z.string().min(1).optional(),
    direction: z.enum(["inbound", "outbound"]).optional(),
    where: z.string().min(1).optional(),
    count: z.number().int().min(0).optional(),
    atLeast: z.number().int().min(0).optional(),
    atMost: z.number().int().min(0).optional(),
    timeoutMs: z.number().int().min(0).max(600_000).optional(),
  })
  .strict()
  .refine((e) => e.count === undefined || (e.atLeast === undefined && e.atMost === undefined), {
    message: "give either count, or atLeast and/or atMost, not both",
  });

export type Expectation = z.infer<typeof expectationSchema>;

export interface NearMiss {
  callId: string;
  operation: string | null;
  direction: CallRecord["direction"];
  at: string;
  /** Why this call did not match. */
  reasons: string[];
}

export interface Verification {
  ok: boolean;
  matched: number;
  /** The matching calls' ids, oldest first. */
  callIds: string[];
  expected: string;
  nearMisses: NearMiss[];
}

const NEAR_MISSES = 5;

/** A compiled expectation: throws nothing; a bad FHIRPath is reported by `compileExpectation`. */
export interface CompiledExpectation {
  /** The whole verification over these calls, near misses included. */
  verify(calls: readonly CallRecord[]): Verification;
  /** Whether one call matches: lets a waiter count new calls instead of re-reading the journal. */
  matches(call: CallRecord): boolean;
  /** Whether this many matching calls satisfy the expectation. */
  holds(matched: number): boolean;
}

/**
 * Compiles a verify/wait query. `names` are the operations it may name (the
 * catalogue's, and the pushes'): a misspelt one is refused rather than
 * counting zero calls and passing an `atMost`/`count: 0` check by mistake.
 */
export function compileExpectation(
  e: Expectation,
  names: OperationNames,
): { ok: true; verify: CompiledExpectation } | { ok: false; reason: string } {
  const spec: MatcherSpec = {};
  if (e.operation !== undefined) {
    const resolved = names.resolve(e.operation);
    if (!resolved.ok) return { ok: false, reason: `operation: ${resolved.problem}` };
    spec.operation = resolved.id;
  }
  if (e.direction !== undefined) spec.direction = e.direction;
  if (e.where !== undefined) spec.fhirpath = e.where;
  const compiled = compileMatcher(spec, "where");
  if (!compiled.ok) return { ok: false, reason: compiled.problems.map((p) => p.message).join("; ") };
  const reasonsAgainst = (call: CallRecord) => compiled.matcher.mismatches(factsOfCall(call));

  const expected =
    e.count !== undefined
      ? `exactly ${e.count}`
      : [
          e.atLeast !== undefined || e.atMost === undefined ? `at least ${e.atLeast ?? 1}` : "",
          e.atMost !== undefined ? `at most ${e.atMost}` : "",
        ]
          .filter(Boolean)
          .join(" and ");

  const holds = (n: number) =>
    e.count !== undefined
      ? n === e.count
      : n >= (e.atLeast ?? (e.atMost === undefined ? 1 : 0)) && (e.atMost === undefined || n <= e.atMost);

  const verify = (calls: readonly CallRecord[]): Verification => {
    const matched: string[] = [];
    const misses: Array<NearMiss & { weight: number }> = [];
    for (const call of calls) {
      const reasons = reasonsAgainst(call);
      if (reasons.length === 0) matched.push(call.id);
      else
        misses.push({
          callId: call.id,
          operation: call.operation,
          direction: call.direction,
          at: call.at.toISOString(),
          reasons,
          weight: reasons.length,
        });
    }
    const n = matched.length;
    const ok = holds(n);
    // Closest first (fewest failed criteria), most recent first among equals.
    const nearMisses = ok
      ? []
      : misses
          .reverse()
          .sort((a, b) => a.weight - b.weight)
          .slice(0, NEAR_MISSES)
          .map(({ weight: _w, ...m }) => m);
    return { ok, matched: n, callIds: matched, expected: `${expected} matching call(s)`, nearMisses };
  };

  return {
    ok: true,
    verify: { verify, holds, matches: (call) => compiled.matcher.matches(factsOfCall(call)) },
  };
}
