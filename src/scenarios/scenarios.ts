import { watch as fsWatch, type Stats, statSync } from "node:fs";
import type { YamlProblem } from "../config/yaml-file.js";
import type { RequestFacts } from "../matching/matcher.js";
import type { OperationNames } from "../routing/operation-names.js";
import { type LoadedScenario, loadScenarioFolder, loadScenarioText, type ScenarioLoad } from "./load.js";
import { type CompiledResponse, type CompiledRule, RuleSet } from "./rules.js";
import { watchPath } from "./watch-path.js";

/**
 * What a decision leaves behind so that it can be explained later (GET
 * /__admin/calls/{id}): only what the moment alone knows — the rule set in
 * force (immutable: a reload replaces it), whether the message was one the
 * sandbox refuses, the rules that matched but let later ones answer, and the
 * rule that answered. Why each other rule did not match is worked out when
 * asked, from the recorded request: the request path pays for one small object.
 */
export interface RuleTrace {
  rules: RuleSet;
  invalid: boolean;
  /** Rules that matched, but were used up: their `times`, or a `sequence` that falls through. */
  passedOver: Array<{ rule: CompiledRule; answered: number; why: "times" | "sequence" }>;
  answered: CompiledRule | undefined;
}

/** A rule that answers a message, with the response it gives this time. */
export interface Scripted {
  rule: CompiledRule;
  response: CompiledResponse;
  /** How many times the rule has answered, this one included. */
  hit: number;
}

export interface ScenarioEvents {
  /** The folder was (re)loaded; `problems` is empty when the new set is serving. */
  onLoad(result: { ok: boolean; problems: YamlProblem[] }): void;
  /** Watching for changes failed somewhere: changes there are not picked up. */
  onWatchError(message: string): void;
}

interface Counter {
  matched: number;
  answered: number;
}

/**
 * The loaded scenarios: rules from the folder and rules added at run time,
 * their counters, and the decision which rule answers a message. Rules added
 * at run time come first, in the order added; then the folder's, in file order.
 */
export class Scenarios {
  #folder: LoadedScenario[] = [];
  #runtime: LoadedScenario[] = [];
  #rules = new RuleSet([]);
  #counters = new WeakMap<CompiledRule, Counter>();
  #problems: YamlProblem[] = [];
  #loadedAt: Date | undefined;
  #runtimeCount = 0;
  /** What the last successful load read: a folder, a file, or nothing (it did not exist). */
  #loadedFrom: "folder" | "file" | undefined;

  constructor(
    readonly folder: string | undefined,
    private readonly deps: {
      now(): Date;
      events?: ScenarioEvents;
      /** What `when.operation` may name; default the built-in catalogue's operations. */
      operations?: OperationNames;
      /** Largest scenario document, bytes (--max-scenario-file); default DEFAULT_OPTIONS.maxScenarioFile. */
      maxFileBytes?: number;
      /** fs.watch, replaceable in tests. */
      fsWatch?: typeof fsWatch;
    },
  ) {}

