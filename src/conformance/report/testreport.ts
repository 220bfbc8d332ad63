import type { TestReport, TestReportParticipant, TestReportTestAction } from "fhir/r4.js";
import { VERSION } from "../../version.js";
import type { SessionReport, StepResult, StepStatus, TestResult } from "../session-report.js";
import { adminBaseOf, callUrl } from "./call-url.js";
import { testScriptUrl } from "./testscript.js";

/**
 * A session's R4 TestReport: the session's facts as its participants, each test with an action per step (the
 * sandbox's actions as `operation`s, the expectations of the system as `assert`s), each with its result and a
 * message saying what was expected, what happened and what to fix. Made from the SessionReport alone.
 *
 * Codes (R4 value sets, all required bindings): status report-status-codes, result report-result-codes, participant
 * type report-participant-type, action result report-action-result-codes.
 */

export interface TestReportOptions {
  /** The workspace's admin API base the evidence links point into; default from the session's message URL. */
  adminBase?: string;
  /** When a running session's report is issued (default now); a finished one is issued when it ended. */
  now?: Date;
}

/** A FHIR id: the session's, when it is one. */
const FHIR_ID = /^[A-Za-z0-9\-.]{1,64}$/;

const STATUS: Record<SessionReport["state"], TestReport["status"]> = {
  running: "in-progress",
  passed: "completed",
  failed: "completed",
  stopped: "stopped",
};

/** A step's result as report-action-result-codes says it: a step not run (pending, or cut off running) is a skip. */
const ACTION_RESULT: Record<StepStatus, "pass" | "skip" | "fail" | "warning" | "error"> = {
  pass: "pass",
  fail: "fail",
  warning: "warning",
  skip: "skip",
  pending: "skip",
  running: "skip",
};

/** pass and fail as the session found them; pending while it runs, or stopped with no required test failed. */
function resultOf(report: SessionReport): TestReport["result"] {
  if (report.state === "passed") return "pass";
  if (report.state === "failed") return "fail";
  return report.tests.some((t) => t.required && t.status === "fail") ? "fail" : "pending";
}

/** The percentage of tests passed (a test that only warned passed), to one decimal. */
function scoreOf(tests: readonly TestResult[]): number | undefined {
  if (tests.length === 0) return undefined;
  const passed = tests.filter((t) => t.status === "pass" || t.status === "warning").length;
  return Math.round((passed / tests.length) * 1000) / 10;
}

function participants(report: SessionReport, adminBase: string): TestReportParticipant[] {
  const { sandbox, system } = report.participants;
  const sender = report.role === "sender";
  const licence = system.pharmacyLicence;
  return [
    {
      type: "test-engine",
      uri: `${adminBase}/conformance/sessions/${encodeURIComponent(report.id)}`,
      display: `uae-fhir-sandbox ${VERSION}, conformance session ${report.id}`,
    },
    {
      // The system sends to the sandbox (sender), or the sandbox pushes to the pharmacy (receiver).
      type: sender ? "server" : "client",
      uri: sandbox.messageUrl,
      display: `the sandbox, workspace ${report.workspace}`,
    },
    {
      type: sender ? "client" : "server",
      uri: sender
        ? `urn:uae-fhir-sandbox:system-under-test:${encodeURIComponent(report.workspace)}`
        : (system.pharmacyUrl ?? `urn:uae-fhir-sandbox:pharmacy:${encodeURIComponent(licence ?? "unknown")}`),
      display: sender
        ? `the system under test (sender)${system.operations.length > 0 ? `, declaring ${system.operations.join(", ")}` : ", no operations declared"}`
        : `the pharmacy under test${licence ? `, licence ${licence}` : ""}`,
    },
  ];
}

/** What a step found, in markdown: its outcome, what was expected, what to fix, the calls that decided it. */
export function stepMessage(step: StepResult, adminBase: string): string {
  const lines = [`**${step.id}**: ${step.title}`];
  const outcome =
    step.message ?? (step.status === "running" ? "still running" : step.status === "pending" ? "not run" : null);
  if (outcome) lines.push("", outcome);
  if (step.status === "fail" || step.status === "warning") {
    lines.push("", `Expected: ${step.expected}`);
    if (step.fix) lines.push("", `To fix: ${step.fix}`);
  }
  if (step.evidence.length > 0) {
    lines.push("", ...step.evidence.map((e) => `- [call ${e.callId}](${callUrl(adminBase, e.callId)}): ${e.note}`));
  }
  return lines.join("\n").trim();
}

function action(step: StepResult, adminBase: string): TestReportTestAction {
  const result = ACTION_RESULT[step.status];
  const message = stepMessage(step, adminBase);
  const urls = step.evidence.map((e) => callUrl(adminBase, e.callId));
  if (step.type === "action") {
    return { operation: { result, message, ...(urls[0] !== undefined ? { detail: urls[0] } : {}) } };
  }
  return { assert: { result, message, ...(urls.length > 0 ? { detail: urls.join(" ") } : {}) } };
}

export function testReport(report: SessionReport, options: TestReportOptions = {}): TestReport {
  const adminBase = options.adminBase ?? adminBaseOf(report);
  const { plan } = report;
  const score = scoreOf(report.tests);
  return {
    resourceType: "TestReport",
    ...(FHIR_ID.test(report.id) ? { id: report.id } : {}),
    identifier: { value: report.id },
    name: `${plan.title}: ${report.role} conformance session ${report.id}${report.stopReason ? ` (stopped: ${report.stopReason})` : ""}`,
    status: STATUS[report.state],
    testScript: {
      identifier: { system: "urn:ietf:rfc:3986", value: testScriptUrl(plan.id) },
      display: `${plan.title} (${plan.id} ${plan.version})`,
    },
    result: resultOf(report),
    ...(score !== undefined ? { score } : {}),
    tester: `uae-fhir-sandbox ${VERSION}`,
    issued: report.endedAt ?? (options.now ?? new Date()).toISOString(),
    participant: participants(report, adminBase),
    test: report.tests.map((test) => ({
      name: test.id,
      description: [
        `${test.title}.`,
        `Rule ${test.rule.id} (${test.rule.source}): ${test.rule.text} ${test.rule.ref}`,
        test.required ? "" : "Not required: its failures are warnings.",
        test.description ?? "",
      ]
        .filter(Boolean)
        .join(" "),
      action: test.steps.map((step) => action(step, adminBase)),
    })),
  };
}
