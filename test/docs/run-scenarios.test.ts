import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { pageTest } from "./doc-blocks.js";

// docs/scenarios.md top to bottom against one fresh sandbox serving a copy of the shipped scenarios: the first rule is
// written into that folder and picked up by the watcher (the log line shown), the runtime rules answer as shown.

// The runner reads each command line that names npx/node with bash's eval in the test's working directory, which
// also runs the line's redirections: `npx uae-fhir-sandbox schema > scenarios/scenario.schema.json` would empty this
// repository's schema. Until the runner reads words without running anything, the page runs from a scratch folder.
const scratch = mkdtempSync(join(tmpdir(), "doc-scenarios-cwd-"));
const cwd = process.cwd();
beforeAll(() => process.chdir(scratch));
afterAll(() => {
  process.chdir(cwd);
  rmSync(scratch, { recursive: true, force: true });
});

/** Measured: 25–27 s on a loaded 2-core machine (load 9–14); over three times that. */
pageTest("docs/scenarios.md", 90_000);
