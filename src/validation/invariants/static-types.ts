import r4Model from "fhirpath/fhir-context/r4";
import { R4 } from "../r4/definitions.js";
import { Unsupported } from "./parse-expression.js";
import type { Shape } from "./runtime.js";

/**
 * Static types of compiled FHIRPath: what navigation yields, known from the
 * R4 definitions, so choice elements, dates and quantities are handled the
 * way the fhirpath library handles them with its R4 model.
 */
export type SType =
  /** A key of R4.types (resource, complex, primitive or backbone path). */
  | { k: "fhir"; code: string }
  /** Any concrete resource; the runtime value is checked to carry a known resourceType. */
  | { k: "resource" }
  /**
   * One of several types (a choice element, a mixed union): only existence
   * is compiled, and equality when every member type allows it (`eqSafe`).
   */
  | { k: "choice"; eqSafe?: true }
  /** Data the model does not describe: the library navigates it by plain keys, untyped. */
  | { k: "untyped" }
  /** A FHIRPath system value computed by the expression. */
  | { k: "sys"; name: "String" | "Boolean" | "Integer" | "Decimal" };

/** What operations may do with values of a static type. */
export type ValueClass = "string" | "number" | "boolean" | "date" | "quantity" | "object" | "unknown";

const NUMBERS = new Set(["integer", "decimal", "positiveInt", "unsignedInt"]);
const DATES = new Set(["date", "dateTime", "instant"]);

export const RESOURCE_TYPES: ReadonlySet<string> = new Set(
  Object.entries(R4.types)
    .filter(([, t]) => t.kind === "resource" && t.abstract !== true)
    .map(([name]) => name),
);

const model = r4Model as unknown as {
  choiceTypePaths: Record<string, string[]>;
  path2Type: Record<string, string>;
};

function isA(code: string, ancestor: string): boolean {
  for (let c: string | undefined = code; c !== undefined; c = R4.types[c]?.base) if (c === ancestor) return true;
  return false;
}

export function valueClass(t: SType): ValueClass {
  switch (t.k) {
    case "sys":
      return t.name === "String" ? "string" : t.name === "Boolean" ? "boolean" : "number";
    case "resource":
      return "object";
    case "choice":
    case "untyped":
      return "unknown";
    case "fhir": {
      const def = R4.types[t.code];
      if (!def) return "unknown";
      if (def.kind === "primitive-type") {
        if (t.code === "boolean") return "boolean";
        if (NUMBERS.has(t.code)) return "number";
        if (DATES.has(t.code)) return "date";
        // time and integer64 have their own library types.
        if (t.code === "time") return "unknown";
        return "string";
      }
      if (isA(t.code, "Quantity")) return "quantity";
      return "object";
    }
  }
}

/** The JSON shape navigation must find for values of a type code. */
function shapeOf(code: string): Shape {
  if (code === "Resource" || code === "DomainResource") return "resource";
  const def = R4.types[code];
  if (!def) throw new Unsupported(`unknown type ${code}`);
  if (def.kind === "resource") throw new Unsupported(`element of resource type ${code}`);
  return def.kind === "primitive-type" ? "primitive" : "object";
}

function typeOf(code: string): SType {
  return code === "Resource" || code === "DomainResource" ? { k: "resource" } : { k: "fhir", code };
}

/** How to navigate to a child element. */
export type Step =
  | { k: "plain"; key: string; shape: Shape; type: SType }
  | { k: "choice"; keys: string[]; shapes: Shape[]; type: SType };

/**
 * The navigation step for `name` on values of `parent`.
 * @example childStep({ k: "fhir", code: "Observation" }, "value") // { k: "choice", keys: ["valueQuantity", …] }
 */
export function childStep(parent: SType, name: string): Step {
  let owner: string;
  if (parent.k === "untyped") return { k: "plain", key: name, shape: "untyped", type: parent };
  if (parent.k === "fhir") owner = parent.code;
  else if (parent.k === "resource") owner = "DomainResource";
  else throw new Unsupported(`navigation from ${parent.k}`);
  const def = R4.types[owner];
  if (!def || def.kind === "primitive-type") throw new Unsupported(`navigation from ${owner}`);
  const el = def.elements[name];
  if (!el) {
    const path = `${owner}.${name}`;
    // Not in R4 nor in the library's model: the library looks the key up untyped.
    if (parent.k === "fhir" && !model.path2Type[path] && !model.choiceTypePaths[path] && name !== "extension") {
      return { k: "plain", key: name, shape: "untyped", type: { k: "untyped" } };
    }
    throw new Unsupported(`no element ${path}`);
  }
  if (el.choice) {
    const suffixes = model.choiceTypePaths[`${owner}.${name}`];
    if (!suffixes) throw new Unsupported(`no model choice for ${owner}.${name}`);
    const shapes = suffixes.map((s) => {
      // The model names profiled quantities (SimpleQuantity) by their base type.
      const ref = el.types.find(
        (t) => t.code.toLowerCase() === s.toLowerCase() || (s === "Quantity" && isA(t.code, "Quantity")),
      );
      if (!ref) throw new Unsupported(`choice type ${s}`);
      return shapeOf(ref.code);
    });
    return { k: "choice", keys: suffixes.map((s) => name + s), shapes, type: { k: "choice" } };
  }
  const code = el.types[0]?.code;
  if (code === undefined || el.types.length !== 1) throw new Unsupported(`element ${owner}.${name} types`);
  return { k: "plain", key: name, shape: shapeOf(code), type: typeOf(code) };
}

/** The static type of an invariant's context node. */
export function contextStaticType(contextType: string): SType {
  const def = R4.types[contextType];
  if (!def) throw new Unsupported(`unknown context ${contextType}`);
  if (def.kind === "resource" && def.abstract === true) return { k: "resource" };
  return { k: "fhir", code: contextType };
}

/** The resource that a constraint on `contextType` sits in, when the type says so. */
export function owningResource(contextType: string): string | undefined {
  const head = contextType.split(".")[0] as string;
  return RESOURCE_TYPES.has(head) ? head : undefined;
}
