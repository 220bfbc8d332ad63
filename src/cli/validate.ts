import { existsSync, statSync } from "node:fs";
import { formatProblem } from "../config/yaml-file.js";
import { loadScenarioFiles, scenarioFiles } from "../scenarios/load.js";

/**
 * `uae-fhir-sandbox validate [DIR|FILE...]`: checks scenario files as the
 * server would load them, without serving. Exit 0 when all are valid, 1 with
 * every problem as file:line:column: message otherwise.
 */
export function validate(
  paths: readonly string[],
  io: { out(line: string): void; err(line: string): void },
  /** Largest file, bytes (--max-scenario-file); default the server's. */
  maxBytes?: number,
): number {
  let failed = false;
  let checked = 0;
  for (const path of paths) {
    if (!existsSync(path)) {
      io.err(`${path}: no such file or folder`);
      failed = true;
      continue;
    }
    const files = scenarioFiles(path);
    const root = statSync(path).isDirectory() ? path : ".";
    if (files.length === 0) {
      io.err(`${path}: no *.yaml or *.yml scenario files`);
      failed = true;
    }
    for (const file of files) {
      checked++;
      const load = loadScenarioFiles([file], root, maxBytes);
      if (!load.ok) {
        failed = true;
        for (const problem of load.problems) io.err(formatProblem({ ...problem, file }));
        continue;
      }
      const { scenario, rules } = load.scenarios[0] as (typeof load.scenarios)[number];
      const patients = scenario.fixtures?.patients?.length ?? 0;
      const pharmacies = scenario.fixtures?.pharmacies?.length ?? 0;
      io.out(`ok ${file}: ${rules.length} rules, ${patients} fixture patients, ${pharmacies} pharmacies`);
    }
  }
  io.out(failed ? `validation failed (${checked} files checked)` : `${checked} scenario files valid`);
  return failed ? 1 : 0;
}
