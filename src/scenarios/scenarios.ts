import { createHash } from "node:crypto";
import { type LimitRefusal, overLimit, type StateLimits, UNLIMITED } from "../config/state-limits.js";
import type { YamlProblem } from "../config/yaml-file.js";
import type { Redaction } from "../journal/redact.js";
import type { RequestFacts } from "../matching/matcher.js";
import { NO_STATE, type StateSink } from "../state/state-sink.js";
import { type LoadedScenario, type LoadOptions, loadScenarioText } from "./load.js";
import { ruleSummary } from "./rule-summary.js";
import type { RuleTrace } from "./rule-trace.js";
import { type CompiledResponse, type CompiledRule, RuleSet, STARTED } from "./rules.js";
import { addCosts, NO_COST, type ScenarioCost, scenarioCost } from "./runtime-cost.js";
import type { ScenarioFolder } from "./scenario-folder.js";
import type { ScenarioFile } from "./schema.js";

/** A rule that answers a message, with the response it gives this time. */
export interface Scripted {
  rule: CompiledRule;
  response: CompiledResponse;
  /** How many times the rule has answered, this one included. */
  hit: number;
}

/** What adding a scenario document at run time came to: added, not valid (400), or past a limit (409). */
export type AddResult =
  | { ok: true; scenario: LoadedScenario; problems?: undefined; refused?: undefined }
  | { ok: false; problems: YamlProblem[]; refused?: undefined }
  | { ok: false; refused: LimitRefusal; problems?: undefined };

type RuntimeLimit = "runtimeRules" | "runtimeScenarioBytes" | "runtimeFhirpathBytes";

/** How to make room for runtime scenarios, said in every refusal. */
const FREE_RUNTIME = "Remove the rules added at run time with DELETE /__admin/scenarios (a reset keeps them).";

/** How often a rule matched and answered: kept per workspace, by the rule's id in the state file. */
export interface Counter {
  matched: number;
  answered: number;
}

/** A number in [0, 1) from the seed, the rule and the count of its matches: the same inputs, the same number. */
export function seededDraw(seed: string, ruleId: string, match: number): number {
  const digest = createHash("sha256").update(`${seed}\u0000probability\u0000${ruleId}\u0000${match}`).digest();
  return digest.readUInt32BE(0) / 2 ** 32;
}

/** A scenario state's row in the state file: the scenario and the key, which no name can make ambiguous. */
const stateRowKey = (scenario: string, key: string): string => JSON.stringify([scenario, key]);

/** One scenario's state for one key, as GET /__admin/scenarios/states lists it. */
export interface ScenarioState {
  scenario: string;
  key: string;
  state: string;
  /** When a rule last moved it (ISO 8601); null in a state file written before it was kept. */
  changedAt: string | null;
}

/**
 * One workspace's scenario rules: the shared scenario files' rules (read
 * only, the same objects in every workspace) and rules added at run time
 * (POST /__admin/scenarios), their hit counts, and the decision which rule
 * answers a message. Rules added at run time come first, in the order added;
 * then the files', in file order.
 */
export class Scenarios {
  #runtime: LoadedScenario[] = [];
  /** The texts of the runtime documents, by their number (runtime-N), for the state file. */
  #runtimeTexts = new Map<number, string>();
  /** What the runtime documents weigh, in all (their rules, bytes, FHIRPath bytes). */
  #runtimeCost: ScenarioCost = NO_COST;
  /** Each runtime document's number and cost, by its source (runtime-N): one may be removed alone. */
  #runtimeParts = new Map<string, { number: number; cost: ScenarioCost }>();
  /** The rule ids of conformance sessions' documents: never in the state file, not cleared with the others. */
  readonly #sessionRules = new Set<string>();
  #rules = new RuleSet([]);
  /** The folder version #rules was built from; -1: build it again. */
  #builtFor = -1;
  #counters = new WeakMap<CompiledRule, Counter>();
  #runtimeCount = 0;
  /** Each scenario's state per key, and when it moved there; a key absent is in the scenario's first state (Started). */
  #states = new Map<string, Map<string, { state: string; changedAt: string | null }>>();

