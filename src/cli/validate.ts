import { existsSync, statSync } from "node:fs";
import { relative } from "node:path";
import { formatProblem } from "../config/yaml-file.js";
import { loadPlans, planCounts, planFiles, realPath } from "../conformance/load-plans.js";
import type { Catalogue } from "../routing/catalogue.js";
import { type LoadOptions, loadScenarioFiles, scenarioFiles } from "../scenarios/load.js";
import { counted } from "../text/plural.js";

/**
 * `uae-fhir-sandbox validate [DIR|FILE...]`: checks scenario files as the
 * server would load them, without serving — the files of a folder
 * together, so a name given twice across them is found. Exit 0 when all are
 * valid, 1 with every problem as file:line:column: message otherwise.
 * `options`: the operations rules may name (the catalogue after --operations) and the largest file (--max-scenario-file).
 */
export function validate(
  paths: readonly string[],
  io: { out(line: string): void; err(line: string): void },
  options: LoadOptions = {},
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
    const load = loadScenarioFiles(files, root, options);
    const problems = load.ok ? [] : load.problems;
    for (const file of files) {
      checked++;
      // As the loader names it (relative to the folder), while messages name the path as given.
      const source = relative(root, file) || file;
      const own = problems.filter((p) => p.file === source);
      if (own.length > 0) {
        failed = true;
        for (const problem of own) io.err(formatProblem({ ...problem, file }));
        continue;
      }
      const loaded = load.scenarios.find((s) => s.source === source);
      if (!loaded) continue;
      const patients = loaded.scenario.fixtures?.patients?.length ?? 0;
      const pharmacies = loaded.scenario.fixtures?.pharmacies?.length ?? 0;
      io.out(
        `ok ${file}: ${counted(loaded.rules.length, "rule")}, ${counted(patients, "fixture patient")}, ${counted(pharmacies, "pharmacy", "pharmacies")}`,
      );
    }
  }
  io.out(
    failed ? `validation failed (${counted(checked, "file")} checked)` : `${counted(checked, "scenario file")} valid`,
  );
  return failed ? 1 : 0;
}

/**
 * `uae-fhir-sandbox validate --conformance DIR|FILE`: checks a host's conformance plans as the server loads them,
 * with the shipped plans (a plan id may not be given twice across them). Exit 0 when all are valid, 1 with every
 * problem as file:line:column: message otherwise.
 */
export function validatePlans(
  path: string,
  io: { out(line: string): void; err(line: string): void },
  catalogue: Catalogue,
): number {
  if (!existsSync(path)) {
    io.err(`${path}: no such file or folder`);
    io.out("validation failed (0 plan files checked)");
    return 1;
  }
  const load = loadPlans({ folder: path, catalogue });
  const problems = load.ok ? [] : load.problems;
  const sourceOf = new Map(load.files.map((f) => [realPath(f.file), f.source]));
  const files = planFiles(path);
  // Problems of the path itself, or of a shipped plan (never in a release; in a clone being edited, perhaps).
  const hostSources = new Set(files.map((file) => sourceOf.get(realPath(file))));
  const others = problems.filter((p) => !hostSources.has(p.file));
  for (const problem of others) io.err(formatProblem(problem));
  let failed = others.length > 0;
  for (const file of files) {
    const source = sourceOf.get(realPath(file));
    const own = problems.filter((p) => p.file === source);
    if (own.length > 0) {
      failed = true;
      // Named by the path as given, where the loader names a shipped plan conformance/NAME.yaml.
      for (const problem of own) io.err(formatProblem({ ...problem, file }));
      continue;
    }
    const loaded = load.plans.find((p) => p.source === source);
    if (loaded) io.out(`ok ${file}: ${planCounts(loaded.plan)}`);
  }
  io.out(
    failed
      ? `validation failed (${counted(files.length, "plan file")} checked)`
      : `${counted(files.length, "plan file")} valid`,
  );
  return failed ? 1 : 0;
}
