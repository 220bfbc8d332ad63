import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../cli/cli-process.js";
import { isShell, markerOf, pageSlug, parseBlocks } from "./doc-blocks.js";

// Every shell block of the README and of docs/ is run by `npm test` (its page has a run-<page>.test.ts that runs the
// page), or says why it cannot be run here. A page without a runner is a failure listing its blocks.

const PAGES = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => `docs/${f}`),
];

/**
 * Whether a page test's source runs `page`: a top-level `pageTest("<page>", …)` call, outside comments, and nothing
 * skipped or left to do (`describe.skip`, `it.todo`, `skipIf`) — a name in a comment or a skipped test runs nothing.
 */
function callsPageTest(source: string, page: string): boolean {
  const code = source.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "");
  if (/\.(skip|todo)(If)?\b/.test(code)) return false;
  return new RegExp(`^pageTest\\(\\s*${JSON.stringify(page).replace(/[.]/g, "\\.")}\\s*,`, "m").test(code);
}

/** The page's test, when there is one that runs this page. */
function runnerOf(page: string): string | undefined {
  const file = `test/docs/run-${pageSlug(page)}.test.ts`;
  const path = join(ROOT, file);
  if (!existsSync(path)) return undefined;
  return callsPageTest(readFileSync(path, "utf8"), page) ? file : undefined;
}

describe("every shell block of the docs is run or says why not", () => {
  it("has a page for every page test", () => {
    const tests = readdirSync(join(ROOT, "test/docs")).filter((f) => /^run-.+\.test\.ts$/.test(f));
    const pages = new Set(PAGES.map((p) => `run-${pageSlug(p)}.test.ts`));
    expect(tests.filter((t) => !pages.has(t))).toEqual([]);
  });

  const header = 'import { pageTest } from "./doc-blocks.js";\n';
  it.each([
    ["a call", `${header}pageTest("docs/ci.md", 40_000);\n`, true],
    ["a call with options", `${header}pageTest(\n  "docs/ci.md",\n  40_000,\n  { keep: true },\n);\n`, true],
    ["the name in a comment", `${header}// pageTest("docs/ci.md", 40_000) once ran here\n`, false],
    ["a call in a block comment", `${header}/*\npageTest("docs/ci.md", 40_000);\n*/\n`, false],
    ["the name in a string", `${header}const page = "docs/ci.md";\n`, false],
    ["another page", `${header}pageTest("docs/auth.md", 40_000);\n`, false],
    ["a skipped describe", `${header}describe.skip("x", () => {\n  pageTest("docs/ci.md", 40_000);\n});\n`, false],
    ["a todo", `${header}pageTest("docs/ci.md", 40_000);\nit.todo("docs/ci.md");\n`, false],
    ["a skipIf", `${header}describe.skipIf(true)("x", () => pageTest("docs/ci.md", 40_000));\n`, false],
  ])("tells whether %s runs the page", (_, source, runs) => {
    expect(callsPageTest(source, "docs/ci.md")).toBe(runs);
  });

  it.each(PAGES)("%s", (page) => {
    const blocks = parseBlocks(readFileSync(join(ROOT, page), "utf8"), page).filter(isShell);
    const unskipped = blocks.filter((b) => !markerOf(b, "skip"));
    if (unskipped.length === 0) return;
    const runner = runnerOf(page);
    expect(
      runner,
      `${page} has ${unskipped.length} shell block(s) that no test runs (lines ${unskipped.map((b) => b.line).join(", ")}): ` +
        `add test/docs/run-${pageSlug(page)}.test.ts calling pageTest(${JSON.stringify(page)}, …), or mark a block ` +
        "<!-- doc-test: skip — <reason> --> when it cannot run here",
    ).toBeDefined();
  });
});
