import { type ChildProcess, execFile, spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { promisify } from "node:util";
import type { AllergyIntolerance, Patient } from "fhir/r4.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Child, http, LISTENING, ROOT } from "../cli/cli-process.js";
import { envelope, messageBundle, responseHeader, STANDARD } from "../support/messages.js";
import { markdownLinks, repositoryHome } from "./package-files.js";

// The package as a user gets it: the project is copied without dist/ (a clean clone), packed (prepack builds it),
// and the tarball installed into a fresh project, where a strict TypeScript consumer (skipLibCheck off) compiles
// and runs createSandbox, and the CLI runs through npx. Dependencies come from the registry through npm's cache.

const exec = promisify(execFile);
const STEP_MS = 180_000;
const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")) as {
  version: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

interface Packed {
  filename: string;
  entryCount: number;
  size: number;
  files: Array<{ path: string }>;
}

let work = "";
let packed: Packed;
let consumer = "";
const paths = () => new Set(packed.files.map((f) => f.path));

/** Runs a command to its end; rejects with its output when it fails. */
async function run(file: string, args: string[], cwd: string) {
  try {
    return await exec(file, args, { cwd, timeout: STEP_MS, maxBuffer: 64 * 1024 * 1024 });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`${file} ${args.join(" ")} failed in ${cwd}:\n${stdout ?? ""}\n${stderr ?? ""}`.slice(0, 8000));
  }
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "packed-install-"));
  // A clean clone: the tracked tree without build output; node_modules linked, as `npm ci` would have made it.
  const source = join(work, "source");
  const generated = new Set(["node_modules", "dist", "bundle", ".git", "coverage"]);
  cpSync(ROOT, source, {
    recursive: true,
    filter: (path) => !generated.has(relative(ROOT, path).split("/")[0] as string),
  });
  symlinkSync(join(ROOT, "node_modules"), join(source, "node_modules"), "dir");
  const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", work], source);
  // prepack's scripts print on the same stdout, before npm's JSON.
  [packed] = JSON.parse(stdout.slice(stdout.search(/^\[/m))) as [Packed];

  consumer = join(work, "consumer");
  mkdirSync(consumer);
  writeFileSync(
    join(consumer, "package.json"),
    JSON.stringify({ name: "sandbox-consumer", private: true, type: "module" }, null, 2),
  );
  await run(
    "npm",
    [
      "install",
      "--no-audit",
      "--no-fund",
      "--prefer-offline",
      join(work, packed.filename),
      `@types/node@${pkg.devDependencies["@types/node"]}`,
    ],
    consumer,
  );
}, 2 * STEP_MS);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
}, STEP_MS);

