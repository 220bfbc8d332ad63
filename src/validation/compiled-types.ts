import { compileInvariant, type InvariantCheck } from "./invariants/compile-invariant.js";
import { nativeInvariant } from "./invariants/native.js";
import { type PrimitiveCheck, primitiveCheck } from "./primitives.js";
import { type Binding, choiceKey, type ElementDef, R4 } from "./r4/definitions.js";

/** An invariant ready to run: its key and words from the definitions, and the compiled check. */
export interface Invariant {
  key: string;
  severity: "error" | "warning";
  human: string;
  check: InvariantCheck;
}

/** One JSON key of a type: the element it belongs to and the type its value has under that key. */
export interface Slot {
  /** Element name (a choice element without `[x]`). */
  name: string;
  /**
   * The FHIRPath step to a value under this key: the name (in backticks where it is a FHIRPath word), and for a
   * choice element its type with `ofType()`, as R4's FHIRPath writes it (`value.ofType(Quantity)`, not `valueQuantity`).
   */
  step: string;
  element: ElementDef;
  /** Type of the value under this key: a primitive, a data type, `Resource`, or a backbone path. */
  type: string;
  repeating: boolean;
  primitive?: PrimitiveCheck;
  /** Reference targets (`Resource` for any). */
  targets?: string[];
  binding?: Binding;
  /** Element invariants beyond those of the value's type. */
  invariants: Invariant[];
  /** Whether the value is XHTML (Narrative.div), checked for txt-1/txt-2 natively. */
  xhtml: boolean;
  /** A canonical, uri or url: a "#id" value refers to a contained resource (dom-3). */
  localReference: boolean;
  /** Data types with checks of their own beyond R4's element table. */
  special?: "Reference" | "Identifier" | "Coding";
  /** The compiled value type, once first needed. */
  child?: CompiledType;
}

/** A resource, data type or backbone element compiled for the walk. */
export interface CompiledType {
  key: string;
  /** JSON key → slot (choice elements have one key per type: valueQuantity, valueString, …). */
  slots: Map<string, Slot>;
  /** Elements with min ≥ 1: their name, their JSON keys, and every key whose presence satisfies them (`_x` too). */
  required: Array<{ name: string; min: number; keys: string[]; present: string[] }>;
  /** Element names, for "did you mean" and for naming a choice element used without its type. */
  names: string[];
  invariants: Invariant[];
}

/**
 * Invariants checked natively: txt-1/txt-2 are `htmlChecks()`, which the
 * FHIRPath engine does not implement (see xhtml.ts); dom-3 applies `as()` to
 * a collection, which strict engines reject (see contained.ts).
 */
const NATIVE = new Set(["txt-1", "txt-2", "dom-3"]);

const compiledInvariants = new Map<string, Invariant>();
function invariant(id: string, contextType: string): Invariant | undefined {
  const def = R4.constraints[id];
  if (!def || NATIVE.has(def.key)) return undefined;
  // dom-6 ("a resource should have narrative") would warn on every message: this exchange's messages carry none.
  if (def.key === "dom-6") return undefined;
  const cacheKey = `${id}\u0000${contextType}`;
  let found = compiledInvariants.get(cacheKey);
  if (!found) {
    found = {
      key: def.key,
      severity: def.severity,
      human: def.human,
      check: checkOf(def.key, def.expression, contextType),
    };
    compiledInvariants.set(cacheKey, found);
  }
  return found;
}

/**
 * The check of an invariant: its compiled FHIRPath, or for the hottest few (the Bundle's, ref-1) a native check
 * that decides the usual shapes and hands the others to the compiled FHIRPath (see invariants/native.ts).
 */
function checkOf(key: string, expression: string, contextType: string): InvariantCheck {
  const compiled = compileInvariant(expression, contextType).check;
  const native = nativeInvariant(key, contextType);
  if (!native) return compiled;
  return (node, env) => native(node, env) ?? compiled(node, env);
}

/** FHIRPath words that R4 also uses as element names (Narrative.div, ValueSet.expansion.contains). */
const KEYWORDS = new Set(["div", "mod", "and", "or", "xor", "implies", "is", "as", "in", "contains", "true", "false"]);

/** An element name as a FHIRPath step: delimited with backticks where it is a FHIRPath word. */
export function fhirpathName(name: string): string {
  return KEYWORDS.has(name) ? `\`${name}\`` : name;
}

const compiled = new Map<string, CompiledType>();

/**
 * The compiled form of a type, built on first use from the R4 definitions and
 * kept: requests meet the same few dozen types again and again.
 *
 * @example compiledType("Observation").slots.get("valueQuantity")?.type // "Quantity"
 */
export function compiledType(key: string): CompiledType {
  let type = compiled.get(key);
  if (!type) {
    type = compile(key);
    compiled.set(key, type);
  }
  return type;
}

function compile(key: string): CompiledType {
  const def = R4.types[key];
  if (!def) throw new Error(`no R4 type ${key}`);
  const slots = new Map<string, Slot>();
  const required: CompiledType["required"] = [];
  const typeInvariants = def.constraints.flatMap((id) => invariant(id, key) ?? []);
  for (const [name, element] of Object.entries(def.elements)) {
    const keys: string[] = [];
    for (const ref of element.types) {
      const jsonKey = element.choice ? choiceKey(name, ref.code) : name;
      keys.push(jsonKey);
      const code = ref.profile ?? ref.code;
      const valueType = R4.types[code];
      const typeConstraints = new Set(valueType?.constraints ?? []);
      const slot: Slot = {
        name,
        // The type's own name (Quantity, not a profile such as SimpleQuantity): FHIRPath's ofType() takes no profile.
        step: element.choice ? `${name}.ofType(${ref.code})` : fhirpathName(name),
        element,
        type: code,
        repeating: element.max !== 1,
        invariants: (element.constraints ?? [])
          .filter((id) => !typeConstraints.has(id))
          .flatMap((id) => invariant(id, code) ?? []),
        xhtml: code === "xhtml",
        localReference: code === "canonical" || code === "uri" || code === "url",
      };
      if (R4.primitives[ref.code]) slot.primitive = primitiveCheck(ref.code);
      if (code === "Reference" || code === "Identifier" || code === "Coding") slot.special = code;
      if (ref.targets) slot.targets = ref.targets;
      if (element.binding) slot.binding = element.binding;
      slots.set(jsonKey, slot);
    }
    if (element.min > 0)
      required.push({ name, min: element.min, keys, present: [...keys, ...keys.map((k) => `_${k}`)] });
  }
  return { key, slots, required, names: Object.keys(def.elements), invariants: typeInvariants };
}
