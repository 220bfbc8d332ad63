import { spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Child, childEnv, killStray, ROOT } from "../cli/cli-process.js";

// The shipped plans are found beside the code that runs, in the layouts the sandbox runs in: the installed package
// (dist/ with conformance/ beside it, as package.json's files ship them) and the container image (bundle/server.cjs
// with conformance/ beside bundle/, as the Dockerfile copies it). Each layout is made in a temporary folder with a
// plan of its own in its conformance/: a host plan that takes that plan's id is refused, naming the shipped file,
// which it can only do when the shipped folder was found. (npm test builds dist/ and bundle/ before vitest.)

afterEach(killStray);

const PLAN = readFileSync(`${ROOT}test/conformance/fixtures/plans/sender-mini.yaml`, "utf8");

/** Runs a CLI entry of a layout with `args`, from the layout's folder; resolves with its exit and output. */
async function run(cwd: string, entry: string, args: string[]) {
  const child = new Child(
    spawn(process.execPath, [entry, ...args], { cwd, env: childEnv(), stdio: ["ignore", "pipe", "pipe"] }),
  );
  const exit = await child.waitForExit();
  return { ...exit, stdout: child.stdout, stderr: child.stderr };
}

/** A conformance/ folder as shipped (the committed schema) with the fixture plan, and a host folder reusing its id. */
function shipInto(root: string) {
  mkdirSync(join(root, "conformance"));
  cpSync(`${ROOT}conformance/conformance.schema.json`, join(root, "conformance", "conformance.schema.json"));
  writeFileSync(join(root, "conformance", "sender-mini.yaml"), PLAN);
  mkdirSync(join(root, "host"));
  writeFileSync(join(root, "host", "mine.yaml"), PLAN);
  mkdirSync(join(root, "other"));
  writeFileSync(join(root, "other", "mine.yaml"), PLAN.replace("id: sender-mini", "id: my-sender"));
}

describe("the shipped plans are found", { timeout: 30_000 }, () => {
  const roots: string[] = [];
  let installed = "";
  let image = "";
  beforeAll(() => {
    // The installed package: package.json, dist/, conformance/; its dependencies in node_modules.
    installed = mkdtempSync(join(tmpdir(), "installed-"));
    roots.push(installed);
    cpSync(`${ROOT}package.json`, join(installed, "package.json"));
    cpSync(`${ROOT}dist`, join(installed, "dist"), { recursive: true });
    symlinkSync(`${ROOT}node_modules`, join(installed, "node_modules"), "dir");
    shipInto(installed);
    // The image: bundle/ (no node_modules anywhere) and conformance/ beside it.
    image = mkdtempSync(join(tmpdir(), "image-"));
    roots.push(image);
    mkdirSync(join(image, "bundle"));
    for (const file of ["uae-fhir-sandbox.mjs", "server.cjs", "r4-definitions.json", "fhirpath-trees.json"])
      cpSync(`${ROOT}bundle/${file}`, join(image, "bundle", file));
    shipInto(image);
  });
  afterAll(() => {
    for (const root of roots) rmSync(root, { recursive: true, force: true });
  });

  it.each([
    ["the installed package (dist/cli/main.js)", () => installed, "dist/cli/main.js"],
    ["the container image (bundle/uae-fhir-sandbox.mjs)", () => image, "bundle/uae-fhir-sandbox.mjs"],
  ])("in %s: a host plan may not take a shipped plan's id; another id is fine", async (_, root, entry) => {
    const clash = await run(root(), entry, ["validate", "--conformance", "host"]);
    expect(clash.code).toBe(1);
    expect(clash.stderr).toMatch(
      /^host\/mine\.yaml:3:5: plan id "sender-mini" is already given at conformance\/sender-mini\.yaml:3:5;/m,
    );

    const fine = await run(root(), entry, ["validate", "--conformance", "other"]);
    expect(fine.stderr).toBe("");
    expect(fine.code).toBe(0);
    expect(fine.stdout).toBe("ok other/mine.yaml: 3 tests, 7 steps\n1 plan file valid\n");
  });
});

describe("packaging", () => {
  it("package.json ships conformance/ (the schema, the plans, the examples) and exports the schema", () => {
    const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")) as {
      files: string[];
      exports: Record<string, string>;
    };
    expect(pkg.files).toContain("conformance");
    expect(pkg.exports["./conformance.schema.json"]).toBe("./conformance/conformance.schema.json");
    expect(pkg.exports["./conformance/*"]).toBe("./conformance/*");
  });
});
