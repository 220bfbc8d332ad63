import type { Locate, YamlProblem } from "../config/yaml-file.js";
import { compilePath } from "../fhir/fhirpath.js";
import type { Dribble } from "../http/dribble.js";
import { compileMatcher, type Matcher, type MatcherSpec, type RequestFacts } from "../matching/matcher.js";
import type { OperationNames } from "../routing/operation-names.js";
import { headerNameProblem, headerValueProblem } from "../text/http-field.js";
import { durationMs } from "./duration.js";
import { type ResponseSpec, type RuleSpec, ruleSchema, whenSchema } from "./schema.js";
import { compileTemplate, type Render } from "./template.js";

/** A scripted response, its templates compiled once. */
export interface CompiledResponse {
  spec: ResponseSpec;
  /** Milliseconds to wait before answering, drawn from the spec's delay. */
  delayMs(random: () => number): number;
  /** Renders `outcome`, `resources`, `body` and `headers` for one answer. */
  render: Render;
  /** `dribble`: the body written in pieces over a time; undefined to write it at once. */
  dribble: Dribble | undefined;
  /** `async`: how the asynchronous answer is sent (its delay drawn per call), when the rule says. */
  asyncLeg: ((random: () => number) => AsyncLeg) | undefined;
}

/** What a rule scripts for an asynchronous answer: wait this long after the 202, or never send it (`drop`). */
export interface AsyncLeg {
  delayMs: number;
  drop: boolean;
}

/** The longest a dribble may last: as long as the `timeout` fault holds a connection (TIMEOUT_FAULT_CAP_MS). */
export const MAX_DRIBBLE_MS = 5 * 60_000;

/**
 * The longest a rule may hold an asynchronous answer back (`async.delay`): each waiting answer holds its response
 * message in memory, so a shared sandbox's tenants cannot pile them up for hours.
 */
export const MAX_ASYNC_DELAY_MS = 5 * 60_000;

/** A rule ready for matching. */
export interface CompiledRule {
  /** Stable within a load: file and position, e.g. scenarios/magic.yaml#3. */
  id: string;
  name: string;
  source: string;
  line: number;
  /** The conditions as written, for showing the rule (the matcher decides). */
  when: NonNullable<RuleSpec["when"]>;
  matcher: Matcher;
  times: number | undefined;
  responses: CompiledResponse[];
  sequence: boolean;
  afterSequence: "repeat-last" | "fall-through";
  /** The scenario state machine the rule takes part in (`scenario`), if any. */
  state: RuleState | undefined;
  /** `probability`: the fraction of its matches the rule answers; undefined for all. */
  probability: number | undefined;
}

/** A rule's part in a named scenario: the state it requires, the one it moves to, and how it finds the message's key. */
export interface RuleState {
  scenario: string;
  required: string | undefined;
  next: string | undefined;
  /** How the key is found, for explanations: patient, workspace or the FHIRPath expression. */
  keyName: string;
  /** The key the scenario's state is kept under for this message; undefined when the message gives none. */
  key(facts: RequestFacts): string | undefined;
}

/** The state every scenario starts in, for each key (WireMock's name for it). */
export const STARTED = "Started";

/** The key of the whole workspace, for `stateKey: workspace`. */
const WORKSPACE_KEY = "*";

/** A FHIRPath result as a key: a primitive as it is, an Identifier or Coding as system|value (or code). */
function keyOf(value: unknown): string | undefined {
  if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") return String(value);
  if (typeof value !== "object" || value === null) return undefined;
  const v = value as Record<string, unknown>;
  const inner = v.value ?? v.code ?? v.reference;
  if (typeof inner === "string" || typeof inner === "number") {
    return typeof v.system === "string" ? `${v.system}|${inner}` : String(inner);
  }
  return JSON.stringify(value);
}

