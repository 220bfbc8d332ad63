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

/** A character XML 1.0 allows (even escaped ones must be among these). */
function xmlChar(ch: string): string {
  const c = ch.codePointAt(0) as number;
  const allowed =
    c === 0x9 || c === 0xa || c === 0xd || (c >= 0x20 && c <= 0xd7ff) || (c >= 0xe000 && c <= 0xfffd) || c >= 0x10000;
  return allowed ? ch : "\uFFFD";
}

/** Text safe in an XML attribute or element. */
export function xmlText(text: string): string {
  // for…of walks code points: a pair is one character, a lone surrogate is replaced.
  return Array.from(text, xmlChar)
    .join("")
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&apos;");
}

const seconds = (s: number) => (Math.round(s * 1000) / 1000).toFixed(3);

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
