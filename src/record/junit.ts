import { junitSeconds as seconds, xmlText } from "../text/xml.js";

/** One test case of a JUnit report: a replayed call. */
export interface JunitCase {
  name: string;
  classname: string;
  timeSeconds: number;
  /** Present when the call's answer differs: a one-line message and the full diff. */
  failure?: { message: string; text: string };
}

export interface JunitSuite {
  name: string;
  timestamp: Date;
  timeSeconds: number;
  cases: readonly JunitCase[];
}

/**
 * A JUnit XML report (the Ant/Surefire format CI systems read): one
 * `<testsuite>`, one `<testcase>` per call, `<failure>` with the diff for
 * each call whose answer differs.
 */
export function junitXml(suite: JunitSuite): string {
  const failures = suite.cases.filter((c) => c.failure).length;
  const attrs = `tests="${suite.cases.length}" failures="${failures}" errors="0" time="${seconds(suite.timeSeconds)}"`;
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="uae-fhir-sandbox replay" ${attrs}>`,
    `  <testsuite name="${xmlText(suite.name)}" ${attrs} skipped="0" timestamp="${suite.timestamp.toISOString()}">`,
  ];
  for (const c of suite.cases) {
    const open = `    <testcase classname="${xmlText(c.classname)}" name="${xmlText(c.name)}" time="${seconds(c.timeSeconds)}"`;
    if (!c.failure) {
      lines.push(`${open}/>`);
      continue;
    }
    lines.push(
      `${open}>`,
      `      <failure message="${xmlText(c.failure.message)}" type="difference">${xmlText(c.failure.text)}</failure>`,
      "    </testcase>",
    );
  }
  lines.push("  </testsuite>", "</testsuites>", "");
  return lines.join("\n");
}