/** Compiles a rule's `scenario`, `requiredState`, `newState` and `stateKey`; problems at the stateKey's position. */
function compileState(
  spec: RuleSpec,
  at: ReadonlyArray<string | number>,
  locate: Locate,
  problems: YamlProblem[],
): RuleState | undefined {
  if (spec.scenario === undefined) return undefined;
  const base = { scenario: spec.scenario, required: spec.requiredState, next: spec.newState };
  const given = spec.stateKey ?? "patient";
  if (given === "patient") return { ...base, keyName: "patient", key: (facts) => facts.patientKeys()[0] };
  if (given === "workspace") return { ...base, keyName: "workspace", key: () => WORKSPACE_KEY };
  const compiled = compilePath(given.fhirpath);
  if (!compiled.ok) {
    problems.push(
      locate(
        [...at, "stateKey", "fhirpath"],
        `stateKey.fhirpath "${given.fhirpath}" is not a valid FHIRPath expression: ${compiled.reason}`,
      ),
    );
    return undefined;
  }
  const evaluate = compiled.evaluate;
  return {
    ...base,
    keyName: `fhirpath ${JSON.stringify(given.fhirpath)}`,
    key: (facts) => {
      const bundle = facts.bundle();
      if (!bundle) return undefined;
      try {
        return keyOf(evaluate(bundle)[0]);
      } catch {
        return undefined;
      }
    },
  };
}

function compileResponse(
  spec: ResponseSpec,
  at: ReadonlyArray<string | number>,
  locate: Locate,
  problems: YamlProblem[],
) {
  const delayMs = compileDelay(spec.delay, [...at, "delay"], locate, problems).draw;
  const asyncSpec = spec.async;
  const asyncDelayMs = asyncSpec
    ? compileDelay(asyncSpec.delay, [...at, "async", "delay"], locate, problems, MAX_ASYNC_DELAY_MS).draw
    : undefined;
  let dribble: Dribble | undefined;
  if (spec.dribble) {
    dribble = { chunks: spec.dribble.chunks, overMs: durationMs(spec.dribble.over) };
    if (dribble.overMs > MAX_DRIBBLE_MS) {
      problems.push(locate([...at, "dribble", "over"], "dribble.over must be at most 5m"));
    }
  }
  const template = compileTemplate({
    outcome: spec.outcome,
    resources: spec.resources,
    body: spec.body,
    headers: spec.headers,
  });
  // Located at the templated string itself, not the whole response: file:line:column points at the mistake.
  for (const problem of template.problems) problems.push(locate([...at, ...problem.path], problem.message));
  return {
    spec,
    delayMs,
    render: template.render,
    dribble,
    asyncLeg:
      asyncSpec && asyncDelayMs
        ? (random: () => number) => ({ delayMs: asyncDelayMs(random), drop: asyncSpec.drop === true })
        : undefined,
  };
}

/** A `delay` (a duration or {min, max}) as a draw of milliseconds; a max below its min is a problem at `at`. */
function compileDelay(
  delay: ResponseSpec["delay"],
  at: ReadonlyArray<string | number>,
  locate: Locate,
  problems: YamlProblem[],
  most?: number,
): { draw: (random: () => number) => number } {
  let min = 0;
  let max = 0;
  if (delay !== undefined) {
    if (typeof delay === "object") {
      min = durationMs(delay.min);
      max = durationMs(delay.max);
      if (max < min) problems.push(locate(at, "delay.max must not be below delay.min"));
    } else {
      min = max = durationMs(delay);
    }
  }
  if (most !== undefined && max > most) {
    problems.push(locate(at, `${at.slice(-2).join(".")} must be at most ${most / 60_000}m`));
  }
  return { draw: (random) => (max === min ? min : Math.round(min + random() * (max - min))) };
}

/**
 * The operation ids a rule's `when.operation` names: each name an id or an
 * event code of the catalogue; an unknown one is a problem at its position
 * (a rule that can never fire would pass in silence otherwise).
 */