describe("npm pack on a clean clone", () => {
  it("builds what it packs: the library, its types, the CLI and the R4 definitions, without source maps", () => {
    const files = paths();
    for (const file of [
      "package.json",
      "dist/index.js",
      "dist/index.d.ts",
      "dist/cli/main.js",
      "dist/validation/r4/r4-definitions.json",
    ]) {
      expect(files, file).toContain(file);
    }
    const unwanted = [...files].filter((f) => /\.map$|^src\/|^test\/|^bundle\/|^node_modules\//.test(f));
    expect(unwanted).toEqual([]);
  });

  it("ships the dashboard the CLI serves: its script and stylesheet, and each guide and image of docs/ as a page", () => {
    const files = paths();
    const ui = "dist/ui/assets/";
    expect([...files]).toEqual(
      expect.arrayContaining([`${ui}dashboard.js`, `${ui}dashboard.css`, `${ui}docs/index.html`]),
    );
    // The repository's docs/, as the build found them (scripts/render-docs.mjs: NAME.md → NAME.html, images copied).
    const guides = readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md"));
    const images = readdirSync(join(ROOT, "docs/images"));
    expect(guides.length).toBeGreaterThan(0);
    expect(images.length).toBeGreaterThan(0);
    const missing = [
      ...guides.map((f) => `${ui}docs/${f.slice(0, -".md".length)}.html`),
      ...images.map((f) => `${ui}docs/images/${f}`),
    ].filter((f) => !files.has(f));
    expect(missing).toEqual([]);
  });

  it("ships LICENSE (the MIT license package.json names), CHANGELOG.md with this version, and README.md", () => {
    expect([...paths()]).toEqual(expect.arrayContaining(["LICENSE", "CHANGELOG.md", "README.md"]));
    expect(readFileSync(`${ROOT}LICENSE`, "utf8")).toMatch(/^MIT License\n/);
    expect(readFileSync(`${ROOT}CHANGELOG.md`, "utf8")).toContain(`## [${pkg.version}]`);
  });

  it("ships every file the README and the shipped docs link to", () => {
    const files = paths();
    const shippedMarkdown = [...files].filter((f) => f.endsWith(".md"));
    expect(shippedMarkdown).toEqual(expect.arrayContaining(["README.md", "docs/ci.md", "scenarios/README.md"]));
    const missing: string[] = [];
    for (const doc of shippedMarkdown) {
      for (const target of markdownLinks(readFileSync(join(ROOT, doc), "utf8"), doc).relative) {
        // A link to a folder (`scenarios`) resolves when the folder has a packed file.
        if (!files.has(target) && ![...files].some((f) => f.startsWith(`${target}/`)))
          missing.push(`${doc} → ${target}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("links from shipped docs to files it does not ship point at the project's home, at files that exist", () => {
    const home = repositoryHome();
    const links = [...paths()]
      .filter((f) => f.endsWith(".md"))
      .flatMap((doc) => markdownLinks(readFileSync(join(ROOT, doc), "utf8"), doc).home);
    expect(links.length).toBeGreaterThan(0);
    for (const path of links) expect(existsSync(join(ROOT, path)), `${home}: ${path}`).toBe(true);
  });

  it("ships conformance/: every file of it (the plans, their JSON Schema, the reference systems)", () => {
    const shipped = readdirSync(join(ROOT, "conformance"), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)));
    expect(shipped).toContain("conformance/conformance.schema.json");
    expect([...paths()]).toEqual(expect.arrayContaining(shipped));
  });

  it("ships the shipped scenarios and their JSON Schema", () => {
    expect([...paths()]).toEqual(
      expect.arrayContaining([
        "scenarios/scenario.schema.json",
        "scenarios/10-magic-patients.yaml",
        "scenarios/README.md",
      ]),
    );
  });
});

const GUIDE = readFileSync(join(ROOT, "docs/testing-with-the-sandbox.md"), "utf8");

/** A file the testing guide shows in full, after `<!-- example: NAME -->`. */
function guideFile(name: string): string {
  const blocks = [...GUIDE.matchAll(/^<!-- example: (\S+) -->\n```\w+\n([\s\S]*?)^```$/gm)];
  const found = blocks.filter((m) => m[1] === name);
  if (found.length !== 1) throw new Error(`docs/testing-with-the-sandbox.md shows ${name} ${found.length} times`);
  return found[0]?.[2] as string;
}

/** The guide's first use of createSandbox (under "The handle"), with its top-level await. */
function guideHandle(): string {
  const block = /^## The handle\n+```ts\n([\s\S]*?)^```$/m.exec(GUIDE)?.[1];
  if (block === undefined) throw new Error("docs/testing-with-the-sandbox.md: no ts block opens The handle");
  return `${block}await sandbox.close();\n`;
}

/** A strict consumer: createSandbox, one real message over HTTP, the journal; the schema export resolved. */
function consumerSource(message: string): string {
  return `import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type CallView, createSandbox, type Sandbox, type Verification } from "uae-fhir-sandbox";

const sandbox: Sandbox = await createSandbox();
try {
  const res = await fetch(\`\${sandbox.url}${STANDARD}\`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: ${JSON.stringify(message)},
  });
  const answer = (await res.json()) as { entry?: Array<{ resource?: { response?: { code?: string } } }> };
  const calls: CallView[] = sandbox.calls({ operation: "add-allergy" });
  const check: Verification = sandbox.verify({ operation: "add-allergy", count: 1 });
  const schema = JSON.parse(
    readFileSync(fileURLToPath(import.meta.resolve("uae-fhir-sandbox/scenario.schema.json")), "utf8"),
  ) as { $schema?: string };
  const magic = readFileSync(fileURLToPath(import.meta.resolve("uae-fhir-sandbox/scenarios/10-magic-patients.yaml")), "utf8");
  console.log(
    JSON.stringify({
      status: res.status,
      code: answer.entry?.[0]?.resource?.response?.code,
      calls: calls.length,
      verified: check.ok,
      schema: schema.$schema,
      scenarios: magic.includes("784-1900-0000422-7"),
    }),
  );
} finally {
  await sandbox.close();
}
`;
}

const patient: Patient = {
  resourceType: "Patient",
  identifier: [{ system: "urn:ae:emirates-id", value: "784-1990-1234567-6" }],
};

/** An add-allergy message (penicillin) for `who`, the allergy referring to the Patient entry by its fullUrl. */
function addAllergy(who: Patient): string {
  const allergy: AllergyIntolerance = {
    resourceType: "AllergyIntolerance",
    // ait-1 (R4): a clinicalStatus unless the allergy was entered in error.
    clinicalStatus: {
      coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", code: "active" }],
    },
    code: { coding: [{ system: "http://snomed.info/sct", code: "91936005", display: "Allergy to penicillin" }] },
    patient: {},
  };
  const bundle = messageBundle("add-allergy", [allergy, who], { focus: [0] });
  allergy.patient.reference = bundle.entry?.[2]?.fullUrl;
  return envelope(bundle);
}

describe("the tarball installed into a fresh project", () => {
  it(
    "compiles a strict TypeScript consumer (skipLibCheck off) that runs createSandbox and sends a message",
    async () => {
      writeFileSync(join(consumer, "consumer.ts"), consumerSource(addAllergy(patient)));
      writeFileSync(
        join(consumer, "tsconfig.json"),
        JSON.stringify({
          compilerOptions: {
            target: "ES2022",
            module: "NodeNext",
            moduleResolution: "NodeNext",
            strict: true,
            skipLibCheck: false,
            types: ["node"],
            outDir: "out",
          },
          files: ["consumer.ts"],
        }),
      );
      // The repository's compiler; everything it resolves (the package, its types, @types/node) is the consumer's.
      await run(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "."], consumer);
      const { stdout } = await run(process.execPath, ["out/consumer.js"], consumer);
      expect(JSON.parse(stdout)).toEqual({
        status: 200,
        code: "ok",
        calls: 1,
        verified: true,
        schema: "https://json-schema.org/draft/2020-12/schema",
        scenarios: true,
      });
    },
    STEP_MS,
  );

  it(
    "is set up as the testing guide says: its package.json and tsconfig.json type-check its files, its tests pass",
    async () => {
      // The guide's own blocks: package.json and tsconfig.json settings, the handle's snippet, client.ts and its tests.
      const guide = join(work, "guide");
      mkdirSync(guide);
      const settings = JSON.parse(guideFile("package.json")) as Record<string, unknown>;
      const packageJson = (type: boolean) => {
        const { type: _, ...rest } = settings;
        return JSON.stringify({ name: "guide-project", private: true, ...(type ? settings : rest) }, null, 2);
      };
      writeFileSync(join(guide, "package.json"), packageJson(true));
      // As TypeScript 7 reads it: "types" is [] unless the file says otherwise (5.x, the repository's, loaded every
      // @types package), so the guide's project compiles only if its tsconfig names node's types itself.
      const tsconfig = JSON.parse(guideFile("tsconfig.json")) as { compilerOptions?: Record<string, unknown> };
      tsconfig.compilerOptions = { types: [], ...tsconfig.compilerOptions };
      writeFileSync(join(guide, "tsconfig.json"), JSON.stringify(tsconfig, null, 2));
      writeFileSync(join(guide, "client.ts"), guideFile("client.ts"));
      writeFileSync(join(guide, "client.test.ts"), guideFile("client.test.ts"));
      writeFileSync(join(guide, "handle.ts"), guideHandle());
      // What `npm install --save-dev uae-fhir-sandbox vitest typescript @types/node` gives: the consumer's install
      // (the packed package, @types/node) and the repository's vitest.
      mkdirSync(join(guide, "node_modules"));
      for (const dir of readdirSync(join(consumer, "node_modules")))
        symlinkSync(join(consumer, "node_modules", dir), join(guide, "node_modules", dir));
      symlinkSync(join(ROOT, "node_modules/vitest"), join(guide, "node_modules/vitest"));
      const tsc = [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "."];
      await run(process.execPath, tsc, guide);
      // Without "type": "module", the handle's top-level await is refused: the setting is needed, not decoration.
      // (The handle alone: checking vitest's types again would only take time.)
      writeFileSync(join(guide, "package.json"), packageJson(false));
      writeFileSync(
        join(guide, "handle.tsconfig.json"),
        JSON.stringify({ extends: "./tsconfig.json", files: ["handle.ts"] }),
      );
      const refused = await run(process.execPath, [tsc[0] as string, "-p", "handle.tsconfig.json"], guide).catch(
        (e: Error) => e.message,
      );
      expect(refused).toMatch(/handle\.ts\(\d+,\d+\): error TS1309/);
      writeFileSync(join(guide, "package.json"), packageJson(true));
      // And with "types": [] (no "types" line, under TypeScript 7), the handle does not compile for want of node's
      // types: the emulation above is not a no-op.
      writeFileSync(
        join(guide, "handle.tsconfig.json"),
        JSON.stringify({ extends: "./tsconfig.json", compilerOptions: { types: [] }, files: ["handle.ts"] }),
      );
      const untyped = await run(process.execPath, [tsc[0] as string, "-p", "handle.tsconfig.json"], guide).then(
        () => "compiled",
        (e: Error) => e.message,
      );
      expect(untyped).toMatch(/error TS(2307|2580|2591|2503|2688): [^\n]*\b(node|process|Buffer|NodeJS)\b/);
      const vitest = join(dirname(realpathSync(join(ROOT, "node_modules/vitest/package.json"))), "vitest.mjs");
      const { stdout } = await run(process.execPath, [vitest, "run", "client.test.ts"], guide);
      const colours = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");
      expect(stdout.replace(colours, "")).toMatch(/Tests +\d+ passed/);
    },
    // Measured: 160 s on a loaded 2-core machine (tsc checks vitest's types too, skipLibCheck off); three times that.
    3 * STEP_MS,
  );

  /** `npx uae-fhir-sandbox ...` in the consumer project, in its own process group (npx → npm → the CLI). */
  const npx = (args: string[]): Child =>
    new Child(
      spawn("npx", ["--no-install", "uae-fhir-sandbox", ...args], {
        cwd: consumer,
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
      }),
    );
  const killGroup = (p: ChildProcess, signal: NodeJS.Signals) => {
    try {
      process.kill(-(p.pid as number), signal);
    } catch {
      // already gone
    }
  };

  it(
    "runs the CLI through npx: --version, validate (the shipped scenarios and plans pass, a broken file fails)",
    async () => {
      const version = npx(["--version"]);
      expect(await version.waitForExit(STEP_MS)).toEqual({ code: 0, signal: null });
      expect(version.stdout.trim()).toBe(pkg.version);

      const valid = npx(["validate", "node_modules/uae-fhir-sandbox/scenarios"]);
      expect(await valid.waitForExit(STEP_MS), valid.describe()).toEqual({ code: 0, signal: null });

      // The package's own plans, found beside its dist/ (read once when given as the host's folder too).
      const plans = npx(["validate", "--conformance", "node_modules/uae-fhir-sandbox/conformance"]);
      expect(await plans.waitForExit(STEP_MS), plans.describe()).toEqual({ code: 0, signal: null });
      expect(plans.stdout).toMatch(
        /^ok node_modules\/uae-fhir-sandbox\/conformance\/\S+\.yaml: \d+ tests?, \d+ steps?$/m,
      );

      writeFileSync(join(consumer, "broken.yaml"), "rules:\n  - name: x\n    when: { operation: 7 }\n");
      const invalid = npx(["validate", "broken.yaml"]);
      expect((await invalid.waitForExit(STEP_MS)).code).toBe(1);
      expect(invalid.stderr).toMatch(/broken\.yaml:\d+:\d+: /);
    },
    STEP_MS,
  );

  it(
    "serves through npx, with no ./scenarios, the shipped scenarios: a message, a magic patient, the dashboard, a clean SIGTERM stop",
    async () => {
      // The consumer project has no ./scenarios: the package's own are served, and the banner names their folder.
      const server = npx(["serve", "--port", "0", "--host", "127.0.0.1"]);
      try {
        const [, url = ""] = await server.waitForOutput(LISTENING, STEP_MS);
        expect(server.stdout).toMatch(/"source":"[^"]*node_modules\/uae-fhir-sandbox\/scenarios"/);
        const send = (p: Patient) =>
          http(`${url}${STANDARD}`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: addAllergy(p),
          });
        const ok = await send(patient);
        expect(ok.status).toBe(200);
        expect(responseHeader(ok.json).response?.code).toBe("ok");
        // scenarios/10-magic-patients.yaml (README: magic test patients): 784-1900-0000422-7 → 200 fatal-error.
        const magic = await send({
          resourceType: "Patient",
          identifier: [{ system: "urn:ae:emirates-id", value: "784-1900-0000422-7" }],
        });
        expect(magic.status).toBe(200);
        expect(responseHeader(magic.json).response?.code).toBe("fatal-error");

        // The dashboard, from the installed package: a page, the script it loads, the README as a docs page.
        const page = await http(`${url}/__admin/ui/`);
        expect(page.status).toBe(200);
        const src = /<script[^>]* src="([^"]+\/dashboard\.js)"/.exec(page.text)?.[1];
        expect(src, "the page loads the dashboard's script").toBeDefined();
        const script = await http(new URL(src as string, `${url}/__admin/ui/`).href);
        expect(script.status).toBe(200);
        expect(script.headers.get("content-type")).toMatch(/^text\/javascript/);
        const readme = await http(`${url}/__admin/ui/docs/`);
        expect(readme.status).toBe(200);
        expect(readme.text).toContain('<h1 id="uae-fhir-sandbox">uae-fhir-sandbox</h1>');

        killGroup(server.process, "SIGTERM");
        await server.waitForExit(STEP_MS);
        expect(server.stdout).toMatch(/received SIGTERM, shutting down[\s\S]*stopped/);
      } finally {
        killGroup(server.process, "SIGKILL");
      }
    },
    STEP_MS,
  );
});
