import { junitSeconds, xmlText } from "../../text/xml.js";
import type { SessionReport, StepResult } from "../session-report.js";
import { adminBaseOf, callUrl } from "./call-url.js";

/**
 * A session as JUnit XML (the Ant/Surefire format CI systems read): one <testsuite> per session, a <testcase> per
 * step (classname: its test's id, name: its id), <failure> with what was expected and what happened, <skipped> for a
 * step not run, a warning (a step not required that failed) as <system-out>. Made from the SessionReport alone.
 */

export interface JunitOptions {
  /** The workspace's admin API base the evidence links point into; default from the session's message URL. */
  adminBase?: string;
}

/** A list as a property value: comma-separated, or "none" (an empty value reads as nothing, or NaN, in some readers). */
const listed = (items: readonly string[]) => (items.length > 0 ? items.join(",") : "none");

const secondsBetween = (from: string | null, to: string | null) =>
  from && to ? Math.max(0, (Date.parse(to) - Date.parse(from)) / 1000) : 0;

/** What a failed or warned step says beyond its message: expected, fix, the calls that decided it. */
function details(step: StepResult, adminBase: string): string {
  return [
    `expected: ${step.expected}`,
    `happened: ${step.message ?? "(no message)"}`,
    ...(step.fix ? [`to fix: ${step.fix}`] : []),
    ...step.evidence.map((e) => `evidence: ${callUrl(adminBase, e.callId)} ${e.note}`),
  ].join("\n");
}

function testcase(classname: string, step: StepResult, adminBase: string): string[] {
  const open = `    <testcase classname="${xmlText(classname)}" name="${xmlText(step.id)}" time="${junitSeconds(secondsBetween(step.startedAt, step.endedAt))}"`;
  switch (step.status) {
    case "pass":
      return [`${open}/>`];
    case "fail":
      return [
        `${open}>`,
        `      <failure message="${xmlText(step.message ?? "failed")}" type="${xmlText(step.kind)}">${xmlText(details(step, adminBase))}</failure>`,
        "    </testcase>",
      ];
    case "warning":
      return [
        `${open}>`,
        `      <system-out>${xmlText(`warning (not required): ${details(step, adminBase)}`)}</system-out>`,
        "    </testcase>",
      ];
    default: {
      // skip, and a step the session did not get to (pending) or was stopped in (running).
      const why = step.message ?? (step.status === "running" ? "not finished: the session stopped" : "not run");
      return [`${open}>`, `      <skipped message="${xmlText(why)}"/>`, "    </testcase>"];
    }
  }
}

export function conformanceJunit(report: SessionReport, options: JunitOptions = {}): string {
  const adminBase = options.adminBase ?? adminBaseOf(report);
  const steps = report.tests.flatMap((t) => t.steps);
  const failures = steps.filter((s) => s.status === "fail").length;
  const skipped = steps.filter((s) => s.status !== "pass" && s.status !== "fail" && s.status !== "warning").length;
  const time = junitSeconds(secondsBetween(report.startedAt, report.endedAt));
  const counts = `tests="${steps.length}" failures="${failures}" errors="0" skipped="${skipped}" time="${time}"`;
  const { plan } = report;
  const properties: Array<[string, string]> = [
    ["session", report.id],
    ["role", report.role],
    ["plan", `${plan.id} ${plan.version}`],
    ["workspace", report.workspace],
    ["state", report.state],
    ["timeScale", String(report.timeScale)],
    ...(report.stopReason ? ([["stopReason", report.stopReason]] as Array<[string, string]>) : []),
    // Coverage: what the session exercised of the sandbox's operations and of the plan's rules, and what not.
    ["operations.exercised", listed(report.coverage.operations.exercised)],
    ["operations.notExercised", listed(report.coverage.operations.notExercised)],
    ["rules.checked", listed(report.coverage.rules.checked)],
    ["rules.notChecked", listed(report.coverage.rules.notChecked)],
  ];
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="uae-fhir-sandbox conformance" ${counts}>`,
    `  <testsuite name="${xmlText(`${plan.id} (${report.role})`)}" ${counts} timestamp="${xmlText(report.startedAt)}">`,
    "    <properties>",
    ...properties.map(([name, value]) => `      <property name="${name}" value="${xmlText(value)}"/>`),
    "    </properties>",
  ];
  for (const test of report.tests) for (const step of test.steps) lines.push(...testcase(test.id, step, adminBase));
  lines.push("  </testsuite>", "</testsuites>", "");
  return lines.join("\n");
}
