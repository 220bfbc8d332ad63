import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../cli/cli-process.js";

// What a user of the project reads must stand on its own: no references to documents they cannot see (the
// project's private contract, its issue tracker), and every relative link resolves inside the repository.

const DOCS = [
  "README.md",
  "scenarios/README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

/** Outside references a reader cannot follow, with what each looks like. */
const UNSEEN: Array<[string, RegExp]> = [
  ["the project's contract", /\bCONTRACT\b|(?<!RFC \d+ )§\s*\d/],
  ["an issue number", /\bissues? #\d+|\bissue \d+\b/i],
  ["a path on the authors' machine", /\/work\/|\/home\/\w+/],
];

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  // Headings outside fenced code blocks.
  const prose = text.replace(/^```[\s\S]*?^```/gm, "");
  for (const m of prose.matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(m[1] as string);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Relative Markdown links of a document (outside code blocks), as written. */
function relativeLinks(text: string): string[] {
  const prose = text.replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "");
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1] as string)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

describe("README and docs refer only to what a reader can open", () => {
  it.each(DOCS)("%s names no private document, issue or machine path", (doc) => {
    const lines = readFileSync(join(ROOT, doc), "utf8").split("\n");
    const found = lines.flatMap((line, i) =>
      UNSEEN.filter(([, pattern]) => pattern.test(line)).map(([what]) => `${doc}:${i + 1}: ${what}: ${line.trim()}`),
    );
    expect(found).toEqual([]);
  });

  it.each(DOCS)("%s: every relative link resolves to a file, and its #anchor to a heading there", (doc) => {
    const text = readFileSync(join(ROOT, doc), "utf8");
    const broken: string[] = [];
    for (const link of relativeLinks(text)) {
      const [path = "", anchor] = link.split("#");
      const target = path === "" ? join(ROOT, doc) : join(ROOT, dirname(doc), decodeURI(path));
      if (!existsSync(target)) {
        broken.push(`${link}: no file ${relative(ROOT, target)}`);
        continue;
      }
      if (anchor === undefined || statSync(target).isDirectory()) continue;
      if (!anchorsOf(readFileSync(target, "utf8")).has(anchor)) {
        broken.push(`${link}: no heading #${anchor} in ${relative(ROOT, target)}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("the link checker itself finds a broken link and an unknown anchor (it can fail)", () => {
    expect(relativeLinks("see [a](docs/nope.md) and [b](#where) and `[c](x.md)` and [d](https://x.example)")).toEqual([
      "docs/nope.md",
      "#where",
    ]);
    expect(anchorsOf("# Title\n## Where the contract is silent, what we chose\n```\n## not a heading\n```\n")).toEqual(
      new Set(["title", "where-the-contract-is-silent-what-we-chose"]),
    );
  });
});
