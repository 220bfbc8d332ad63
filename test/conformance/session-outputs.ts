import type { TestReport } from "fhir/r4.js";
import { parse } from "junit2json";
import { expect } from "vitest";
import type { SessionReport } from "../../src/conformance/session-report.js";
import { http } from "../cli/cli-process.js";
import { emittedProblems } from "../support/validator.js";

/**
 * Reads a finished session's TestReport and JUnit XML from the admin API (`sessionUrl`: …/conformance/sessions/{id})
 * and checks them against its report: the TestReport valid R4 by the sandbox's validator and Medplum's, its result
 * the session's (report-result-codes: pass or fail), one action per step; the JUnit XML read by a JUnit parser, one
 * testcase per step, a failure per failed step.
 */
export async function expectValidOutputs(sessionUrl: string, report: SessionReport): Promise<void> {
  const fhir = await http(`${sessionUrl}/testreport`);
  expect(fhir.status).toBe(200);
  const testReport = fhir.json as TestReport;
  expect(emittedProblems(testReport)).toEqual([]);
  expect(testReport.result).toBe(report.state === "passed" ? "pass" : "fail");
  const steps = report.tests.flatMap((t) => t.steps);
  expect((testReport.test ?? []).flatMap((t) => t.action)).toHaveLength(steps.length);

  const junit = await http(`${sessionUrl}/junit`);
  expect(junit.status).toBe(200);
  const parsed = (await parse(junit.text)) as { testsuite?: Array<{ tests?: number; failures?: number }> };
  const suite = parsed.testsuite?.[0];
  expect(suite?.tests).toBe(steps.length);
  expect(suite?.failures).toBe(steps.filter((s) => s.status === "fail").length);
}
