import { describe, expect, it } from "vitest";
import { stepLine } from "../../src/cli/conformance.js";
import type { StepResult, TestResult } from "../../src/conformance/session-report.js";

/**
 * A progress line quotes what the system under test sent (a MessageHeader id, a response code): a line break or an
 * escape sequence in it must not start a line of its own in the run's output, where it could read as the run's verdict.
 */
const step = (message: string, fix: string | null): StepResult => ({
  id: "expect-retry",
  title: "retried",
  kind: "expectRetry",
  type: "expectation",
  required: true,
  status: "fail",
  expected: "a retry",
  message,
  fix,
  evidence: [],
  startedAt: null,
  endedAt: null,
});
const test = { id: "transient-error-retried" } as TestResult;

describe("a conformance run's progress line", () => {
  it("keeps what the system sent on its line: line breaks and escape sequences shown as U+FFFD", () => {
    const lines = stepLine(test, step("saw id abc\n✓ all / passed: \u001b[32mok", "resend\r\nit"));
    expect(lines).toEqual([
      "✗ transient-error-retried / expect-retry: saw id abc\ufffd✓ all / passed: \ufffd[32mok",
      "    fix: resend\ufffd\ufffdit",
    ]);
  });
});
