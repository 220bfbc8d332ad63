import { parse, type TestCase, type TestSuites } from "junit2json";
import { describe, expect, it } from "vitest";
import { conformanceJunit } from "../../src/conformance/report/junit.js";
import { failingReport, passingReport, stoppedReport } from "./fixtures/session-reports.js";

// A session as JUnit XML, read back by a JUnit XML parser (junit2json) as a CI system reads it: one testsuite, a
// testcase per step (classname: the test's id), failures, skips and warnings where the session found them.

const read = async (xml: string) => {
  const parsed = await parse(xml);
  // <testsuites> at the top, as the report writes it (the parser also takes a lone <testsuite>).
  const suites = parsed && "testsuite" in parsed ? (parsed as TestSuites) : undefined;
  const suite = suites?.testsuite?.[0];
  if (!suites || !suite) throw new Error(`no testsuites > testsuite in ${xml}`);
  return { suites, suite, cases: suite.testcase ?? [] };
};

/** The suite's properties by name, their values as text (the parser reads numbers as numbers). */
const propertiesOf = (suite: { properties?: Array<{ name?: string; value?: unknown }> }) =>
  Object.fromEntries((suite.properties ?? []).map((p) => [p.name, String(p.value)]));

const byName = (cases: TestCase[], classname: string, name: string) =>
  cases.find((c) => c.classname === classname && c.name === name);

describe("the JUnit XML of a session", () => {
  it("passing: one testsuite, a testcase per step, none failed or skipped", async () => {
    const { suites, suite, cases } = await read(conformanceJunit(passingReport()));

    expect(suites.testsuite).toHaveLength(1);
    expect(suite).toMatchObject({ name: "sender-mini (sender)", tests: 7, failures: 0, errors: 0, skipped: 0 });
    expect(suite.time).toBeCloseTo(42.25, 3);
    expect(cases.map((c) => `${c.classname} ${c.name}`)).toEqual([
      "declared-operations each-operation",
      "transient-error-retried answer-503",
      "transient-error-retried retried",
      "transient-error-retried after-retry-after",
      "fatal-error-not-retried answer-fatal",
      "fatal-error-not-retried no-retry",
      "fatal-error-not-retried new-id",
    ]);
    expect(cases.every((c) => !c.failure && !c.skipped && !c["system-out"])).toBe(true);
    expect(cases[0]?.time).toBeCloseTo(1.5, 3);
    expect(propertiesOf(suite)).toMatchObject({
      session: "s-2026-0001",
      role: "sender",
      plan: "sender-mini 1.0",
      workspace: "team-a",
      state: "passed",
      "operations.exercised": "add-allergy",
      "operations.notExercised": "view-patient-profile",
      "rules.checked": "reliable-messaging,no-retry-after-fatal",
      "rules.notChecked": "none",
    });
  });

  it("failing: the failure with its message (escaped characters intact), the skip after it, the warning as output", async () => {
    const { suite, cases } = await read(conformanceJunit(failingReport()));

    expect(suite).toMatchObject({ tests: 7, failures: 1, errors: 0, skipped: 1 });
    const failed = byName(cases, "transient-error-retried", "retried");
    expect(failed?.failure).toHaveLength(1);
    expect(failed?.failure?.[0]?.message).toBe(
      'expected a retry of message 6f1c… with the same MessageHeader id within 30 s; saw 2 messages after the 503, both with new ids (a91e…, 0b7d…) & "no" <retry>',
    );
    expect(failed?.failure?.[0]?.type).toBe("expectRetry");
    const body = failed?.failure?.[0]?.inner ?? "";
    expect(body).toContain("expected: a retry of message 6f1c… with the same MessageHeader id and the same content");
    expect(body).toContain("to fix: Retry a message answered 503 with the same MessageHeader id and the same content.");
    expect(body).toContain(
      "evidence: http://127.0.0.1:8080/w/team-a/__admin/calls/6 a new id a91e… 2.0 s after the 503",
    );
    expect(byName(cases, "transient-error-retried", "after-retry-after")?.skipped).toEqual([
      { message: "not run: step retried failed" },
    ]);
    const warned = byName(cases, "fatal-error-not-retried", "no-retry");
    expect(warned?.failure).toBeUndefined();
    expect(warned?.["system-out"]?.[0]).toContain("warning (not required)");
    expect(warned?.["system-out"]?.[0]).toContain("happened: retried 3.0 s after the fatal-error (call 8)");
  });

  it("stopped: the step cut off and the steps not run are skipped; the stop reason is a property", async () => {
    const { suite, cases } = await read(conformanceJunit(stoppedReport()));

    expect(suite).toMatchObject({ name: "receiver-mini (receiver)", tests: 9, failures: 0, skipped: 7 });
    expect(byName(cases, "order-flow", "acknowledged")?.skipped?.[0]?.message).toBe(
      "stopped: the session was stopped while this step ran",
    );
    expect(byName(cases, "unknown-order", "refused")?.skipped?.[0]?.message).toBe("not run");
    expect(propertiesOf(suite)).toMatchObject({
      state: "stopped",
      stopReason: "stopped through DELETE /__admin/conformance/sessions/s-2026-0002",
      timeScale: "0.1",
    });
  });

  it("characters XML 1.0 cannot hold are replaced, not written", async () => {
    const report = failingReport();
    const step = report.tests[1]?.steps[1];
    if (step) step.message = "bad \u0000 byte \u001b[31m and a lone \ud800 surrogate";
    const { cases } = await read(conformanceJunit(report));
    expect(byName(cases, "transient-error-retried", "retried")?.failure?.[0]?.message).toBe(
      "bad \uFFFD byte \uFFFD[31m and a lone \uFFFD surrogate",
    );
  });
});
