import { readFileSync } from "node:fs";

/**
 * The official FHIR R4 (4.0.1) definitions, compiled ahead of time by
 * scripts/compile-r4-definitions.mjs from HL7's StructureDefinitions,
 * ValueSets and CodeSystems into r4-definitions.json. This module only
 * loads and types that table; the validator compiles checks from it.
 */

/** A data type an element may hold: a type name, a backbone element path (e.g. `Observation.component`), or a primitive. */
export interface TypeRef {
  code: string;
  /** A Quantity profile the value must also meet (SimpleQuantity, MoneyQuantity): a key of `types`. */
  profile?: string;
  /** Resource types a Reference or canonical may point at (`Resource` for any). */
  targets?: string[];
}

export interface Binding {
  strength: "required" | "extensible";
  /** Canonical URL of the value set, without version. */
  valueSet: string;
}

export interface ElementDef {
  min: number;
  /** Most occurrences; -1 for `*`. */
  max: number;
  /** A choice element `name[x]`: its JSON key is the name plus the type, e.g. valueQuantity. */
  choice?: true;
  types: TypeRef[];
  binding?: Binding;
  /** Invariants (keys into `constraints`) on each value of this element, beyond its type's. */
  constraints?: string[];
}

export interface TypeDef {
  kind: "resource" | "complex-type" | "primitive-type" | "backbone";
  abstract?: true;
  base?: string;
  /** Invariants on every value of this type (for a resource: at its root). */
  constraints: string[];
  /** Child elements by name (choice elements without `[x]`), inherited ones included. */
  elements: Record<string, ElementDef>;
}

export interface ConstraintDef {
  key: string;
  severity: "error" | "warning";
  human: string;
  expression: string;
  bestPractice?: true;
}

export interface PrimitiveDef {
  /** The JSON type of the value (R4 JSON Schema). */
  json: "string" | "number" | "boolean";
  /** The R4 regular expression of the value's lexical form. */
  regex?: string;
  maxLength?: number;
}

export type ValueSetDef = { systems: Record<string, string[]> } | { unexpandable: string };

export interface R4Definitions {
  fhirVersion: string;
  source: string;
  primitives: Record<string, PrimitiveDef>;
  /** Resources, data types (primitives included) and backbone elements by name or path. */
  types: Record<string, TypeDef>;
  constraints: Record<string, ConstraintDef>;
  /** Expansions of the value sets that required and extensible bindings name. */
  valueSets: Record<string, ValueSetDef>;
  /** Complete code systems those value sets draw on, with every code. */
  codeSystems: Record<string, { codes: string[] }>;
}

/** The compiled table, next to this module in src/ and in dist/ (the build copies it). */
export const R4: R4Definitions = JSON.parse(
  readFileSync(new URL("./r4-definitions.json", import.meta.url), "utf8"),
) as R4Definitions;

let resourceTypes: Set<string> | undefined;

/** Whether `name` is a concrete R4 resource type. */
export function isResourceType(name: string): boolean {
  // A set of the ~150 names, not a look-up in the table of every type and backbone element: it runs per resource.
  resourceTypes ??= new Set(
    Object.keys(R4.types).filter((k) => R4.types[k]?.kind === "resource" && R4.types[k]?.abstract !== true),
  );
  return resourceTypes.has(name);
}

/** `valueQuantity` → `Quantity`: the type suffix of a choice element's JSON key. */
export function choiceKey(name: string, type: string): string {
  return `${name}${type.charAt(0).toUpperCase()}${type.slice(1)}`;
}