function ruleOperations(
  when: RuleSpec["when"],
  at: ReadonlyArray<string | number>,
  locate: Locate,
  names: OperationNames,
  problems: YamlProblem[],
): string[] | undefined {
  const given = when?.operation;
  if (given === undefined) return undefined;
  const list = Array.isArray(given) ? given : [given];
  return list.flatMap((name, i) => {
    const resolved = names.resolve(name);
    if (resolved.ok) return [resolved.id];
    problems.push(locate([...at, "when", "operation", ...(Array.isArray(given) ? [i] : [])], resolved.problem));
    return [];
  });
}

/**
 * The media types a rule's answer may declare without `allowAnyContentType` (CONTRACT §15): JSON, FHIR's JSON, any
 * `+json` type, plain text, with parameters (charset). A browser renders none of them as a page; text/html,
 * image/svg+xml and the like would run what the body holds in the sandbox's origin. No template: the request
 * would choose the type.
 */
const SAFE_CONTENT_TYPE = /^(?:application\/(?:[\w.+-]+\+)?json|text\/plain)[ \t]*(?:;[^{}]*)?$/i;

/**
 * A scripted answer's headers that no answer could carry: a name that is no token, a value with a line break, a
 * control or a character beyond Latin-1 (Arabic, €) in its own text. Refused when the rule loads, naming the header;
 * sent, such a header would make every answer of the rule a 500. A value a template fills in is checked only as
 * written: what it renders to is known per message (the edge then answers 500 and keeps no record of the call).
 */
function headerProblems(
  responses: ReadonlyArray<{ spec: ResponseSpec; at: ReadonlyArray<string | number> }>,
  locate: Locate,
): YamlProblem[] {
  const problems: YamlProblem[] = [];
  for (const { spec: response, at } of responses) {
    for (const [name, value] of Object.entries(response.headers ?? {})) {
      const valueProblem = headerValueProblem(name, value);
      const problem = headerNameProblem(name) ?? (valueProblem && `${valueProblem} Or put the text in the body.`);
      if (problem) problems.push(locate([...at, "headers", name], problem));
    }
  }
  return problems;
}

/** A problem for each response header that declares a Content-Type a browser might run, unless the rule allows it. */
function contentTypeProblems(
  spec: RuleSpec,
  responses: ReadonlyArray<{ spec: ResponseSpec; at: ReadonlyArray<string | number> }>,
  locate: Locate,
): YamlProblem[] {
  if (spec.allowAnyContentType) return [];
  const problems: YamlProblem[] = [];
  for (const { spec: response, at } of responses) {
    for (const [name, value] of Object.entries(response.headers ?? {})) {
      if (name.toLowerCase() !== "content-type" || SAFE_CONTENT_TYPE.test(value.trim())) continue;
      problems.push(
        locate(
          [...at, "headers", name],
          `Content-Type ${JSON.stringify(value)} is not a JSON or plain-text type: a browser could run an answer of that type in the sandbox's origin. Use application/fhir+json, application/json, an application/*+json type or text/plain (no {{ template }}), or add allowAnyContentType: true to the rule if the answer must declare another type.`,
        ),
      );
    }
  }
  return problems;
}

/**
 * Compiles a rule of a scenario file: its matcher (FHIRPath, patterns) and
 * its responses' templates. Problems carry the file position of the rule.
 */
