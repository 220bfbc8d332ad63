import type { RequestFacts } from "../matching/matcher.js";
import type { RuleTrace } from "./rule-trace.js";
import type { CompiledRule } from "./rules.js";

/** What one rule did with a message. */
export interface RuleVerdict {
  rule: string;
  id: string;
  source: string;
  line: number;
  /**
   * answered: it gave the answer; used-up: it matched, but its `times` or its
   * falling-through `sequence` were used up; not-matched: a condition failed;
   * not-reached: an earlier rule answered first.
   */
  outcome: "answered" | "used-up" | "not-matched" | "not-reached";
  /** The first condition that failed, and what the message had instead (for not-reached: what would have failed). */
  failed?: string;
  /** Why a rule that matched did not answer, or was not tried. */
  note?: string;
}

export interface RuleDecision {
  /** The name of the rule that answered, or null. */
  answeredBy: string | null;
  /** Every rule the message met (its operation's and those naming none), in the order they are tried. */
  rules: RuleVerdict[];
  /** Rules limited to other operations: never tried for this message. */
  otherOperations: number;
}

function verdict(rule: CompiledRule, outcome: RuleVerdict["outcome"], more: Partial<RuleVerdict> = {}): RuleVerdict {
  return { rule: rule.name, id: rule.id, source: rule.source, line: rule.line, outcome, ...more };
}

/**
 * Why each rule did or did not answer a message: the trace recorded when it
 * was answered (the rules in force, the counters that mattered), and the
 * first failed condition of every other rule, from the one matching core,
 * evaluated now against `facts` — the recorded request.
 *
 * @example
 *   explainDecision(call.trace, factsOfCall(call)).rules[0]
 *   // { rule: "allergy-down", outcome: "not-matched", failed: 'header x-sandbox-scenario was "alergy-down", expected "allergy-down"', … }
 */
export function explainDecision(trace: RuleTrace, facts: RequestFacts): RuleDecision {
  const passedOver = new Map(trace.passedOver.map((p) => [p.rule, p]));
  const answered = trace.answered;
  const rules: RuleVerdict[] = [];
  let reached = true;
  for (const rule of trace.rules.candidates(facts.operation)) {
    if (rule === answered) {
      rules.push(verdict(rule, "answered"));
      reached = false;
      continue;
    }
    const passed = passedOver.get(rule);
    if (passed?.why === "state" && rule.state) {
      const { scenario, required, keyName } = rule.state;
      const failed =
        passed.key === undefined
          ? `scenario ${scenario} keeps its state per ${keyName}, and the message gives no such key`
          : `scenario ${scenario} is in state ${JSON.stringify(passed.state)} for key ${passed.key}, the rule requires ${JSON.stringify(required)}`;
      rules.push(verdict(rule, reached ? "not-matched" : "not-reached", { failed }));
      continue;
    }
    if (passed?.why === "probability") {
      rules.push(
        verdict(rule, "not-matched", {
          failed: `the random draw passed over it: probability ${rule.probability}, drew ${passed.draw.toFixed(3)} (the draw comes from --seed and the rule's count of matches)`,
        }),
      );
      continue;
    }
    if (passed && passed.why !== "state") {
      const note =
        passed.why === "times"
          ? `it matched, but its times: ${rule.times} were used up (it had answered ${passed.answered} times); POST /__admin/reset zeroes the counters`
          : `it matched, but its sequence of ${rule.responses.length} responses was used up and afterSequence is fall-through`;
      rules.push(verdict(rule, "used-up", { note }));
      continue;
    }
    const failed = rule.matcher.firstMismatch(facts);
    if (!reached) {
      rules.push(
        verdict(rule, "not-reached", {
          note: `not tried: rule "${answered?.name}" answered first`,
          ...(failed ? { failed } : {}),
        }),
      );
      continue;
    }
    rules.push(
      verdict(rule, "not-matched", {
        // Evaluated on the journal's copy: a condition on a redacted header can read differently than it did live.
        failed:
          failed ??
          "every condition holds for the recorded request, but one did not when it was answered (a header the journal keeps redacted)",
      }),
    );
  }
  return {
    answeredBy: answered?.name ?? null,
    rules,
    otherOperations: trace.rules.rules.length - rules.length,
  };
}