  constructor(
    /** The shared scenario files, if any. */
    readonly folder?: ScenarioFolder,
    /** How documents added at run time are loaded; default the folder's. */
    private readonly loadOptions: LoadOptions = folder?.loadOptions ?? {},
    /** The most runtime documents may hold in all (rules, bytes, FHIRPath bytes); the rest is not read here. */
    readonly limits: Pick<StateLimits, RuntimeLimit> = UNLIMITED,
    /** Where runtime documents and hit counts are said, for the state file (--state-file). */
    private readonly sink: StateSink = NO_STATE,
    /** The workspace's seed (--seed): `probability` draws from it, so the same calls give the same outcome. */
    private readonly seed = "",
    /** The sandbox's clock: when a state moved, for GET /__admin/scenarios/states and the dashboard. */
    private readonly now: () => Date = () => new Date(),
  ) {}

  /**
   * The runtime documents and counters a state file kept: the documents added again in their order (they were
   * admitted when posted), then each counter given to the rule of its id, if the rules still have one. Returns the
   * documents that no longer load (the sandbox's rules changed meanwhile), which are left out.
   */
  restore(
    documents: ReadonlyArray<{ number: number; text: string }>,
    counters: ReadonlyMap<string, Counter>,
  ): YamlProblem[][] {
    this.#runtime = [];
    this.#runtimeParts.clear();
    this.#runtimeTexts.clear();
    this.#runtimeCost = NO_COST;
    this.#runtimeCount = 0;
    this.#builtFor = -1;
    const refused: YamlProblem[][] = [];
    for (const { number, text } of documents) {
      // Numbered as when posted (runtime-N), so that its rules keep their ids, which the counters name.
      this.#runtimeCount = number - 1;
      const added = this.add(text);
      if (!added.ok) refused.push(added.problems ?? []);
    }
    this.#counters = new WeakMap();
    for (const rule of this.#ruleSet().rules) {
      const counter = counters.get(rule.id);
      if (counter) this.#counters.set(rule, { matched: counter.matched, answered: counter.answered });
    }
    return refused;
  }

