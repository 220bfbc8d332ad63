import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { ROOT } from "../cli/cli-process.js";

// What the sandbox says (answers, CLI messages, the dashboard's text) must stand on its own, as the docs must
// (references.test.ts): no document a user cannot open — the project's private contract, its issue tracker — and no
// path of the authors' machine. Comments may name them; the text of string literals and JSX may not.
// Parsing every source file takes a few seconds on a busy machine: the whole-tree check has its own budget.

const UNSEEN: Array<[string, RegExp]> = [
  ["the project's contract", /\bCONTRACT\b|(?<!RFC \d+ )§\s*\d/],
  ["an issue number", /\bissues? #\d+|\bissue \d+\b/i],
  ["a path on the authors' machine", /\/work\/|\/home\/\w+/],
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

/** The text of every string, template and JSX text of a TypeScript source, with its line. */
function texts(file: string, source: string): Array<{ line: number; text: string }> {
  const tree = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true);
  const found: Array<{ line: number; text: string }> = [];
  const visit = (node: ts.Node) => {
    if (
      ts.isStringLiteral(node) ||
      ts.isNoSubstitutionTemplateLiteral(node) ||
      ts.isTemplateHead(node) ||
      ts.isTemplateMiddle(node) ||
      ts.isTemplateTail(node) ||
      ts.isJsxText(node)
    ) {
      found.push({ line: tree.getLineAndCharacterOfPosition(node.getStart()).line + 1, text: node.text });
    }
    ts.forEachChild(node, visit);
  };
  visit(tree);
  return found;
}

function unseenReferences(file: string, source: string): string[] {
  return texts(file, source).flatMap(({ line, text }) =>
    UNSEEN.filter(([, pattern]) => pattern.test(text)).map(([what]) => `${file}:${line}: ${what}: ${text.trim()}`),
  );
}

describe("the sandbox's messages refer only to what a user can open", () => {
  it("no string in src/ names the private contract, an issue number or a machine path", () => {
    const found = sourceFiles(join(ROOT, "src")).flatMap((path) =>
      unseenReferences(relative(ROOT, path), readFileSync(path, "utf8")),
    );
    expect(found).toEqual([]);
  }, 30_000);

  it("the check finds such a string, and not a comment (it can fail)", () => {
    const source = [
      "// CONTRACT §13 in a comment is fine",
      "/** so is issue 24 */",
      'const a = "e.g. team-a (CONTRACT §13)";',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a template literal, on purpose
      "const b = `see issue #12 for ${a}`;",
      "const c = <p>read /work/shared/x</p>;",
    ].join("\n");
    expect(unseenReferences("x.tsx", source)).toEqual([
      "x.tsx:3: the project's contract: e.g. team-a (CONTRACT §13)",
      "x.tsx:4: an issue number: see issue #12 for",
      "x.tsx:5: a path on the authors' machine: read /work/shared/x",
    ]);
  });
});
