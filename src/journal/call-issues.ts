import { decodeEnvelope } from "../envelope/envelope.js";
import { isObject, parseJson } from "../envelope/json.js";
import { type IssueSeverity, MAX_ISSUES, moreIssues, worse } from "../fhir/outcome.js";
import type { CallRecord } from "./call-record.js";
import { requestBundle } from "./call-view.js";

/** A step from a JSON value to one of its members: a property name or an array index. */
export type JsonStep = string | number;

/** One OperationOutcome issue of a call's answer, and where its expression points in the request message. */
export interface LocatedIssue {
  severity: string | null;
  code: string | null;
  diagnostics: string | null;
  expression: string[];
  /** For each node the expressions evaluate to in the request Bundle: its JSON path from the Bundle. */
  locations: JsonStep[][];
}

/** One step of a path expression: a member (its name), an index into what the steps so far found, a type filter. */
type PathStep = { member: string } | { index: number } | { ofType: string };

/** `Name`, `` `name` ``, `[n]` and `ofType(Type)`, the grammar of the issue expressions the sandbox writes. */
const TOKEN = /\.?(?:([A-Za-z_][A-Za-z0-9_]*)|`([^`\\]+)`)(?:\(([A-Za-z_][A-Za-z0-9_.]*)\))?|\[(\d{1,9})\]/y;

/**
 * The steps of a path expression (`Bundle.entry[1].resource.ofType(Observation).value`), or undefined for any
 * other FHIRPath: those point nowhere. Read in one pass; a general FHIRPath evaluation per issue over the request
 * message is what made showing a call of many issues take minutes (issue 21).
 */
function pathSteps(expression: string): PathStep[] | undefined {
  const steps: PathStep[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < expression.length) {
    const at = TOKEN.lastIndex;
    const m = TOKEN.exec(expression);
    if (!m) return undefined;
    // The first step has no dot; every later member or function has one.
    const dotted = expression.charCodeAt(at) === 46; /* . */
    if (m[4] !== undefined) steps.push({ index: Number(m[4]) });
    else if (dotted !== at > 0) return undefined;
    else if (m[3] !== undefined) {
      if (m[1] !== "ofType") return undefined;
      steps.push({ ofType: m[3].replace(/^FHIR\./, "") });
    } else steps.push({ member: (m[1] ?? m[2]) as string });
  }
  return steps;
}

/** Most places one expression may point at, and most nodes one call's issues may visit in all. */
export const MAX_LOCATIONS = 100;
export const MAX_VISITS = 200_000;

/** What one call's issues may still spend on finding their places; shared by all of them. */
export interface LocateBudget {
  visits: number;
}

/** A node found so far: its JSON value, its path from the Bundle, and the type its choice-element key names. */
interface Found {
  value: unknown;
  steps: JsonStep[];
  choice?: string;
}

/**
 * The key of member `name` in `parent`: `name` itself, else a choice element's typed key (FHIRPath names
 * `valueQuantity` `value`), else `_name` (or `_valueString`) when only its extensions are there (FHIRPath reaches
 * them as `name`).
 */
function memberKey(parent: Record<string, unknown>, name: string, budget: LocateBudget): string | undefined {
  if (parent[name] !== undefined) return name;
  let extensionsOnly: string | undefined;
  for (const k in parent) {
    budget.visits--;
    const at = k.charCodeAt(0) === 95 /* _ */ ? 1 : 0;
    if (k.length - at <= name.length || !k.startsWith(name, at) || !/^[A-Z]/.test(k.slice(at + name.length))) continue;
    if (at === 0) return k;
    extensionsOnly ??= k;
  }
  return parent[`_${name}`] !== undefined ? `_${name}` : extensionsOnly;
}

/**
 * Whether a node is of FHIR type `type`: a resource by its resourceType, a choice element by its key
 * (`valueQuantity` is a Quantity, `valueString` a string). Another element's type is not in its JSON: the
 * expression's word is taken for it.
 */
function isOfType(node: Found, type: string): boolean {
  if (isObject(node.value) && typeof node.value.resourceType === "string") return node.value.resourceType === type;
  if (node.choice === undefined) return true;
  return node.choice.toLowerCase() === type.toLowerCase();
}

/**
 * Where a path expression points in a Bundle, as JSON paths; an expression outside the path grammar (`where()`,
 * operators), or one that finds nothing, points nowhere. Linear in the nodes it visits, and those count against
 * `budget` (an expression that would pass it points nowhere).
 *
 * @example
 *   locateInBundle(bundle, "Bundle.entry[1].resource.code") // [["entry", 1, "resource", "code"]]
 */
export function locateInBundle(
  bundle: unknown,
  expression: string,
  budget: LocateBudget = { visits: MAX_VISITS },
): JsonStep[][] {
  const steps = pathSteps(expression);
  if (!steps || !isObject(bundle)) return [];
  let found: Found[] = [{ value: bundle, steps: [] }];
  let first = true;
  for (const [n, step] of steps.entries()) {
    if ("index" in step) found = step.index < found.length ? [found[step.index] as Found] : [];
    else if ("ofType" in step) found = found.filter((n) => isOfType(n, step.ofType));
    else if (first && step.member === bundle.resourceType) {
      // A path starts with the resource's type.
    } else {
      const next: Found[] = [];
      // `entry[57]` needs the first 58 nodes of `entry`, not all of them.
      const after = steps[n + 1];
      const wanted = after && "index" in after ? after.index + 1 : Number.POSITIVE_INFINITY;
      for (const node of found) {
        if (next.length >= wanted) break;
        if (!isObject(node.value)) continue;
        const key = memberKey(node.value, step.member, budget);
        if (key === undefined) continue;
        const child = node.value[key];
        const at = key.startsWith("_") ? key.slice(1) : key;
        const choice = at.length > step.member.length ? at.slice(step.member.length) : undefined;
        const items = Array.isArray(child) ? child : [child];
        for (let i = 0; i < items.length && next.length < wanted; i++) {
          if (--budget.visits < 0) return [];
          const item = items[i];
          if (item === null) continue;
          const itemSteps = Array.isArray(child) ? [...node.steps, at, i] : [...node.steps, at];
          next.push({ value: item, steps: itemSteps, ...(choice ? { choice } : {}) });
        }
      }
      found = next;
    }
    first = false;
    if (found.length === 0) return [];
  }
  return found.slice(0, MAX_LOCATIONS).map((n) => n.steps);
}

/** The OperationOutcomes an answer carries: the body itself, or the entries of a (possibly enveloped) message. */
function outcomesOf(body: string): Record<string, unknown>[] {
  const parsed = parseJson(body);
  if (!parsed.ok || !isObject(parsed.value)) return [];
  let value: Record<string, unknown> = parsed.value;
  if (typeof value.content === "string") {
    const inner = decodeEnvelope(body, false);
    if (inner.ok) value = inner.bundle;
  }
  if (value.resourceType === "OperationOutcome") return [value];
  if (value.resourceType !== "Bundle" || !Array.isArray(value.entry)) return [];
  return value.entry.flatMap((e) =>
    isObject(e) && isObject(e.resource) && e.resource.resourceType === "OperationOutcome" ? [e.resource] : [],
  );
}

const text = (value: unknown) => (typeof value === "string" ? value : null);

/**
 * Every issue of every OperationOutcome in a call's answer, with the places its expressions point at in the
 * request message (GET /__admin/calls/{id}). An answer may be any JSON (a scripted body, an upstream's answer):
 * the first MAX_ISSUES issues are shown and one more counts the rest, as the sandbox's own outcomes do.
 */
export function issuesOfCall(call: CallRecord): LocatedIssue[] {
  if (!call.response) return [];
  const all = outcomesOf(call.response.body).flatMap((o) => (Array.isArray(o.issue) ? o.issue.filter(isObject) : []));
  if (all.length === 0) return [];
  const bundle = requestBundle(call);
  const budget: LocateBudget = { visits: MAX_VISITS };
  // An outcome the sandbox wrote has at most MAX_ISSUES and its own last issue counting the rest: shown as it is.
  const whole = all.length <= MAX_ISSUES + 1;
  const shown: LocatedIssue[] = all.slice(0, whole ? all.length : MAX_ISSUES).map((i) => {
    const expression = Array.isArray(i.expression) ? i.expression.filter((e) => typeof e === "string") : [];
    return {
      severity: text(i.severity),
      code: text(i.code),
      diagnostics: text(i.diagnostics),
      expression,
      locations: bundle ? expression.flatMap((e) => locateInBundle(bundle, e, budget)) : [],
    };
  });
  if (whole) return shown;
  let severity: IssueSeverity = "information";
  for (const i of all.slice(MAX_ISSUES)) if (isSeverity(i.severity)) severity = worse(severity, i.severity);
  const more = moreIssues(all.length - MAX_ISSUES, severity);
  return [...shown, { ...more, expression: [], locations: [] }];
}

const isSeverity = (value: unknown): value is IssueSeverity =>
  value === "fatal" || value === "error" || value === "warning" || value === "information";
