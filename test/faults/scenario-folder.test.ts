import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { killStray, startCli } from "../cli/cli-process.js";
import { profileMessage, sendMessage, startLoad } from "./load.js";

// The scenarios folder deleted and restored while the real CLI serves load: it keeps answering with
// the rules it had, warns, and loads the folder again when it is back.

const dirs: string[] = [];
afterEach(async () => {
  await killStray();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A rule that lets the built-in behaviour answer profile views, under its own name. */
const tagged = (version: string) => `rules:
  - name: tagged-${version}
    when: { operation: view-patient-profile }
    respond: { builtIn: true }
`;

/** A scenarios folder holding the tagged rule of `version`, at `path`. */
function scenarioFolder(path: string, version: string): string {
  mkdirSync(path);
  writeFileSync(join(path, "10-tagged.yaml"), tagged(version));
  return path;
}

describe("scenario folder deleted and restored under load", { timeout: 30_000 }, () => {
  it("keeps answering with the last rules, warns, and loads the folder again when it is back", async () => {
    const work = mkdtempSync(join(tmpdir(), "faults-folder-"));
    dirs.push(work);
    const folder = scenarioFolder(join(work, "scenarios"), "v1");
    const { url, child } = await startCli(["--scenarios", folder, "--log-format", "pretty"]);
    const load = startLoad(url, { workers: 4 });
    await load.reached(20);

    rmSync(folder, { recursive: true });
    await child.waitForOutput(/scenarios not reloaded, the previous set keeps serving:\n.*is gone/, 5_000, "stderr");
    const whileGone = load.answered.length;
    await load.reached(whileGone + 20);

    // Restored as a backup is: prepared beside it, then moved into place.
    const staged = scenarioFolder(join(work, "staged"), "v2");
    renameSync(staged, folder);
    // The first load is in the banner; the log line is the reload's.
    await child.waitForOutput(/scenarios loaded from [^\n]*: 1 rule\n/);
    const after = await sendMessage(url, profileMessage());
    await load.stop();

    expect(load.failures).toEqual([]);
    expect(load.answered.filter((a) => a.status !== 200)).toEqual([]);
    // Every answer came from a rule: the set never went empty while the folder was gone.
    expect(new Set(load.answered.map((a) => a.rule))).toEqual(
      new Set(load.answered.some((a) => a.rule === "tagged-v2") ? ["tagged-v1", "tagged-v2"] : ["tagged-v1"]),
    );
    expect(load.answered.slice(whileGone, whileGone + 20).every((a) => a.rule === "tagged-v1")).toBe(true);
    expect(after).toMatchObject({ status: 200, rule: "tagged-v2" });
    expect(child.process.exitCode).toBeNull();
  });
});
