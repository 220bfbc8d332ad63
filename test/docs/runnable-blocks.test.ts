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

/** The page's test, when there is one that runs this page. */
function runnerOf(page: string): string | undefined {
  const file = `test/docs/run-${pageSlug(page)}.test.ts`;
  const path = join(ROOT, file);
  if (!existsSync(path)) return undefined;
  return readFileSync(path, "utf8").includes(JSON.stringify(page)) ? file : undefined;
}

describe("every shell block of the docs is run or says why not", () => {
  it("has a page for every page test", () => {
    const tests = readdirSync(join(ROOT, "test/docs")).filter((f) => /^run-.+\.test\.ts$/.test(f));
    const pages = new Set(PAGES.map((p) => `run-${pageSlug(p)}.test.ts`));
    expect(tests.filter((t) => !pages.has(t))).toEqual([]);
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
