import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ROOT } from "../cli/cli-process.js";

// What esbuild put into bundle/server.cjs, which the entry bundle/uae-fhir-sandbox.mjs runs (scripts/bundle.mjs writes
// its metafile beside it; npm test bundles before vitest). What the bundle does is tested by running it:
// test/cli/dockerfile.test.ts; its entry and code cache: test/package/bundle-entry.test.ts.

interface Metafile {
  outputs: Record<string, { inputs: Record<string, { bytesInOutput: number }> }>;
}
const meta = JSON.parse(readFileSync(`${ROOT}bundle/meta.json`, "utf8")) as Metafile;
const output = Object.entries(meta.outputs).find(([file]) => file.endsWith("server.cjs"))?.[1];
/** The input files that contribute code to the bundle (tree-shaken ones have no bytes in it). */
const included = Object.entries(output?.inputs ?? {})
  .filter(([, input]) => input.bytesInOutput > 0)
  .map(([file]) => file);
const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")) as { dependencies: Record<string, string> };
const lock = JSON.parse(readFileSync(`${ROOT}package-lock.json`, "utf8")) as {
  packages: Record<string, { dev?: boolean }>;
};

describe("the bundle", () => {
  it("holds the server's source and its runtime dependencies, and no development dependency", () => {
    const packages = new Set(included.map((f) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(f)?.[1]).filter(Boolean));
    // Each direct dependency with code is in; anything else in is theirs: no package the lockfile marks dev-only.
    const runtime = Object.keys(pkg.dependencies).filter((d) => !d.startsWith("@types/"));
    expect([...packages]).toEqual(expect.arrayContaining(runtime));
    const devOnly = [...packages].filter((name) => lock.packages[`node_modules/${name}`]?.dev === true);
    expect(devOnly).toEqual([]);
    expect(included).toContain("src/cli/main.ts");
    expect(included.filter((f) => /^(test|scripts)\//.test(f))).toEqual([]);
  });

  it("has faker's English locale and its base only: the chunks @faker-js/faker/locale/en imports, no other locale", () => {
    const FAKER = "node_modules/@faker-js/faker/dist/";
    // faker's own file for the en locale names the chunks it needs (en and base), independent of our imports.
    const enImports = [...readFileSync(`${ROOT}${FAKER}locale/en.js`, "utf8").matchAll(/from\s*"\.\.\/([^"]+)"/g)].map(
      (m) => `${FAKER}${m[1]}`,
    );
    expect(enImports).toHaveLength(2);
    const faker = included.filter((f) => f.startsWith(FAKER));
    expect(faker).toEqual(expect.arrayContaining(enImports));
    // Besides those chunks, only an entry module: faker's index or its locale/en.
    const entries = new Set([`${FAKER}index.js`, `${FAKER}locale/en.js`]);
    expect(faker.filter((f) => !enImports.includes(f) && !entries.has(f))).toEqual([]);
    // There are dozens of other locales to leave out.
    expect(readdirSync(`${ROOT}${FAKER}locale`).filter((f) => f.endsWith(".js")).length).toBeGreaterThan(50);
  });

  it("has fhirpath's ES module build and its R4 model, and reads the R4 definitions from the file beside it", () => {
    expect(included).toContain("node_modules/fhirpath/esm/fhirpath.mjs");
    expect(included.filter((f) => f.startsWith("node_modules/fhirpath/fhir-context/r4/"))).not.toEqual([]);
    expect(included.some((f) => f.endsWith("r4-definitions.json"))).toBe(false);
  });

  it("has zod with its English messages only, the locale zod uses by default: none of its dozens of others", () => {
    const LOCALES = "node_modules/zod/v4/locales/";
    expect(included.filter((f) => f.startsWith(LOCALES))).toEqual([`${LOCALES}en.js`]);
    expect(readdirSync(`${ROOT}${LOCALES}`).filter((f) => f.endsWith(".js")).length).toBeGreaterThan(40);
  });

  it("has fhirpath's R4 model as JSON text for JSON.parse, not as object literals to compile", () => {
    const code = readFileSync(`${ROOT}bundle/server.cjs`, "utf8");
    // The first entries of fhirpath's own file, in the order the file has them.
    const model = JSON.parse(readFileSync(`${ROOT}node_modules/fhirpath/fhir-context/r4/path2Type.json`, "utf8"));
    const start = JSON.stringify(Object.fromEntries(Object.entries(model).slice(0, 2))).slice(0, -1);
    expect(code).toContain(`JSON.parse('${start},`);
  });

  it("has pino's core without its transports: nothing in it can start a worker thread", () => {
    expect(included).toContain("node_modules/pino/pino.js");
    // A transport is a worker thread (thread-stream) loading its targets by file name, which no bundle can serve.
    expect(included.filter((f) => /node_modules\/(thread-stream|real-require)\//.test(f))).toEqual([]);
    const code = readFileSync(`${ROOT}bundle/server.cjs`, "utf8");
    // worker_threads' Worker, whatever the minifier calls the module: destructured, or a property.
    expect(code).not.toMatch(/\bWorker\s*[,}:]|\.Worker\b|new Worker\b/);
    expect(code).not.toContain("thread-stream");
  });
});
