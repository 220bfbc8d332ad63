import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { SERVE_FLAGS } from "../../src/cli/flags.js";
import { DEFAULT_OPTIONS } from "../../src/config/options.js";

// docs/testing-with-the-sandbox.md shows the example client and its tests in full; the same files live in
// test/embed/example/, where vitest runs them. This keeps the page and the files identical.

const ROOT = new URL("../../", import.meta.url);
const DOC = readFileSync(new URL("docs/testing-with-the-sandbox.md", ROOT), "utf8");
const EXAMPLE = new URL("test/embed/example/", ROOT);
const PACKAGE = JSON.parse(readFileSync(new URL("package.json", ROOT), "utf8")) as {
  name: string;
  exports: Record<string, { default: string }>;
};

/** The one difference allowed: the repository's copy imports the package from source. */
const IMPORT_IN_REPO = 'from "../../../src/index.js"';
const IMPORT_IN_DOC = 'from "uae-fhir-sandbox"';

/** Code blocks marked `<!-- example: FILE -->`, by file name. */
function examples(): Map<string, string> {
  const found = new Map<string, string>();
  for (const m of DOC.matchAll(/^<!-- example: (\S+) -->\n```ts\n([\s\S]*?)^```$/gm)) {
    expect(found.has(m[1] as string), `${m[1]} is shown twice`).toBe(false);
    found.set(m[1] as string, m[2] as string);
  }
  return found;
}

const file = (name: string) => readFileSync(new URL(name, EXAMPLE), "utf8");

describe("docs/testing-with-the-sandbox.md", () => {
  it("shows every file of test/embed/example, and nothing else, as a marked code block", () => {
    const files = readdirSync(EXAMPLE).filter((f) => f.endsWith(".ts"));
    expect([...examples().keys()].sort()).toEqual(files.sort());
    expect(files).toEqual(expect.arrayContaining(["client.ts", "client.test.ts"]));
  });

  it.each(["client.ts", "client.test.ts"])("shows %s exactly as the repository has it", (name) => {
    const shown = examples().get(name);
    expect(shown).toBeDefined();
    expect(shown).toBe(file(name).replaceAll(IMPORT_IN_REPO, IMPORT_IN_DOC));
    expect(shown).not.toContain("src/");
  });

  it("differs from the repository's test file only in where createSandbox comes from", () => {
    const repo = file("client.test.ts");
    expect(repo.split(IMPORT_IN_REPO)).toHaveLength(2);
    expect(examples().get("client.test.ts")?.split(IMPORT_IN_DOC)).toHaveLength(2);
    // The client is the integrator's own code: it imports nothing from the sandbox.
    expect(file("client.ts")).not.toMatch(/from "(\.\.\/)+src\/|from "uae-fhir-sandbox"/);
  });

  it('names the package that "uae-fhir-sandbox" resolves to, with createSandbox in its entry point', () => {
    expect(PACKAGE.name).toBe("uae-fhir-sandbox");
    expect(PACKAGE.exports["."]?.default).toBe("./dist/index.js");
    // dist/index.js is built from src/index.ts, which the repository's copy imports.
    expect(readFileSync(new URL("src/index.ts", ROOT), "utf8")).toMatch(/export \{[^}]*\bcreateSandbox\b[^}]*\} from/);
  });

  it("lists every sandbox option in its options table", () => {
    const table = /^### Options\n([\s\S]*?)^### /m.exec(DOC)?.[1] ?? "";
    const listed = [...table.matchAll(/^\| `([a-zA-Z]+)` \|/gm)].map((m) => m[1]);
    expect(listed.sort()).toEqual(Object.keys(DEFAULT_OPTIONS).sort());
    // The flag column names real serve flags.
    const flags = [...table.matchAll(/^\| `[a-zA-Z]+` \| [^|]* \| `--([a-z-]+)`/gm)].map((m) => m[1]);
    expect(flags.length).toBeGreaterThan(15);
    expect(flags.filter((f) => !SERVE_FLAGS.some((s) => s.name === f))).toEqual([]);
  });
});
