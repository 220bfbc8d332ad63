import { existsSync, readdirSync, realpathSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import {
  capProblems,
  formatProblem,
  type Locate,
  MAX_YAML_BYTES,
  readYamlFile,
  type YamlProblem,
} from "../config/yaml-file.js";
import type { Catalogue } from "../routing/catalogue.js";
import { type OperationNames, operationNames } from "../routing/operation-names.js";
import { compileRule } from "../scenarios/rules.js";
import type { RuleSpec } from "../scenarios/schema.js";
import { counted } from "../text/plural.js";
import { didYouMean } from "../text/suggest.js";
import { type Plan, planSchema, STEP_KINDS, type StepKindName, stepSchema, testSchema } from "./plan-schema.js";
import type { LoadedPlan } from "./sessions-api.js";

/**
 * Conformance plans as data: the plans the package ships (conformance/*.yaml) and a host's own (--conformance DIR),
 * read as safely as scenario files (core YAML only, no custom tags, bounded aliases, a size limit) and checked beyond
 * what the schema can say: ids unique where they name things, rules and operations that exist, step kinds of the
 * plan's role. Every problem is `file:line:column: message`.
 */

/** The sender role's step kinds; every other kind is the receiver's. */
export const SENDER_KINDS: ReadonlySet<StepKindName> = new Set([
  "answerNext",
  "expectOperations",
  "expectRetry",
  "expectRetryAfterHonoured",
  "expectNoRetry",
  "expectNewId",
]);

/**
 * The conformance folder the package ships, found beside the code that runs as src/scenarios/shipped.ts finds
 * scenarios/: ../../conformance from dist/conformance/ (a clone, or the package under node_modules), ../conformance
 * from bundle/server.cjs (the container image copies conformance/ to /app). It holds conformance.schema.json.
 */
export function shippedConformance(): string | undefined {
  for (const relativeUrl of ["../../conformance/", "../conformance/"]) {
    const folder = new URL(relativeUrl, import.meta.url);
    if (existsSync(new URL("conformance.schema.json", folder))) return fileURLToPath(folder).replace(/[\\/]$/, "");
  }
  return undefined;
}

const PLAN_FILE = /\.ya?ml$/i;

const KIND_NAMES = Object.keys(STEP_KINDS) as StepKindName[];

/**
 * The plan schema as the loader reads it: a step is one object whose kind keys are all optional (exactly one given),
 * instead of planSchema's union of one object per kind. The same format; but a union that fails says only "Invalid
 * input" (every option failed), where this says which key is unknown (and the nearest kind or key) or which value is
 * wrong. What it accepts is parsed again by planSchema itself.
 */
const loaderStepSchema = (() => {
  const first = (stepSchema as unknown as { options: z.ZodObject[] }).options[0] as z.ZodObject;
  const common = Object.fromEntries(Object.entries(first.shape).filter(([key]) => !(key in STEP_KINDS)));
  const kinds = Object.fromEntries(KIND_NAMES.map((name) => [name, (STEP_KINDS[name] as z.ZodType).optional()]));
  // That a step has exactly one kind is checked with the other checks beyond the schema (checkPlan), on what was
  // written: a misspelt kind is then said once, as an unknown key with the nearest kind.
  return z.object({ ...common, ...kinds }).strict();
})();
/** Every key a step may have: its common keys and the kinds. */
const STEP_KEYS = new Set(Object.keys(loaderStepSchema.shape));

const loaderPlanSchema = planSchema.extend({
  tests: z.array(testSchema.extend({ steps: z.array(loaderStepSchema).min(1) })).min(1),
});

/** The plan files a path names: the file itself, or every *.yaml / *.yml directly in a folder, in name order. */
export function planFiles(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  // Not recursive: examples/ and other folders beside the plans hold no plans.
  // A link to nowhere stays in: reading it says so, where it is.
  return readdirSync(path)
    .filter((name) => PLAN_FILE.test(name) && (statSync(join(path, name), { throwIfNoEntry: false })?.isFile() ?? true))
    .sort()
    .map((name) => join(path, name));
}

export interface PlanLoadOptions {
  /** A host's folder (or file) of plans, besides the shipped ones (--conformance). */
  folder?: string;
  /** The operations steps may name (the catalogue after --operations). */
  catalogue: Catalogue;
  /** The shipped folder; default shippedConformance(). null: none (tests). */
  shipped?: string | null;
}

/** A file's real path (links resolved), or the path itself when it cannot be resolved (a link to nowhere). */
export function realPath(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
}

/** A plan file read, and the source its plan and problems are named by. */
export interface PlanFile {
  file: string;
  source: string;
}

/**
 * On problems, `plans` holds the plans that passed every check; `files`, every file read (for `validate`'s per-file
 * report).
 */
export type PlanLoad =
  | { ok: true; plans: LoadedPlan[]; files: PlanFile[] }
  | { ok: false; problems: YamlProblem[]; plans: LoadedPlan[]; files: PlanFile[] };

/** A name a file gives that must be unique across files, and where it is given. */
interface Claim {
  key: string;
  at: YamlProblem;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** The step keys that name operations, by kind: a string or a list of strings ("declared" is not a name). */
const OPERATION_KEYS: Partial<Record<StepKindName, string>> = {
  answerNext: "operation",
  expectOperations: "operations",
  expectMessage: "operation",
  expectNoMessage: "operation",
};

/**
 * The checks beyond the schema, on the decoded document (which may not fit the schema: then what can be checked is,
 * so that one pass reports every problem). Operation names are rewritten to the ids they stand for.
 */
function checkPlan(value: unknown, locate: Locate, names: OperationNames): { problems: YamlProblem[]; planId?: Claim } {
  const problems: YamlProblem[] = [];
  if (!isRecord(value)) return { problems };
  const role = value.role === "sender" || value.role === "receiver" ? value.role : undefined;
  const rules = isRecord(value.rules) ? Object.keys(value.rules) : undefined;
  const unique = (seen: Map<string, YamlProblem>, key: unknown, at: Array<string | number>, what: string) => {
    if (typeof key !== "string") return;
    const first = seen.get(key);
    if (first === undefined) {
      seen.set(key, locate(at, ""));
      return;
    }
    problems.push(
      locate(
        at,
        `${what} "${key}" is already given at line ${first.line}; each must be unique ${what === "test id" ? "in its plan" : "in its test"}`,
      ),
    );
  };
  const testIds = new Map<string, YamlProblem>();
  list(value.tests).forEach((test, t) => {
    if (!isRecord(test)) return;
    const at = ["tests", t];
    unique(testIds, test.id, [...at, "id"], "test id");
    if (typeof test.rule === "string" && rules !== undefined && !rules.includes(test.rule)) {
      problems.push(
        locate(
          [...at, "rule"],
          `"${test.rule}" is not a rule of this plan${didYouMean(test.rule, rules) || "."} Its rules: ${rules.join(", ") || "none"}.`,
        ),
      );
    }
    const stepIds = new Map<string, YamlProblem>();
    list(test.steps).forEach((step, s) => {
      if (!isRecord(step)) return;
      const stepAt = [...at, "steps", s];
      unique(stepIds, step.id, [...stepAt, "id"], "step id");
      const given = KIND_NAMES.filter((name) => step[name] !== undefined);
      const unknown = Object.keys(step).some((key) => !STEP_KEYS.has(key));
      if (given.length > 1) {
        problems.push(locate(stepAt, `a step is one kind; found ${given.join(" and ")} (make them two steps)`));
      } else if (given.length === 0 && !unknown) {
        problems.push(locate(stepAt, `a step needs one kind: one of ${KIND_NAMES.join(", ")}`));
      }
      for (const [key, spec] of Object.entries(step)) {
        const kind = key as StepKindName;
        if (!isRecord(spec)) continue;
        if (role !== undefined && isKind(kind) && SENDER_KINDS.has(kind) !== (role === "sender")) {
          const other = role === "sender" ? "receiver" : "sender";
          problems.push(
            locate(
              [...stepAt, key],
              `${key} is a ${other} step kind; this plan's role is ${role}, whose kinds are ${kindsOf(role).join(", ")}`,
            ),
          );
        }
        const operationKey = OPERATION_KEYS[kind];
        if (operationKey !== undefined)
          problems.push(...resolveOperations(spec, operationKey, [...stepAt, key], locate, names));
        if (kind === "answerNext" && isRecord(spec.respond)) {
          // The answer is a scenario rule's respond: its templates and values checked as a rule's are.
          const respondAt = [...stepAt, key];
          const compiled = compileRule(
            { respond: spec.respond } as RuleSpec,
            {
              source: "",
              index: 0,
              locate: (path, message) => locate([...respondAt, ...path.slice(2)], message),
            },
            names,
          );
          problems.push(...compiled.problems);
        }
      }
    });
  });
  const planId = typeof value.id === "string" ? { key: value.id, at: locate(["id"], "") } : undefined;
  return { problems, ...(planId ? { planId } : {}) };
}

const isKind = (key: string): key is StepKindName => (KIND_NAMES as readonly string[]).includes(key);
const kindsOf = (role: "sender" | "receiver") => KIND_NAMES.filter((k) => SENDER_KINDS.has(k) === (role === "sender"));

/** Each operation name of `spec[key]` resolved to its id (rewritten in place), or a problem where it is written. */
function resolveOperations(
  spec: Record<string, unknown>,
  key: string,
  at: Array<string | number>,
  locate: Locate,
  names: OperationNames,
): YamlProblem[] {
  const problems: YamlProblem[] = [];
  const given = spec[key];
  const resolve = (name: unknown, path: Array<string | number>): unknown => {
    if (typeof name !== "string" || name === "") return name;
    const resolved = names.resolve(name);
    if (resolved.ok) return resolved.id;
    problems.push(locate(path, resolved.problem));
    return name;
  };
  if (Array.isArray(given)) spec[key] = given.map((name, i) => resolve(name, [...at, key, i]));
  else if (given !== "declared" || key !== "operations") spec[key] = resolve(given, [...at, key]);
  return problems;
}

/**
 * Loads the shipped plans and a host's (`folder`), checks each and all together. Problems name the files as found
 * (the shipped ones as conformance/NAME.yaml, a host's under the folder as given).
 */
export function loadPlans(options: PlanLoadOptions): PlanLoad {
  const names = operationNames(options.catalogue);
  const shipped = options.shipped === undefined ? shippedConformance() : (options.shipped ?? undefined);
  const files: PlanFile[] = [];
  const shippedReal = new Set<string>();
  const problems: YamlProblem[] = [];
  try {
    if (shipped !== undefined) {
      for (const file of planFiles(shipped)) {
        files.push({ file, source: `conformance/${relative(shipped, file)}` });
        shippedReal.add(realPath(file));
      }
    }
    if (options.folder !== undefined) {
      if (!existsSync(options.folder)) {
        problems.push({ file: options.folder, line: 0, column: 0, message: "no such folder or file (--conformance)" });
      } else {
        const host = planFiles(options.folder);
        if (host.length === 0) {
          problems.push({
            file: options.folder,
            line: 0,
            column: 0,
            message: "no *.yaml or *.yml plan files (--conformance)",
          });
        }
        // The shipped folder given again (--conformance ./conformance in a clone) is read once.
        for (const file of host) if (!shippedReal.has(realPath(file))) files.push({ file, source: file });
      }
    }
  } catch (error) {
    // A file removed or made unreadable while the folder is listed: a problem of this load, not a crash.
    const folder = options.folder ?? shipped ?? "conformance";
    problems.push({ file: folder, line: 0, column: 0, message: `could not be read: ${(error as Error).message}` });
  }
  const plans: LoadedPlan[] = [];
  const planIds = new Map<string, YamlProblem>();
  for (const { file, source } of files) {
    const read = readYamlFile(file, loaderPlanSchema, { bytes: MAX_YAML_BYTES });
    const view = read.ok ? { value: read.value, locate: read.locate } : read.partial;
    const own: YamlProblem[] = read.ok ? [] : [...read.problems];
    if (view !== undefined && !own.some((p) => p.more !== undefined)) {
      const checked = checkPlan(view.value, view.locate, names);
      const seen = new Set(own.map((p) => `${p.line}:${p.column}:${p.message}`));
      own.push(...checked.problems.filter((p) => !seen.has(`${p.line}:${p.column}:${p.message}`)));
      if (checked.planId) {
        const first = planIds.get(checked.planId.key);
        if (first === undefined) planIds.set(checked.planId.key, { ...checked.planId.at, file: source });
        else {
          own.push({
            ...checked.planId.at,
            message: `plan id "${checked.planId.key}" is already given at ${first.file}:${first.line}:${first.column}; each plan id must be unique across the plans, the shipped ones included (rename this one)`,
          });
        }
      }
    }
    const sorted = own.every((p) => p.more === undefined)
      ? own.sort((a, b) => a.line - b.line || a.column - b.column)
      : own;
    const capped = capProblems(sorted, source);
    problems.push(...capped.map((p) => ({ ...p, file: source })));
    if (read.ok && capped.length === 0) {
      // The loader's schema is planSchema's format: this parse cannot fail unless the two drift apart.
      const plan = planSchema.safeParse(read.value);
      if (plan.success) plans.push({ plan: plan.data, source });
      else problems.push({ file: source, line: 1, column: 1, message: `not a plan: ${plan.error.message}` });
    }
  }
  return problems.length > 0 ? { ok: false, problems, plans, files } : { ok: true, plans, files };
}

/** The plans could not be loaded: every problem, one `file:line:column: message` a line. */
export class PlanProblems extends Error {
  constructor(readonly problems: readonly YamlProblem[]) {
    super(
      `conformance plans with problems (uae-fhir-sandbox validate --conformance checks them):\n${problems.map(formatProblem).join("\n")}`,
    );
    this.name = "PlanProblems";
  }
}

/** The plans, or a PlanProblems thrown: for a sandbox that must not start with a plan it cannot run. */
export function requirePlans(options: PlanLoadOptions): LoadedPlan[] {
  const load = loadPlans(options);
  if (!load.ok) throw new PlanProblems(load.problems);
  return load.plans;
}

/** "N tests, M steps": what `validate` says of a valid plan. */
export function planCounts(plan: Plan): string {
  const steps = plan.tests.reduce((n, test) => n + test.steps.length, 0);
  return `${counted(plan.tests.length, "test")}, ${counted(steps, "step")}`;
}
