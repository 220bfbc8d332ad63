import fhirpath, { type UserInvocationTable } from "fhirpath";
import r4 from "fhirpath/fhir-context/r4";
import { compileLinearRegex, type LinearRegex, type RegexFlags } from "../text/linear-regex.js";

/** A FHIRPath expression compiled once against the R4 model. */
export type CompiledPath = (resource: unknown) => unknown[];

export type CompileResult = { ok: true; evaluate: CompiledPath } | { ok: false; reason: string };

/**
 * Compiles a FHIRPath expression with HL7's engine and its R4 model, so
 * choice types (`value` → valueQuantity) and type functions work.
 *
 * @example
 *   const hasCode = compilePath("code.exists()");
 *   if (hasCode.ok && holds(hasCode.evaluate(allergy))) ...
 */
export function compilePath(expression: string): CompileResult {
  try {
    const fn = fhirpath.compile(expression, r4, { userInvocationTable: LINEAR_PATTERN_FUNCTIONS });
    const refused = refusedPattern(expression);
    if (refused) return { ok: false, reason: refused };
    return {
      ok: true,
      evaluate: (resource) => {
        const result = fn(resource as never);
        return Array.isArray(result) ? result : [result];
      },
    };
  } catch (error) {
    return { ok: false, reason: (error as Error).message };
  }
}

/**
 * FHIRPath's singleton evaluation of a collection as a boolean: empty is
 * false, a lone `false` is false, anything else is true.
 */
export function holds(result: readonly unknown[]): boolean {
  if (result.length === 0) return false;
  return !(result.length === 1 && result[0] === false);
}

/** Evaluates, turning an engine error into a failed match with its reason; `empty` tells "found nothing" from "false". */
export function test(path: CompiledPath, resource: unknown): { holds: boolean; empty?: boolean; error?: string } {
  try {
    const result = path(resource);
    return { holds: holds(result), empty: result.length === 0 };
  } catch (error) {
    return { holds: false, error: (error as Error).message };
  }
}

/*
 * FHIRPath's pattern functions on the linear-time engine. A user invocation
 * table takes precedence over fhirpath.js's own functions (it looks there
 * first), so these replace its `matches`, `matchesFull` and `replaceMatches`,
 * which build a native RegExp from the pattern on every call. The semantics
 * are fhirpath.js 5.1's: `matches` is a partial match (as the FHIRPath N1
 * spec says), always in single-line mode (`.` matches a newline), with the
 * flags `i` and `m`; `matchesFull` anchors the whole string; `replaceMatches`
 * replaces every match, `$1` naming a group, and `.` stops at line ends.
 */

/** Compiled patterns by flags and source: a rule's pattern is compiled at load, a computed one once per distinct value. */
const patterns = new Map<string, LinearRegex>();
const PATTERN_CACHE = 500;
/**
 * The longest pattern kept compiled, and the longest compiled at all. A pattern's instruction count does not bound
 * its length (a character class of a megabyte is one instruction), and a pattern may be computed from a message
 * (`matches(%value)`): without these, one tenant's messages could fill the process-wide cache with 500 patterns of a
 * megabyte each. No honest pattern is near either.
 */
const CACHED_PATTERN_CHARS = 1024;
const MAX_PATTERN_CHARS = 8 * 1024;

function linearPattern(source: string, flags: RegexFlags): LinearRegex {
  if (source.length > MAX_PATTERN_CHARS) {
    throw new Error(`the pattern is ${source.length} characters long; at most ${MAX_PATTERN_CHARS} are compiled`);
  }
  const key = `${flags.ignoreCase ? "i" : ""}${flags.multiline ? "m" : ""}${flags.dotAll ? "s" : ""}/${source}`;
  const known = patterns.get(key);
  if (known) return known;
  const compiled = compileLinearRegex(source, { ...flags, unicode: true });
  if (!compiled.ok) throw new Error(`the pattern /${source}/ ${compiled.problem}`);
  if (source.length > CACHED_PATTERN_CHARS) return compiled.regex;
  // Oldest first out: patterns computed from message data must not grow the cache without bound.
  if (patterns.size >= PATTERN_CACHE) patterns.delete(patterns.keys().next().value as string);
  patterns.set(key, compiled.regex);
  return compiled.regex;
}

