import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { Child, childEnv, http, killStray, LISTENING, ROOT } from "./cli-process.js";

// Installed as a package (npx uae-fhir-sandbox in a project of its own) there is no ./scenarios: the sandbox serves
// the scenarios it ships (magic patients, the fixture pharmacy), and says so; a --scenarios path that does not
// exist is a mistake to report, not an empty set to serve in silence.

const SHIPPED = join(ROOT, "scenarios");
/** What the shipped folder holds, counted from its YAML (not by the code under test). */
const shipped = (() => {
  const files = readdirSync(SHIPPED).filter((f) => /\.ya?ml$/.test(f));
  const rules = files.reduce(
    (n, f) => n + ((parse(readFileSync(join(SHIPPED, f), "utf8")) as { rules?: unknown[] }).rules?.length ?? 0),
    0,
  );
  return { files: files.length, rules };
})();

const empty = mkdtempSync(join(tmpdir(), "no-scenarios-here-"));
afterEach(killStray);
afterAll(() => rmSync(empty, { recursive: true, force: true }));

/** The CLI (dist/ or the bundle) started in a folder without ./scenarios. */
function startIn(cwd: string, entry: string, args: readonly string[], env: Record<string, string> = {}): Child {
  return new Child(
    spawn(process.execPath, [join(ROOT, entry), ...args], {
      cwd,
      env: childEnv(env),
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
}

describe("the shipped scenarios travel with the package", { timeout: 30_000 }, () => {
  it.each([
    ["dist/cli/main.js", "the compiled CLI"],
    ["bundle/uae-fhir-sandbox.mjs", "the container's bundle"],
  ])("%s (%s) in a folder without ./scenarios serves the package's own, and the banner names them", async (entry) => {
    const child = startIn(empty, entry, ["serve", "--port", "0", "--host", "127.0.0.1", "--log-format", "pretty"]);
    const [, url] = await child.waitForOutput(LISTENING);
    expect(child.stdout).toContain(
      `  scenarios  ${SHIPPED}: ${shipped.files} files, ${shipped.rules} rules, reloaded when they change`,
    );
    // The fixture pharmacy of scenarios/00-test-patients.yaml is there.
    const pharmacies = await http(`${url}/__admin/pharmacies`);
    expect(pharmacies.json.pharmacies.map((p: { licence: string }) => p.licence)).toContain("PH-DXB-0001");
  });

  it.each([
    [["--scenarios", "./nope"], {}, '--scenarios "./nope": no such folder or file'],
    [["-s", "nope/rules.yaml"], {}, '--scenarios "nope/rules.yaml": no such folder or file'],
    [[], { SCENARIOS: "./nope" }, 'SCENARIOS "./nope" (--scenarios): no such folder or file'],
  ])("%j %j: exit 2, naming the path", async (args, env, says) => {
    const child = startIn(empty, "dist/cli/main.js", ["serve", "--port", "0", ...args], env);
    expect((await child.waitForExit()).code).toBe(2);
    expect(child.stderr).toContain(says);
    expect(child.stdout).toBe("");
  });
});
