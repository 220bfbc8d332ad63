import { existsSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import type { Patient } from "fhir/r4.js";
import { DEFAULT_OPTIONS } from "../config/options.js";
import {
  capProblems,
  decodeYaml,
  type Locate,
  readYamlFile,
  tooLarge,
  type YamlLimit,
  type YamlProblem,
} from "../config/yaml-file.js";
import { buildCatalogue } from "../routing/catalogue.js";
import { type OperationNames, operationNames } from "../routing/operation-names.js";
import { identifierKey } from "../store/patient-identity.js";
import { type CompiledRule, compileRule, ruleProblemsBeyondSchema } from "./rules.js";
import { type ScenarioFile, scenarioFileSchema } from "./schema.js";

/** A scenario file that passed every check. */
export interface LoadedScenario {
  /** Where it came from: a path relative to the scenarios folder, or "runtime-N". */
  source: string;
  scenario: ScenarioFile;
  rules: CompiledRule[];
}

/** On problems, `scenarios` holds the files that passed their own checks (for `validate`'s per-file report). */
export type ScenarioLoad =
  | { ok: true; scenarios: LoadedScenario[] }
  | { ok: false; problems: YamlProblem[]; scenarios: LoadedScenario[] };

/** How scenario documents are loaded: what rules may name as operations, and how large a document may be. */
export interface LoadOptions {
  /** Default: the built-in catalogue's operations. */
  names?: OperationNames;
  /** Largest document, bytes (--max-scenario-file); default DEFAULT_OPTIONS.maxScenarioFile. */
  maxBytes?: number;
}

/** The default catalogue's operation names: what rules may name when no operations file changes them. */
let defaultNames: OperationNames | undefined;
export const defaultOperationNames = (): OperationNames => {
  defaultNames ??= operationNames(buildCatalogue());
  return defaultNames;
};

/**
 * Something a file gives a name that must be unique across the folder (a
 * rule name, a fixture patient's key or record id, a pharmacy licence),
 * and where: two files giving one patient the same id would be merged
 * into one patient in silence otherwise.
 */
interface Claim {
  what: string;
  key: string;
  /** Where the name is given: a problem's position in its file. */
  at: YamlProblem;
}

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

interface Checked {
  loaded?: LoadedScenario;
  problems: YamlProblem[];
  claims: Claim[];
}

function checkScenario(scenario: ScenarioFile, source: string, locate: Locate, names: OperationNames): Checked {
  const problems: YamlProblem[] = [];
  const claims: Claim[] = [];
  const claim = (what: string, key: string, at: ReadonlyArray<string | number>) =>
    claims.push({ what, key, at: locate(at, "") });
  const rules: CompiledRule[] = [];
  (scenario.rules ?? []).forEach((spec, index) => {
    const compiled = compileRule(spec, { source, index, locate }, names);
    problems.push(...compiled.problems);
    if (compiled.rule) rules.push(compiled.rule);
    if (spec.name !== undefined) claim("rule name", spec.name, ["rules", index, "name"]);
  });
  (scenario.fixtures?.patients ?? []).forEach((fixture, i) => {
    const at = ["fixtures", "patients", i];
    if (fixture.patient.resourceType !== "Patient")
      problems.push(locate([...at, "patient"], "must be a Patient resource"));
    const { id, identifier } = fixture.patient as Partial<Patient>;
    if (typeof id === "string") claim("fixture patient id", id, [...at, "patient", "id"]);
    (identifier ?? []).forEach((given, j) => {
      if (given.value)
        claim("fixture patient identifier", identifierKey(given.system, given.value), [
          ...at,
          "patient",
          "identifier",
          j,
        ]);
    });
    for (const [list, types] of Object.entries(FIXTURE_TYPES)) {
      const records = fixture[list as keyof typeof FIXTURE_TYPES] ?? [];
      records.forEach((r, j) => {
        if (!(types as readonly string[]).includes(r.resourceType)) {
          problems.push(
            locate([...at, list, j], `${list} holds ${types.join(" or ")} resources, not ${r.resourceType}`),
          );
        }
        if (typeof r.id === "string") claim("fixture record", `${r.resourceType}/${r.id}`, [...at, list, j, "id"]);
      });
    }
  });
  (scenario.fixtures?.pharmacies ?? []).forEach((p, i) => {
    claim("pharmacy licence", p.licence, ["fixtures", "pharmacies", i, "licence"]);
  });
  return {
    ...(problems.length === 0 ? { loaded: { source, scenario, rules } } : {}),
    problems,
    claims,
  };
}

/**
 * A document's schema problems and, when it parsed, those of its rules beyond the schema (unknown operations,
 * template typos…), in the order they stand in the file: every problem in one pass. The count of problems left out
 * (capProblems) stays last.
 */
function allProblems(
  schemaProblems: YamlProblem[],
  partial: { value: unknown; locate: Locate } | undefined,
  source: string,
  names: OperationNames,
): YamlProblem[] {
  if (!partial || schemaProblems.some((p) => p.more !== undefined)) return schemaProblems;
  const { value, locate } = partial;
  const rules = typeof value === "object" && value !== null ? (value as { rules?: unknown }).rules : undefined;
  const beyond = Array.isArray(rules)
    ? rules.flatMap((rule, index) => ruleProblemsBeyondSchema(rule, { source, index, locate }, names))
    : [];
  const seen = new Set(schemaProblems.map((p) => `${p.line}:${p.column}:${p.message}`));
  const all = [...schemaProblems, ...beyond.filter((p) => !seen.has(`${p.line}:${p.column}:${p.message}`))];
  const capped = capProblems(all, source);
  // A file-wide problem (line 0) first, then by position.
  return capped.every((p) => p.more === undefined)
    ? capped.sort((a, b) => a.line - b.line || a.column - b.column)
    : capped;
}

/** A problem for every name given twice, at the second, naming where the first is. */
function duplicates(claims: readonly Claim[]): YamlProblem[] {
  const first = new Map<string, Claim>();
  const problems: YamlProblem[] = [];
  for (const claim of claims) {
    const id = `${claim.what}\u0000${claim.key}`;
    const earlier = first.get(id);
    if (!earlier) {
      first.set(id, claim);
      continue;
    }
    // Named as the problem's own file is (relative to the folder): both are in it.
    const where = `${earlier.at.file}:${earlier.at.line}:${earlier.at.column}`;
    problems.push({
      ...claim.at,
      message: `${claim.what} "${claim.key}" is already given at ${where}; each must be unique across the scenario files (rename one, or remove the copy)`,
    });
  }
  return problems;
}

/**
 * Loads and checks scenario files; every problem of every file is reported,
 * or all are loaded. Names that must be unique (rule names, fixture ids,
 * pharmacy licences) are checked across the files.
 */
export function loadScenarioFiles(files: readonly string[], root: string, options: LoadOptions = {}): ScenarioLoad {
  const { names = defaultOperationNames(), maxBytes = DEFAULT_MAX_SCENARIO_FILE } = options;
  const problems: YamlProblem[] = [];
  const claims: Claim[] = [];
  const scenarios: LoadedScenario[] = [];
  for (const file of files) {
    const source = relative(root, file) || file;
    const read = readYamlFile(file, scenarioFileSchema, limitOf(maxBytes));
    if (!read.ok) {
      problems.push(...allProblems(read.problems, read.partial, source, names).map((p) => ({ ...p, file: source })));
      continue;
    }
    const checked = checkScenario(
      read.value,
      source,
      (path, message) => ({ ...read.locate(path, message), file: source }),
      names,
    );
    problems.push(...checked.problems);
    claims.push(...checked.claims);
    if (checked.loaded) scenarios.push(checked.loaded);
  }
  problems.push(...duplicates(claims));
  return problems.length > 0 ? { ok: false, problems, scenarios } : { ok: true, scenarios };
}

/** Loads every scenario file under a folder, or the file it names (none when nothing is there). */
export function loadScenarioFolder(dir: string, options: LoadOptions = {}): ScenarioLoad {
  if (!existsSync(dir)) return { ok: true, scenarios: [] };
  try {
    return loadScenarioFiles(scenarioFiles(dir), statSync(dir).isDirectory() ? dir : ".", options);
  } catch (error) {
    // Files deleted or moved while being read: a problem of this load, not a crash; their next change reloads.
    return {
      ok: false,
      problems: [{ file: dir, line: 0, column: 0, message: `could not be read: ${(error as Error).message}` }],
      scenarios: [],
    };
  }
}

/**
 * Loads a scenario sent to the admin API (YAML, of which JSON is a subset).
 * Its names must be unique within it; a document added at run time may
 * reuse a folder file's names on purpose (its rules come first, its fixtures win).
 */
export function loadScenarioText(text: string, source: string, options?: LoadOptions): ScenarioLoad;
/**
 * …and `admit` may refuse it once read, before its rules are compiled (FHIRPath compiles slowly: seconds for a
 * document of --max-body): what it returns comes back as `refused`.
 */
export function loadScenarioText<R>(
  text: string,
  source: string,
  options: LoadOptions,
  admit: (scenario: ScenarioFile) => R | undefined,
): ScenarioLoad | { ok: false; problems: []; scenarios: []; refused: R };
export function loadScenarioText<R>(
  text: string,
  source: string,
  options: LoadOptions = {},
  admit?: (scenario: ScenarioFile) => R | undefined,
): ScenarioLoad | { ok: false; problems: []; scenarios: []; refused: R } {
  const { names = defaultOperationNames(), maxBytes = DEFAULT_MAX_SCENARIO_FILE } = options;
  const size = Buffer.byteLength(text);
  if (size > maxBytes) return { ok: false, problems: [tooLarge(source, size, limitOf(maxBytes))], scenarios: [] };
  const read = decodeYaml(text, source, scenarioFileSchema);
  if (!read.ok) return { ok: false, problems: allProblems(read.problems, read.partial, source, names), scenarios: [] };
  const refused = admit?.(read.value);
  if (refused !== undefined) return { ok: false, problems: [], scenarios: [], refused };
  const checked = checkScenario(read.value, source, read.locate, names);
  const problems = [...checked.problems, ...duplicates(checked.claims)];
  if (problems.length > 0 || !checked.loaded) return { ok: false, problems, scenarios: [] };
  return { ok: true, scenarios: [checked.loaded] };
}