/** fhirpath.js's flags for `matches`/`matchesFull`: `i` and `m` only, single-line mode always. */
function matchFlags(flags: unknown): RegexFlags {
  const given = typeof flags === "string" ? flags : "";
  if (/[^im]/.test(given)) throw new Error("matches/matchesFull flags must only contain i and/or m");
  return { ignoreCase: given.includes("i"), multiline: given.includes("m"), dotAll: true };
}

const isEmpty = (value: unknown) =>
  value === null || value === undefined || (Array.isArray(value) && value.length === 0);

/** The input as one string, as fhirpath.js's `singleton(coll, "String")`: empty for none, an error for many or another type. */
function singleString(collection: unknown[]): string | [] {
  if (collection.length > 1)
    throw new Error(`Unexpected collection ${JSON.stringify(collection)}; expected singleton of type String`);
  const value = collection[0];
  if (value === undefined || value === null) return [];
  if (typeof value !== "string") throw new Error(`Expected string, but got: ${JSON.stringify(collection)}`);
  return value;
}

const LINEAR_PATTERN_FUNCTIONS: UserInvocationTable = {
  matches: {
    arity: { 1: ["String"], 2: ["String", "String"] },
    fn: (input: unknown[], regex: string | [], flags?: string | []) => {
      const text = singleString(input);
      if (isEmpty(regex) || isEmpty(text)) return [];
      return linearPattern(regex as string, matchFlags(flags)).test(text as string);
    },
  },
  matchesFull: {
    arity: { 1: ["String"], 2: ["String", "String"] },
    fn: (input: unknown[], regex: string | [], flags?: string | []) => {
      const text = singleString(input);
      if (isEmpty(regex) || isEmpty(text)) return [];
      return linearPattern(`^(?:${regex as string})$`, matchFlags(flags)).test(text as string);
    },
  },
  replaceMatches: {
    arity: { 2: ["String", "String"] },
    fn: (input: unknown[], regex: string | [], substitution: string | []) => {
      const text = singleString(input);
      if (isEmpty(regex) || isEmpty(substitution) || isEmpty(text)) return [];
      return linearPattern(regex as string, {}).replaceAll(text as string, substitution as string);
    },
  },
};

interface AstNode {
  type: string;
  text?: string;
  children?: AstNode[];
}

/** A literal argument (`'^a+$'`) as its string value, read by the engine itself so every FHIRPath escape counts. */
function literalString(node: AstNode | undefined): string | undefined {
  let term = node;
  while (term && term.type !== "LiteralTerm" && term.children?.length === 1) term = term.children[0];
  if (term?.type !== "LiteralTerm" || term.children?.[0]?.type !== "StringLiteral" || term.text === undefined)
    return undefined;
  const value = fhirpath.evaluate({}, term.text) as unknown[];
  return typeof value[0] === "string" ? value[0] : undefined;
}

/**
 * Why a pattern written in the expression (`matches('(a)\\1')`) cannot run,
 * found at compile time so a rule or query with one is refused at load, not
 * at its first message; literal patterns are compiled here once, too.
 * Patterns computed from the data are checked when they are met.
 */
function refusedPattern(expression: string): string | undefined {
  const pending: AstNode[] = [fhirpath.parse(expression) as AstNode];
  while (pending.length > 0) {
    const node = pending.pop() as AstNode;
    pending.push(...(node.children ?? []));
    if (node.type !== "Functn") continue;
    const name = node.children?.[0]?.text ?? "";
    if (name !== "matches" && name !== "matchesFull" && name !== "replaceMatches") continue;
    const params = node.children?.[1]?.type === "ParamList" ? (node.children[1].children ?? []) : [];
    const regex = literalString(params[0]);
    if (regex === undefined) continue;
    const flags = name === "replaceMatches" ? "" : params[1] === undefined ? "" : literalString(params[1]);
    if (flags === undefined) continue;
    try {
      if (name === "replaceMatches") linearPattern(regex, {});
      else linearPattern(name === "matchesFull" ? `^(?:${regex})$` : regex, matchFlags(flags));
    } catch (error) {
      return `${name}(): ${(error as Error).message}`;
    }
  }
  return undefined;
}