  #loadOptions() {
    return {
      ...(this.deps.operations ? { names: this.deps.operations } : {}),
      ...(this.deps.maxFileBytes !== undefined ? { maxBytes: this.deps.maxFileBytes } : {}),
    };
  }

  /**
   * Loads the folder; on problems the previous set keeps serving. A folder
   * (or file) missing at start means none; one that goes away after it was
   * loaded is a problem, so that what it held keeps serving until it is back.
   */
  reload(): { ok: boolean; problems: YamlProblem[] } {
    if (this.folder === undefined) return { ok: true, problems: [] };
    const present = statOf(this.folder);
    const load: ScenarioLoad =
      !present && this.#loadedFrom
        ? {
            ok: false,
            problems: [
              {
                file: this.folder,
                line: 0,
                column: 0,
                message: `the scenarios ${this.#loadedFrom} is gone; the rules loaded before keep serving, and it is loaded again when it is back`,
              },
            ],
            scenarios: [],
          }
        : loadScenarioFolder(this.folder, this.#loadOptions());
    const result = load.ok ? { ok: true, problems: [] } : { ok: false, problems: load.problems };
    if (load.ok) {
      this.#folder = load.scenarios;
      this.#loadedAt = this.deps.now();
      this.#loadedFrom = present ? (present.isDirectory() ? "folder" : "file") : undefined;
      this.#rebuild();
    }
    this.#problems = result.problems;
    this.deps.events?.onLoad(result);
    return result;
  }

  /** Adds a scenario document (YAML or JSON) at run time. */
  add(text: string): { ok: true; scenario: LoadedScenario } | { ok: false; problems: YamlProblem[] } {
    const source = `runtime-${++this.#runtimeCount}`;
    const load = loadScenarioText(text, source, this.#loadOptions());
    if (!load.ok) return load;
    const [scenario] = load.scenarios as [LoadedScenario];
    this.#runtime.push(scenario);
    this.#rebuild();
    return { ok: true, scenario };
  }

  /** Removes every rule added at run time. */
  clearRuntime(): number {
    const n = this.#runtime.reduce((sum, s) => sum + s.rules.length, 0);
    this.#runtime = [];
    this.#rebuild();
    return n;
  }

  #rebuild(): void {
    this.#rules = new RuleSet([...this.#runtime, ...this.#folder].flatMap((s) => s.rules));
  }

  /** Every loaded scenario in rule order: runtime ones first, then the folder's. */
  get scenarios(): readonly LoadedScenario[] {
    return [...this.#runtime, ...this.#folder];
  }

  /** The order fixtures are applied in: the folder's, then runtime ones, so the later (runtime) win as when posted. */
  get fixtureOrder(): readonly LoadedScenario[] {
    return [...this.#folder, ...this.#runtime];
  }

  resetCounters(): void {
    this.#counters = new WeakMap();
  }

  #counter(rule: CompiledRule): Counter {
    let c = this.#counters.get(rule);
    if (!c) {
      c = { matched: 0, answered: 0 };
      this.#counters.set(rule, c);
    }
    return c;
  }

  /**
   * The first rule that matches and still answers. A rule past its `times`,
   * or whose sequence is used up with `fall-through`, counts the match and
   * lets the next rules (and finally the built-in behaviour) answer.
   * `trace`, when given, is filled in for explaining the decision later.
   */
  decide(facts: RequestFacts, trace?: RuleTrace): Scripted | undefined {
    if (trace) {
      trace.rules = this.#rules;
      trace.invalid = facts.invalid ?? false;
    }
    for (const rule of this.#rules.candidates(facts.operation)) {
      if (!rule.matcher.matches(facts)) continue;
      const counter = this.#counter(rule);
      counter.matched++;
      if (rule.times !== undefined && counter.answered >= rule.times) {
        trace?.passedOver.push({ rule, answered: counter.answered, why: "times" });
        continue;
      }
      let turn = counter.answered;
      if (turn >= rule.responses.length) {
        if (rule.afterSequence === "fall-through") {
          trace?.passedOver.push({ rule, answered: counter.answered, why: "sequence" });
          continue;
        }
        turn = rule.responses.length - 1;
      }
      counter.answered++;
      if (trace) trace.answered = rule;
      return { rule, response: rule.responses[turn] as CompiledResponse, hit: counter.answered };
    }
    return undefined;
  }

  /** An empty trace for `decide` to fill. */
  newTrace(): RuleTrace {
    return { rules: this.#rules, invalid: false, passedOver: [], answered: undefined };
  }

  /** What GET /__admin/scenarios shows. */
  view() {
    return {
      folder: this.folder ?? null,
      loadedAt: this.#loadedAt?.toISOString() ?? null,
      problems: this.#problems,
      files: this.scenarios.map((s) => ({ source: s.source, name: s.scenario.name ?? null, rules: s.rules.length })),
      rules: this.#rules.rules.map((r) => {
        const c = this.#counters.get(r) ?? { matched: 0, answered: 0 };
        return {
          id: r.id,
          name: r.name,
          source: r.source,
          line: r.line,
          operations: r.matcher.operations ?? null,
          times: r.times ?? null,
          responses: r.responses.length,
          matched: c.matched,
          answered: c.answered,
        };
      }),
    };
  }

  /**
   * Reloads when the folder (or file) changes: a file added, changed or
   * removed, a subfolder created, the folder itself deleted (the last set
   * keeps serving) or restored. Returns a function that stops watching.
   */
  watch(debounceMs = 100): () => void {
    if (this.folder === undefined) return () => undefined;
    return watchPath(
      this.folder,
      () => this.reload(),
      { watch: this.deps.fsWatch ?? fsWatch, onError: (message) => this.deps.events?.onWatchError(message) },
      debounceMs,
    );
  }
}

function statOf(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}
