import type { Locate, YamlProblem } from "../config/yaml-file.js";
import { compileMatcher, type Matcher, type MatcherSpec } from "../matching/matcher.js";
import type { OperationNames } from "../routing/operation-names.js";
import { durationMs } from "./duration.js";
import type { ResponseSpec, RuleSpec } from "./schema.js";
import { compileTemplate, type Render } from "./template.js";

/** A scripted response, its templates compiled once. */
export interface CompiledResponse {
  spec: ResponseSpec;
  /** Milliseconds to wait before answering, drawn from the spec's delay. */
  delayMs(random: () => number): number;
  /** Renders `outcome`, `resources`, `body` and `headers` for one answer. */
  render: Render;
}

/** A rule ready for matching. */
export interface CompiledRule {
  /** Stable within a load: file and position, e.g. scenarios/magic.yaml#3. */
  id: string;
  name: string;
  source: string;
  line: number;
  matcher: Matcher;
  times: number | undefined;
  responses: CompiledResponse[];
  sequence: boolean;
  afterSequence: "repeat-last" | "fall-through";
}

function compileResponse(
  spec: ResponseSpec,
  at: ReadonlyArray<string | number>,
  locate: Locate,
  problems: YamlProblem[],
) {
  const { delay } = spec;
  let min = 0;
  let max = 0;
  if (delay !== undefined) {
    if (typeof delay === "object") {
      min = durationMs(delay.min);
      max = durationMs(delay.max);
      if (max < min) problems.push(locate([...at, "delay"], "delay.max must not be below delay.min"));
    } else {
      min = max = durationMs(delay);
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
    delayMs: (random: () => number) => (max === min ? min : Math.round(min + random() * (max - min))),
    render: template.render,
  };
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
  problems.push(...contentTypeProblems(spec, list, where.locate));
  if (!matcher.ok || problems.length > 0) return { problems };
  const line = where.locate(at, "").line;
  return {
    rule: {
      id: `${where.source}#${where.index + 1}`,
      name: spec.name ?? `${where.source}#${where.index + 1}`,
      source: where.source,
      line,
      matcher: matcher.matcher,
      times: spec.times,
      responses,
      sequence: spec.sequence !== undefined,
      afterSequence: spec.afterSequence ?? "repeat-last",
    },
    problems,
  };
}

/**
 * Rules indexed by operation, in their overall order: a message only meets
 * the rules of its own operation and the rules that name none, so matching
 * cost does not grow with other operations' rules.
 */
export class RuleSet {
  readonly #byOperation = new Map<string, Array<{ order: number; rule: CompiledRule }>>();
  readonly #anyOperation: Array<{ order: number; rule: CompiledRule }> = [];

  constructor(readonly rules: readonly CompiledRule[]) {
    rules.forEach((rule, order) => {
      const ops = rule.matcher.operations;
      if (!ops) {
        this.#anyOperation.push({ order, rule });
        return;
      }
      // Once per operation: `operation: [a, a]` must not make the rule a candidate (and counted) twice.
      for (const op of new Set(ops)) {
        const list = this.#byOperation.get(op) ?? [];
        list.push({ order, rule });
        this.#byOperation.set(op, list);
      }
    });
  }

  /** The rules a message of this operation can match, in order. */
  *candidates(operation: string | null): Generator<CompiledRule> {
    const own = (operation !== null && this.#byOperation.get(operation)) || [];
    const any = this.#anyOperation;
    let i = 0;
    let j = 0;
    while (i < own.length || j < any.length) {
      const a = own[i];
      const b = any[j];
      if (b === undefined || (a !== undefined && a.order < b.order)) {
        i++;
        yield (a as { rule: CompiledRule }).rule;
      } else {
        j++;
        yield b.rule;
      }
    }
  }
}
