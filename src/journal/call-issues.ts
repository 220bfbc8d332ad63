import fhirpath from "fhirpath";
import r4 from "fhirpath/fhir-context/r4";
import { decodeEnvelope } from "../envelope/envelope.js";
import { isObject, parseJson } from "../envelope/json.js";
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

/** The node fhirpath.js hands back with resolveInternalTypes: false. */
interface ResourceNode {
  parentResNode: ResourceNode | null;
  propName: string | null;
  index: number | null;
  data: unknown;
}

const isNode = (value: unknown): value is ResourceNode =>
  typeof value === "object" && value !== null && "parentResNode" in value && "propName" in value;

/** The JSON key of a node: FHIRPath names a choice element `value`, JSON `valueQuantity`. */
function jsonKey(node: ResourceNode): string {
  const name = node.propName as string;
  const parent = node.parentResNode?.data;
  if (!isObject(parent) || name in parent) return name;
  return Object.keys(parent).find((k) => k.startsWith(name) && /^[A-Z]/.test(k.slice(name.length))) ?? name;
}

function stepsOf(node: ResourceNode): JsonStep[] {
  const steps: JsonStep[] = [];
  for (let n: ResourceNode | null = node; n; n = n.parentResNode) {
    if (n.propName === null || n.propName === undefined) continue;
    if (n.index !== null && n.index !== undefined) steps.push(n.index);
    steps.push(jsonKey(n));
  }
  return steps.reverse();
}

/**
 * Where a FHIRPath expression points in a Bundle, as JSON paths, evaluated
 * with the same engine and R4 model as the validator; an expression that does
 * not evaluate points nowhere.
 *
 * @example
 *   locateInBundle(bundle, "Bundle.entry[1].resource.code") // [["entry", 1, "resource", "code"]]
 */
export function locateInBundle(bundle: unknown, expression: string): JsonStep[][] {
  try {
    const nodes = fhirpath.evaluate(bundle as object, expression, undefined, r4, {
      resolveInternalTypes: false,
    }) as unknown[];
    return nodes.filter(isNode).map(stepsOf);
  } catch {
    return [];
  }
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
 * Every issue of every OperationOutcome in a call's answer, with the places
 * its expressions point at in the request message (GET /__admin/calls/{id}).
 */
export function issuesOfCall(call: CallRecord): LocatedIssue[] {
  if (!call.response) return [];
  const issues = outcomesOf(call.response.body).flatMap((o) => (Array.isArray(o.issue) ? o.issue : []));
  if (issues.length === 0) return [];
  const bundle = requestBundle(call);
  return issues.filter(isObject).map((i) => {
    const expression = Array.isArray(i.expression) ? i.expression.filter((e) => typeof e === "string") : [];
    return {
      severity: text(i.severity),
      code: text(i.code),
      diagnostics: text(i.diagnostics),
      expression,
      locations: bundle ? expression.flatMap((e) => locateInBundle(bundle, e)) : [],
    };
  });
}
