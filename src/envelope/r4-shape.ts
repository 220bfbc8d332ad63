import r4 from "fhirpath/fhir-context/r4";
import { type Issue, issue } from "../fhir/outcome.js";
import { describeJsonType, isObject } from "./json.js";

/**
 * The JSON shape of an R4 resource, checked against the R4 model that ships
 * with the FHIRPath engine: arrays where an element repeats, objects for
 * complex types, strings / numbers / booleans for primitives. Without it a
 * message with `"code": {"text": 5}` is accepted, stored, echoed as invalid
 * FHIR and later breaks whatever reads it. Elements the model does not know
 * are left alone (this is a shape check, not a profile validator).
 */
interface R4Model {
  path2Type: Record<string, string>;
  path2Repeating: Record<string, boolean>;
  choiceTypePaths: Record<string, string[]>;
  pathsDefinedElsewhere: Record<string, string>;
  type2Parent: Record<string, string>;
}
const model = r4 as unknown as R4Model;

type JsonKind = "string" | "number" | "boolean";

const NUMBERS = new Set(["decimal", "integer", "positiveInt", "unsignedInt", "System.Decimal", "System.Integer"]);
const BOOLEANS = new Set(["boolean", "System.Boolean"]);

/** The JSON kind of a primitive type, or undefined for a complex type. */
function primitiveKind(type: string): JsonKind | undefined {
  if (NUMBERS.has(type)) return "number";
  if (BOOLEANS.has(type)) return "boolean";
  return type.startsWith("System.") || /^[a-z]/.test(type) ? "string" : undefined;
}

interface Element {
  /** Where the element's children are looked up: a type name, or its own path for backbone elements. */
  path: string;
  type: string;
  repeating: boolean;
}

/** Every type suffix of a choice element (valueQuantity → Quantity), longest first. */
const CHOICE_SUFFIXES = [...new Set(Object.values(model.choiceTypePaths).flat())].sort((a, b) => b.length - a.length);

/** Lookups already made: the model is fixed, and requests meet the same few hundred elements again and again. */
const known = new Map<string, Element | null>();

/** The element `key` of `base` (a type name or an element path), following inheritance and choice types. */
function elementOf(base: string, key: string): Element | undefined {
  const id = `${base}\u0000${key}`;
  let found = known.get(id);
  if (found === undefined) {
    found = lookUp(base, key) ?? null;
    // Bounded: unknown keys in hostile input must not grow the cache without end.
    if (known.size < 20_000) known.set(id, found);
  }
  return found ?? undefined;
}

function lookUp(base: string, key: string): Element | undefined {
  for (let owner: string | undefined = base; owner; owner = model.type2Parent[owner]) {
    const path = `${owner}.${key}`;
    const target = model.pathsDefinedElsewhere[path] ?? path;
    const type = model.path2Type[target];
    if (type) return { path: target, type, repeating: model.path2Repeating[path] === true };
    for (const choice of CHOICE_SUFFIXES) {
      if (!key.endsWith(choice) || key.length === choice.length) continue;
      if (!model.choiceTypePaths[`${owner}.${key.slice(0, -choice.length)}`]?.includes(choice)) continue;
      const primitive = `${choice.charAt(0).toLowerCase()}${choice.slice(1)}`;
      return { path: choice, type: primitiveKind(primitive) ? primitive : choice, repeating: false };
    }
  }
  return undefined;
}

/**
 * Problems in the JSON shape of a resource, each at a FHIRPath under `at`
 * (e.g. `Bundle.entry[1].resource.code.text`). `skip` names top-level
 * elements checked elsewhere.
 *
 * @example
 *   shapeIssues({ resourceType: "AllergyIntolerance", code: { text: 5 } }, "Bundle.entry[1].resource")
 *   // → one issue at Bundle.entry[1].resource.code.text: must be a JSON string
 */
export function shapeIssues(resource: Record<string, unknown>, at: string, skip: readonly string[] = []): Issue[] {
  const issues: Issue[] = [];
  const type = resource.resourceType;
  if (typeof type !== "string" || !model.type2Parent[type]) return issues;
  walk(resource, type, at, issues, skip);
  return issues;
}

function walk(value: Record<string, unknown>, base: string, at: string, issues: Issue[], skip: readonly string[] = []) {
  for (const [key, child] of Object.entries(value)) {
    if (key === "resourceType" || key.startsWith("_") || skip.includes(key)) continue;
    const element = elementOf(base, key);
    if (!element) continue;
    const path = `${at}.${key}`;
    if (element.repeating) {
      if (!Array.isArray(child)) {
        issues.push(mistyped(path, `a JSON array (${key} repeats in FHIR R4; wrap a single value in [ ])`, child));
        continue;
      }
      child.forEach((item, i) => {
        if (item !== null) check(item, element, `${path}[${i}]`, issues);
      });
    } else if (Array.isArray(child)) {
      issues.push(mistyped(path, `a single ${expected(element.type)} (${key} does not repeat in FHIR R4)`, child));
    } else {
      check(child, element, path, issues);
    }
  }
}

function check(value: unknown, element: Element, path: string, issues: Issue[]): void {
  const kind = primitiveKind(element.type);
  if (kind) {
    if (typeof value !== kind) issues.push(mistyped(path, `${expected(element.type)}`, value));
    return;
  }
  if (!isObject(value)) {
    issues.push(mistyped(path, expected(element.type), value));
    return;
  }
  if (element.type === "Resource") {
    issues.push(...shapeIssues(value, path));
    return;
  }
  const backbone = element.type === "BackboneElement" || element.type === "Element";
  walk(value, backbone ? element.path : element.type, path, issues);
}

function expected(type: string): string {
  const kind = primitiveKind(type);
  const name = type.replace(/^System\.(.)/, (_, first: string) => first.toLowerCase());
  return kind ? `a JSON ${kind} (FHIR ${name})` : `a JSON object (FHIR ${name})`;
}

function mistyped(path: string, wanted: string, found: unknown): Issue {
  return issue("structure", `${path} must be ${wanted}, found ${describeJsonType(found)}.`, path);
}