export function compileRule(
  spec: RuleSpec,
  where: { source: string; index: number; locate: Locate },
  names: OperationNames,
): { rule?: CompiledRule; problems: YamlProblem[] } {
  const at = ["rules", where.index];
  const problems: YamlProblem[] = [];
  const operation = ruleOperations(spec.when, at, where.locate, names, problems);
  // A rule sees messages the sandbox refuses as invalid only when it asks for them (`invalid: true`).
  const matcher = compileMatcher({
    invalid: false,
    ...(spec.when ?? {}),
    ...(operation ? { operation } : {}),
  } as MatcherSpec);
  if (!matcher.ok) for (const p of matcher.problems) problems.push(where.locate([...at, "when", ...p.at], p.message));
  const list = (spec.sequence ?? (spec.respond ? [spec.respond] : [])).map((r, i) => ({
    spec: r,
    at: spec.sequence ? [...at, "sequence", i] : [...at, "respond"],
  }));
  const responses = list.map((r) => compileResponse(r.spec, r.at, where.locate, problems));
  problems.push(...headerProblems(list, where.locate));
  problems.push(...contentTypeProblems(spec, list, where.locate));
  const state = compileState(spec, at, where.locate, problems);
  if (!matcher.ok || problems.length > 0) return { problems };
  const line = where.locate(at, "").line;
  return {
    rule: {
      id: `${where.source}#${where.index + 1}`,
      name: spec.name ?? `${where.source}#${where.index + 1}`,
      source: where.source,
      line,
      when: spec.when ?? {},
      matcher: matcher.matcher,
      times: spec.times,
      responses,
      sequence: spec.sequence !== undefined,
      afterSequence: spec.afterSequence ?? "repeat-last",
      state,
      probability: spec.probability,
    },
    problems,
  };
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The problems of a rule beyond the schema's, when its file did not fit the schema: so that one pass reports them
 * all (an unknown operation and a template typo with a bad status, not the status first and the rest after the fix).
 * A rule that fits the schema is compiled as at load; of one that does not, what can be checked on its own is:
 * `when.operation`, the matcher when `when` fits, and the responses' templates.
 */
export function ruleProblemsBeyondSchema(
  raw: unknown,
  where: { source: string; index: number; locate: Locate },
  names: OperationNames,
): YamlProblem[] {
  const valid = ruleSchema.safeParse(raw);
  if (valid.success) return compileRule(valid.data, where, names).problems;
  if (!isRecord(raw)) return [];
  const at = ["rules", where.index];
  const problems: YamlProblem[] = [];
  const when = whenSchema.safeParse(raw.when ?? {});
  if (when.success) {
    const operation = ruleOperations(when.data, at, where.locate, names, problems);
    const matcher = compileMatcher({
      invalid: false,
      ...when.data,
      ...(operation ? { operation } : {}),
    } as MatcherSpec);
    if (!matcher.ok) for (const p of matcher.problems) problems.push(where.locate([...at, "when", ...p.at], p.message));
  } else if (isRecord(raw.when) && raw.when.operation !== undefined) {
    const given = raw.when.operation;
    const list = Array.isArray(given) ? given : [given];
    list.forEach((name, i) => {
      if (typeof name !== "string" || name === "") return;
      const resolved = names.resolve(name);
      if (!resolved.ok) {
        problems.push(
          where.locate([...at, "when", "operation", ...(Array.isArray(given) ? [i] : [])], resolved.problem),
        );
      }
    });
  }
  const responses = Array.isArray(raw.sequence)
    ? raw.sequence.map((r, i) => ({ r, path: [...at, "sequence", i] }))
    : [{ r: raw.respond, path: [...at, "respond"] }];
  for (const { r, path } of responses) {
    if (!isRecord(r)) continue;
    const template = compileTemplate({ outcome: r.outcome, resources: r.resources, body: r.body, headers: r.headers });
    for (const problem of template.problems) problems.push(where.locate([...path, ...problem.path], problem.message));
  }
  return problems;
}

/** A rule and its place in the overall order (the index keeps each list sorted by it). */
interface Placed {
  order: number;
  rule: CompiledRule;
}

/**
 * One operation's rules (or the rules that name none): those with no `patient`
 * condition, and the others under each patient key they name — a rule that
 * names patients cannot match a message that names none of them.
 */
class Bucket {
  readonly anyPatient: Placed[] = [];
  readonly byPatient = new Map<string, Placed[]>();
  /** Every rule of the bucket, in order: what a message of its operation meets, as the explanation lists it. */
  readonly all: Placed[] = [];

  add(placed: Placed): void {
    this.all.push(placed);
    const patients = placed.rule.matcher.patients;
    if (!patients) {
      this.anyPatient.push(placed);
      return;
    }
    // Once per key, as for operations: `patient: [k, k]` must not make the rule a candidate twice.
    for (const key of new Set(patients)) {
      const list = this.byPatient.get(key);
      if (list) list.push(placed);
      else this.byPatient.set(key, [placed]);
    }
  }
}

const NO_RULES = new Bucket();
const NONE: readonly Placed[] = [];

/** The rules of up to three disjoint lists, each in order, merged into the overall order. */
function* inOrder(a: readonly Placed[], b: readonly Placed[], c: readonly Placed[] = NONE): Generator<CompiledRule> {
  let i = 0;
  let j = 0;
  let k = 0;
  for (;;) {
    const x = a[i];
    const y = b[j];
    const z = c[k];
    let next = x;
    if (y !== undefined && (next === undefined || y.order < next.order)) next = y;
    if (z !== undefined && (next === undefined || z.order < next.order)) next = z;
    if (next === undefined) return;
    if (next === x) i++;
    else if (next === y) j++;
    else k++;
    yield next.rule;
  }
}

/**
 * Rules indexed by operation and by patient key, in their overall order: a
 * message only meets the rules of its own operation and the rules that name
 * none, so matching cost does not grow with other operations' rules; and of
 * those, it runs the matchers of rules with a `patient` condition only when it
 * names one of their patients (the magic patients cost a message that names
 * none of them nothing). The index only leaves out rules whose matcher would
 * say no; the matcher alone decides the others.
 */
export class RuleSet {
  readonly #byOperation = new Map<string, Bucket>();
  readonly #anyOperation = new Bucket();

  constructor(readonly rules: readonly CompiledRule[]) {
    rules.forEach((rule, order) => {
      const ops = rule.matcher.operations;
      if (!ops) {
        this.#anyOperation.add({ order, rule });
        return;
      }
      // Once per operation: `operation: [a, a]` must not make the rule a candidate (and counted) twice.
      for (const op of new Set(ops)) {
        let bucket = this.#byOperation.get(op);
        if (!bucket) {
          bucket = new Bucket();
          this.#byOperation.set(op, bucket);
        }
        bucket.add({ order, rule });
      }
    });
  }

  #own(operation: string | null): Bucket {
    return (operation !== null && this.#byOperation.get(operation)) || NO_RULES;
  }

  /** Every rule a message of this operation meets, in order: what an explanation of its decision lists. */
  candidates(operation: string | null): Generator<CompiledRule> {
    return inOrder(this.#own(operation).all, this.#anyOperation.all);
  }

  /**
   * The candidates that can match this request, in order: those of its
   * operation, less the rules whose patients it does not name. Its patient
   * keys are read only when some candidate has a `patient` condition.
   */
  applicable(facts: Pick<RequestFacts, "operation" | "patientKeys">): Generator<CompiledRule> {
    const own = this.#own(facts.operation);
    const any = this.#anyOperation;
    if (own.byPatient.size === 0 && any.byPatient.size === 0) return inOrder(own.anyPatient, any.anyPatient);
    let keys: readonly string[];
    try {
      keys = facts.patientKeys();
    } catch {
      // A message too malformed to tell its patients (an invalid one, which `invalid: true` rules see): every
      // candidate is tried, and a matcher fails or throws exactly where it would without the index.
      return this.candidates(facts.operation);
    }
    const named: Placed[] = [];
    for (const key of keys) {
      for (const placed of own.byPatient.get(key) ?? NONE) named.push(placed);
      for (const placed of any.byPatient.get(key) ?? NONE) named.push(placed);
    }
    if (named.length === 0) return inOrder(own.anyPatient, any.anyPatient);
    // The message names a patient some rules are for (a magic patient): a short list, sorted here.
    named.sort((p, q) => p.order - q.order);
    // A rule for two of the message's patients is one candidate.
    const once = named.filter((p, i) => p.order !== named[i - 1]?.order);
    return inOrder(own.anyPatient, any.anyPatient, once);
  }
}
