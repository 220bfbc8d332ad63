import type { SessionReport, TestResult } from "./session-report.js";
import type { ObservedCall } from "./step-context.js";

/**
 * What a session exercised: the operations its calls carried (inbound messages and outbound pushes) against every
 * operation the sandbox knows, and the plan's rules whose tests ran to an end against all of them.
 */
export function coverage(
  calls: readonly ObservedCall[],
  operationIds: readonly string[],
  tests: readonly Pick<TestResult, "status" | "rule">[],
  ruleIds: readonly string[],
): SessionReport["coverage"] {
  const seen = new Set<string>();
  for (const { record } of calls) if (record.operation !== null) seen.add(record.operation);
  const checked = new Set(
    tests.filter((t) => t.status === "pass" || t.status === "fail" || t.status === "warning").map((t) => t.rule.id),
  );
  return {
    operations: {
      exercised: operationIds.filter((id) => seen.has(id)),
      notExercised: operationIds.filter((id) => !seen.has(id)),
    },
    rules: {
      checked: ruleIds.filter((id) => checked.has(id)),
      notChecked: ruleIds.filter((id) => !checked.has(id)),
    },
  };
}