  /**
   * Adds a scenario document (YAML or JSON) at run time, unless it is not valid or would take the runtime
   * documents past a limit; `admit` may refuse it for what else it holds (its fixtures' pharmacies). Nothing
   * changes when it is refused. The size is checked before the document is read, the rest before its rules are
   * compiled.
   */
  add(
    text: string,
    admit?: (scenario: ScenarioFile) => LimitRefusal | undefined,
    /**
     * A conformance session's: before the other runtime documents (its answer comes first), and never written to
     * the state file (it lives as long as the session, which a restart ends).
     */
    forSession = false,
  ): AddResult {
    const held = this.#runtimeCost;
    const bytes = Buffer.byteLength(text);
    if (held.bytes + bytes > this.limits.runtimeScenarioBytes) {
      return this.#refuse("runtimeScenarioBytes", held.bytes, bytes, "bytes of runtime scenario documents");
    }
    let cost = NO_COST;
    const load = loadScenarioText(text, `runtime-${this.#runtimeCount + 1}`, this.loadOptions, (spec) => {
      cost = scenarioCost(spec, text);
      if (held.rules + cost.rules > this.limits.runtimeRules) {
        return this.#refusal("runtimeRules", held.rules, cost.rules, "runtime rules");
      }
      if (held.fhirpathBytes + cost.fhirpathBytes > this.limits.runtimeFhirpathBytes) {
        return this.#refusal(
          "runtimeFhirpathBytes",
          held.fhirpathBytes,
          cost.fhirpathBytes,
          "bytes of FHIRPath in runtime rules",
        );
      }
      return admit?.(spec);
    });
    if ("refused" in load) return { ok: false, refused: load.refused };
    if (!load.ok) return { ok: false, problems: load.problems };
    const [scenario] = load.scenarios as [LoadedScenario];
    this.#runtimeCount++;
    if (forSession) {
      this.#runtime.unshift(scenario);
      for (const rule of scenario.rules) this.#sessionRules.add(rule.id);
    } else this.#runtime.push(scenario);
    this.#runtimeParts.set(scenario.source, { number: this.#runtimeCount, cost });
    this.#runtimeCost = addCosts(held, cost);
    this.#builtFor = -1;
    // Kept only for a state file: in memory alone, the compiled rules are all a document leaves.
    if (this.sink.active && !forSession) {
      this.#runtimeTexts.set(this.#runtimeCount, text);
      this.#saveDocument(this.#runtimeCount, text);
    }
    return { ok: true, scenario };
  }

  #saveDocument(number: number, text: string): void {
    if (this.sink.active) this.sink.put("scenario", String(number).padStart(6, "0"), () => ({ number, text }));
  }

  /** Says every runtime document again (a reset cleared the workspace's file state; its runtime rules stay). */
  saveRuntime(): void {
    for (const [number, text] of this.#runtimeTexts) this.#saveDocument(number, text);
  }

  #refusal(limit: RuntimeLimit, held: number, adding: number, unit: string): LimitRefusal {
    return overLimit(limit, { held, adding, max: this.limits[limit], unit }, FREE_RUNTIME);
  }

  #refuse(limit: RuntimeLimit, held: number, adding: number, unit: string): AddResult {
    return { ok: false, refused: this.#refusal(limit, held, adding, unit) };
  }

  /**
   * Removes one document added at run time (by its source, runtime-N), as a conformance session removes the rules
   * it added; the others stay, in their order. Returns how many rules went (0: no such document).
   */
  removeRuntime(source: string): number {
    const part = this.#runtimeParts.get(source);
    if (!part) return 0;
    this.#runtimeParts.delete(source);
    const removed = this.#runtime.find((s) => s.source === source);
    this.#runtime = this.#runtime.filter((s) => s !== removed);
    for (const rule of removed?.rules ?? []) this.#sessionRules.delete(rule.id);
    this.#runtimeTexts.delete(part.number);
    this.#runtimeCost = addCosts(this.#runtimeCost, part.cost, -1);
    this.#builtFor = -1;
    if (this.sink.active) {
      this.sink.remove("scenario", String(part.number).padStart(6, "0"));
      // Its hit counts too: a later document may get its number, and its rules' ids, after a restart.
      for (const rule of removed?.rules ?? []) this.sink.remove("hits", rule.id);
    }
    return part.cost.rules;
  }

  /**
   * Removes every rule added at run time (DELETE /__admin/scenarios), but a running conformance session's: those
   * are the session's, and go when it ends.
   */
  clearRuntime(): number {
    const sessions = this.#runtime.filter((s) => s.rules.some((r) => this.#sessionRules.has(r.id)));
    let n = 0;
    for (const scenario of this.#runtime) if (!sessions.includes(scenario)) n += scenario.rules.length;
    let cost = NO_COST;
    for (const [source, part] of this.#runtimeParts) {
      if (sessions.some((s) => s.source === source)) cost = addCosts(cost, part.cost);
      else this.#runtimeParts.delete(source);
    }
    this.#runtime = sessions;
    this.#runtimeTexts.clear();
    this.#runtimeCost = cost;
    this.#builtFor = -1;
    this.sink.removeAll("scenario");
    return n;
  }

  /** What the documents added at run time weigh, in all. */
  get runtimeCost(): ScenarioCost {
    return this.#runtimeCost;
  }

  /** The rules in force: without runtime rules, the folder's own (shared) set. */
  #ruleSet(): RuleSet {
    const version = this.folder?.version ?? 0;
    if (this.#builtFor !== version) {
      this.#rules =
        this.#runtime.length === 0 && this.folder
          ? this.folder.rules
          : new RuleSet(this.scenarios.flatMap((s) => s.rules));
      this.#builtFor = version;
    }
    return this.#rules;
  }

  /** Every loaded scenario in rule order: runtime ones first, then the folder's. */
  get scenarios(): readonly LoadedScenario[] {
    return [...this.#runtime, ...(this.folder?.scenarios ?? [])];
  }

  /** The order fixtures are applied in: the folder's, then runtime ones, so the later (runtime) win as when posted. */
  get fixtureOrder(): readonly LoadedScenario[] {
    return [...(this.folder?.scenarios ?? []), ...this.#runtime];
  }

  /** How many rules were added at run time (they cost this workspace memory). */
  get runtimeRules(): number {
    return this.#runtimeCost.rules;
  }

  resetCounters(): void {
    this.#counters = new WeakMap();
    this.sink.removeAll("hits");
    this.#states.clear();
    this.sink.removeAll("states");
  }

  /** The scenario states a state file kept (after restore: they name scenarios, not rules, so all come back). */
  restoreStates(states: readonly ScenarioState[]): void {
    this.#states.clear();
    for (const { scenario, key, state, changedAt } of states)
      this.#moveState(scenario, key, state, changedAt ?? null, false);
  }

  /** The state of `scenario` for `key`: Started until a rule moved it. */
  stateOf(scenario: string, key: string): string {
    return this.#states.get(scenario)?.get(key)?.state ?? STARTED;
  }

  /** Every scenario's state for every key a rule has moved, sorted by scenario then key. */
  states(): ScenarioState[] {
    const list: ScenarioState[] = [];
    for (const [scenario, keys] of this.#states) {
      for (const [key, { state, changedAt }] of keys) list.push({ scenario, key, state, changedAt });
    }
    return list.sort((a, b) => a.scenario.localeCompare(b.scenario) || a.key.localeCompare(b.key));
  }

  /** Puts scenarios back in Started: all, one scenario's keys, one key in every scenario, or both. Returns how many. */
  resetStates(filter: { scenario?: string; key?: string } = {}): number {
    let removed = 0;
    for (const [scenario, keys] of this.#states) {
      if (filter.scenario !== undefined && scenario !== filter.scenario) continue;
      for (const key of [...keys.keys()]) {
        if (filter.key !== undefined && key !== filter.key) continue;
        keys.delete(key);
        this.sink.remove("states", stateRowKey(scenario, key));
        removed++;
      }
      if (keys.size === 0) this.#states.delete(scenario);
    }
    return removed;
  }

  #moveState(scenario: string, key: string, state: string, changedAt: string | null, save = true): void {
    let keys = this.#states.get(scenario);
    if (!keys) {
      keys = new Map();
      this.#states.set(scenario, keys);
    }
    keys.set(key, { state, changedAt });
    // Asked when written: the state as it is then, however often it moved meanwhile.
    if (save && this.sink.active)
      this.sink.put("states", stateRowKey(scenario, key), (): ScenarioState => {
        const now = this.#states.get(scenario)?.get(key);
        return { scenario, key, state: now?.state ?? STARTED, changedAt: now?.changedAt ?? null };
      });
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
    const rules = this.#ruleSet();
    if (trace) {
      trace.rules = rules;
      trace.invalid = facts.invalid ?? false;
    }
    // Only the rules that can match: the rest would fail a condition, and the explanation works that out when asked.
    for (const rule of rules.applicable(facts)) {
      if (!rule.matcher.matches(facts)) continue;
      // The scenario's state is one more condition, checked last: it reads the message's key.
      const state = rule.state;
      const key = state?.key(facts);
      if (
        state &&
        (key === undefined || (state.required !== undefined && this.stateOf(state.scenario, key) !== state.required))
      ) {
        trace?.passedOver.push({
          rule,
          answered: this.#counters.get(rule)?.answered ?? 0,
          why: "state",
          key,
          state: key === undefined ? undefined : this.stateOf(state.scenario, key),
        });
        continue;
      }
      const counter = this.#counter(rule);
      counter.matched++;
      if (this.sink.active && !this.#sessionRules.has(rule.id)) this.sink.put("hits", rule.id, () => counter);
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
      if (rule.probability !== undefined && rule.probability < 1) {
        // The n-th match of a rule draws the same number in every run with this seed, whatever other rules saw.
        const draw = seededDraw(this.seed, rule.id, counter.matched);
        if (draw >= rule.probability) {
          trace?.passedOver.push({ rule, answered: counter.answered, why: "probability", draw });
          continue;
        }
      }
      counter.answered++;
      if (state?.next !== undefined && key !== undefined)
        this.#moveState(state.scenario, key, state.next, this.now().toISOString());
      if (trace) trace.answered = rule;
      return { rule, response: rule.responses[turn] as CompiledResponse, hit: counter.answered };
    }
    return undefined;
  }

  /** An empty trace for `decide` to fill. */
  newTrace(): RuleTrace {
    return { rules: this.#ruleSet(), invalid: false, passedOver: [], answered: undefined };
  }

  /** What GET /__admin/scenarios shows; `businessErrors` (--business-errors) decides a refusal's default status. */
  view(businessErrors: "message" | "http" = "message", redaction?: Redaction) {
    return {
      folder: this.folder?.folder ?? null,
      loadedAt: this.folder?.loadedAt?.toISOString() ?? null,
      problems: this.folder?.problems ?? [],
      files: this.scenarios.map((s) => ({ source: s.source, name: s.scenario.name ?? null, rules: s.rules.length })),
      rules: this.#ruleSet().rules.map((r) => {
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
          ...ruleSummary(r, businessErrors, redaction),
          // Only on rules that use them: the view of every other rule stays as it was.
          ...(r.state
            ? {
                scenario: {
                  name: r.state.scenario,
                  requiredState: r.state.required ?? null,
                  newState: r.state.next ?? null,
                  stateKey: r.state.keyName,
                },
              }
            : {}),
          ...(r.probability !== undefined ? { probability: r.probability } : {}),
        };
      }),
    };
  }
}
