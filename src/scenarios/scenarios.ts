import { existsSync, type FSWatcher, readdirSync, statSync, watch } from "node:fs";
import { join } from "node:path";
import type { YamlProblem } from "../config/yaml-file.js";
import type { RequestFacts } from "../matching/matcher.js";
import { type LoadedScenario, loadScenarioFolder, loadScenarioText } from "./load.js";
import { type CompiledResponse, type CompiledRule, RuleSet } from "./rules.js";

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

  constructor(
    readonly folder: string | undefined,
    private readonly deps: {
      now(): Date;
      events?: ScenarioEvents;
      /** Largest scenario document, bytes (--max-scenario-file); default DEFAULT_OPTIONS.maxScenarioFile. */
      maxFileBytes?: number;
    },
  ) {}

  /** Loads the folder; on problems the previous set keeps serving. */
  reload(): { ok: boolean; problems: YamlProblem[] } {
    if (this.folder === undefined) return { ok: true, problems: [] };
    const load = loadScenarioFolder(this.folder, this.deps.maxFileBytes);
    const result = load.ok ? { ok: true, problems: [] } : { ok: false, problems: load.problems };
    if (load.ok) {
      this.#folder = load.scenarios;
      this.#loadedAt = this.deps.now();
      this.#rebuild();
    }
    this.#problems = result.problems;
    this.deps.events?.onLoad(result);
    return result;
  }

  /** Adds a scenario document (YAML or JSON) at run time. */
  add(text: string): { ok: true; scenario: LoadedScenario } | { ok: false; problems: YamlProblem[] } {
    const source = `runtime-${++this.#runtimeCount}`;
    const load = loadScenarioText(text, source, this.deps.maxFileBytes);
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
   */
  decide(facts: RequestFacts): Scripted | undefined {
    for (const rule of this.#rules.candidates(facts.operation)) {
      if (!rule.matcher.matches(facts)) continue;
      const counter = this.#counter(rule);
      counter.matched++;
      if (rule.times !== undefined && counter.answered >= rule.times) continue;
      let turn = counter.answered;
      if (turn >= rule.responses.length) {
        if (rule.afterSequence === "fall-through") continue;
        turn = rule.responses.length - 1;
      }
      counter.answered++;
      return { rule, response: rule.responses[turn] as CompiledResponse, hit: counter.answered };
    }
    return undefined;
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
   * Reloads when a file under the folder changes (debounced, so an editor's
   * save of several writes reloads once). One non-recursive watcher per
   * folder, renewed on every reload: Node 20's recursive watch on Linux
   * loses track of files replaced by rename, as editors and `sed -i` save.
   * Returns a function that stops it.
   */
  watch(debounceMs = 100): () => void {
    const root = this.folder;
    if (root === undefined || !existsSync(root) || !statSync(root).isDirectory()) return () => undefined;
    let timer: NodeJS.Timeout | undefined;
    let watchers: FSWatcher[] = [];
    let stopped = false;
    const changed = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        if (stopped) return;
        this.reload();
        rewatch();
      }, debounceMs);
    };
    const rewatch = () => {
      for (const w of watchers) w.close();
      watchers = folders(root).flatMap((dir) => {
        try {
          const w = watch(dir, changed);
          w.on("error", () => undefined);
          return [w];
        } catch {
          return [];
        }
      });
    };
    rewatch();
    return () => {
      stopped = true;
      clearTimeout(timer);
      for (const w of watchers) w.close();
    };
  }
}

/** A folder and every folder under it. */
function folders(root: string): string[] {
  const out = [root];
  for (const name of readdirSync(root)) {
    const full = join(root, name);
    try {
      if (statSync(full).isDirectory()) out.push(...folders(full));
    } catch {
      // Gone between readdir and stat: the next reload sees it.
    }
  }
  return out;
}
