import { existsSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { DEFAULT_OPTIONS } from "../config/options.js";
import {
  decodeYaml,
  type Locate,
  readYamlFile,
  tooLarge,
  type YamlLimit,
  type YamlProblem,
} from "../config/yaml-file.js";
import { type CompiledRule, compileRule } from "./rules.js";
import { type ScenarioFile, scenarioFileSchema } from "./schema.js";

/** A scenario file that passed every check. */
export interface LoadedScenario {
  /** Where it came from: a path relative to the scenarios folder, or "runtime-N". */
  source: string;
  scenario: ScenarioFile;
  rules: CompiledRule[];
}

export type ScenarioLoad = { ok: true; scenarios: LoadedScenario[] } | { ok: false; problems: YamlProblem[] };

const SCENARIO_FILE = /\.ya?ml$/i;

const DEFAULT_MAX_SCENARIO_FILE = DEFAULT_OPTIONS.maxScenarioFile;

/** The size limit of one scenario document, bytes (--max-scenario-file). */
const limitOf = (maxBytes: number): YamlLimit => ({ bytes: maxBytes, flag: "--max-scenario-file" });

/** The record types each fixture list holds. */
const FIXTURE_TYPES = {
  allergies: ["AllergyIntolerance"],
  history: ["Condition", "Procedure"],
  measurements: ["Observation"],
  tasks: ["Task"],
} as const;

/**
 * The scenario files a path names: the file itself, or every *.yaml / *.yml
 * under a folder, recursively, in path order (so `00-fixtures.yaml` comes
 * before `10-rules.yaml`, and a subfolder's files after the files before it).
 */
export function scenarioFiles(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const full = join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (SCENARIO_FILE.test(name)) out.push(full);
    }
  };
  walk(path);
  return out;
}

function checkScenario(scenario: ScenarioFile, source: string, locate: Locate): LoadedScenario | YamlProblem[] {
  const problems: YamlProblem[] = [];
  const rules: CompiledRule[] = [];
  (scenario.rules ?? []).forEach((spec, index) => {
    const compiled = compileRule(spec, { source, index, locate });
    problems.push(...compiled.problems);
    if (compiled.rule) rules.push(compiled.rule);
  });
  (scenario.fixtures?.patients ?? []).forEach((fixture, i) => {
    const at = ["fixtures", "patients", i];
    if (fixture.patient.resourceType !== "Patient")
      problems.push(locate([...at, "patient"], "must be a Patient resource"));
    for (const [list, types] of Object.entries(FIXTURE_TYPES)) {
      const records = fixture[list as keyof typeof FIXTURE_TYPES] ?? [];
      records.forEach((r, j) => {
        if (!(types as readonly string[]).includes(r.resourceType)) {
          problems.push(
            locate([...at, list, j], `${list} holds ${types.join(" or ")} resources, not ${r.resourceType}`),
          );
        }
      });
    }
  });
  return problems.length > 0 ? problems : { source, scenario, rules };
}

/** Loads and checks scenario files; every problem of every file is reported, or all are loaded. */
export function loadScenarioFiles(
  files: readonly string[],
  root: string,
  maxBytes = DEFAULT_MAX_SCENARIO_FILE,
): ScenarioLoad {
  const problems: YamlProblem[] = [];
  const scenarios: LoadedScenario[] = [];
  for (const file of files) {
    const source = relative(root, file) || file;
    const read = readYamlFile(file, scenarioFileSchema, limitOf(maxBytes));
    if (!read.ok) {
      problems.push(...read.problems.map((p) => ({ ...p, file: source })));
      continue;
    }
    const checked = checkScenario(read.value, source, (path, message) => ({
      ...read.locate(path, message),
      file: source,
    }));
    if (Array.isArray(checked)) problems.push(...checked);
    else scenarios.push(checked);
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, scenarios };
}

/** Loads every scenario file under a folder (none when the folder does not exist). */
export function loadScenarioFolder(dir: string, maxBytes = DEFAULT_MAX_SCENARIO_FILE): ScenarioLoad {
  if (!existsSync(dir)) return { ok: true, scenarios: [] };
  return loadScenarioFiles(scenarioFiles(dir), statSync(dir).isDirectory() ? dir : ".", maxBytes);
}

/** Loads a scenario sent to the admin API (YAML, of which JSON is a subset). */
export function loadScenarioText(text: string, source: string, maxBytes = DEFAULT_MAX_SCENARIO_FILE): ScenarioLoad {
  const size = Buffer.byteLength(text);
  if (size > maxBytes) return { ok: false, problems: [tooLarge(source, size, limitOf(maxBytes))] };
  const read = decodeYaml(text, source, scenarioFileSchema);
  if (!read.ok) return { ok: false, problems: read.problems };
  const checked = checkScenario(read.value, source, read.locate);
  return Array.isArray(checked) ? { ok: false, problems: checked } : { ok: true, scenarios: [checked] };
}
