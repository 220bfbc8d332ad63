import { isValidEmiratesId } from "../domain/emirates-id.js";
import { isObject } from "../envelope/json.js";
import {
  type Issue,
  type IssueCode,
  type IssueSeverity,
  issue,
  MAX_ISSUES,
  validationStopped,
} from "../fhir/outcome.js";
import { bindingProblems, unknownCodeOf } from "./bindings.js";
import { type CompiledType, compiledType, fhirpathName, type Invariant, type Slot } from "./compiled-types.js";
import type { InvariantEnv } from "./invariants/compile-invariant.js";
import { describe } from "./primitives.js";
import { isResourceType } from "./r4/definitions.js";
import { BundleReferences, referenceProblem } from "./references.js";
import { xhtmlProblems } from "./xhtml.js";

export interface ValidatorOptions {
  /** `full`: everything R4 defines; `shape`: only JSON kinds (what the built-in behaviour needs to read a message). */
  mode: "full" | "shape";
  /** Identifier system whose values must be Emirates IDs. */
  emiratesIdSystem: string;
  emiratesIdCheck: "error" | "warning" | "off";
}

/**
 * Validates a resource (for a message, the Bundle) against the R4 core
 * definitions and returns every problem found (in time linear in the resource), errors and warnings, each
 * with a FHIRPath from `root` (e.g. `Bundle`) that evaluates to the
 * offending node, or to the parent of a missing element.
 *
 * @example
 *   validateResource(bundle, { mode: "full", emiratesIdSystem: "urn:ae:emirates-id", emiratesIdCheck: "error" })
 *   // → [{ severity: "error", code: "code-invalid", expression: ["Bundle.entry[1].resource.criticality"], … }]
 */
export function validateResource(resource: Record<string, unknown>, options: ValidatorOptions): Issue[] {
  const type = resource.resourceType;
  if (typeof type !== "string" || !isResourceType(type)) {
    return [issue("structure", `${describeType(type)} is not an R4 resource type.`, undefined)];
  }
  const walk = new Walk(options, resource, type);
  try {
    walk.resource(resource, type, undefined, true);
  } catch (error) {
    if (error !== STOPPED) throw error;
    return [...walk.finish(), validationStopped(MAX_VALIDATION_ISSUES)];
  }
  return walk.finish();
}

/**
 * How many problems a message is validated to. A message with more is refused all the same, and walking the rest
 * costs every team time (100,000 empty entries: 0.7 s, most of it issues nobody reads, as an answer lists 100):
 * the walk stops there and says so.
 */
export const MAX_VALIDATION_ISSUES = 1_000;

/** Thrown from deep in the walk once MAX_VALIDATION_ISSUES are found; caught by validateResource alone. */
const STOPPED = Symbol("validation stopped");

function describeType(type: unknown): string {
  return typeof type === "string" ? `resourceType ${JSON.stringify(type)}` : "A missing resourceType";
}

class Walk {
  readonly #issues: Issue[] = [];
  readonly #full: boolean;
  readonly #references: BundleReferences | undefined;
  /** fullUrl of the Bundle entry being walked: relative references resolve against it. */
  #entryUrl: string | undefined;
  /** For a resource with contained ones (dom-3): the local references met in it, and the contained ones that refer back. */
  #local: { references: Set<string>; toContainer: Set<string> } | undefined;
  /** The id of the contained resource being walked. */
  #containedId: string | undefined;
  /** How many unknown names got a "did you mean" so far. */
  #hints = 0;
  /**
   * Where the walk is: the root's type, then the FHIRPath step (a slot's `step`) and item index (-1: a single value)
   * of each element entered.
   * The FHIRPath of a node is joined from them only when a problem is reported there: most nodes are valid.
   */
  readonly #root: string;
  readonly #keys: string[] = [];
  readonly #indexes: number[] = [];
  #depth = 0;

  constructor(
    private readonly options: ValidatorOptions,
    root: Record<string, unknown>,
    rootType: string,
  ) {
    this.#full = options.mode === "full";
    this.#references = root.resourceType === "Bundle" ? new BundleReferences(root) : undefined;
    this.#root = rootType;
  }

  finish(): Issue[] {
    // A code outside a required value set is also unknown to its code system: one problem, reported once, as the error.
    let codeErrorAt: Set<string | undefined> | undefined;
    for (const i of this.#issues)
      if (i.severity === "error" && i.code === "code-invalid") {
        codeErrorAt ??= new Set();
        codeErrorAt.add(i.expression?.[0]);
      }
    if (codeErrorAt === undefined) return this.#issues;
    const issues = this.#issues.filter(
      (i) =>
        i.severity === "error" ||
        i.code !== "code-invalid" ||
        i.expression === undefined ||
        !codeErrorAt.has(i.expression[0]),
    );
    // Every problem, however many: the answer's OperationOutcome lists the first MAX_ISSUES and counts the rest
    // (fhir/outcome.ts), after the message's own checks have been merged in.
    return issues;
  }

  #add(code: IssueCode, diagnostics: string, path: string, severity: IssueSeverity = "error"): void {
    if (this.#issues.push(issue(code, diagnostics, path, severity)) >= MAX_VALIDATION_ISSUES) throw STOPPED;
  }

  #enter(step: string, index: number): void {
    this.#keys[this.#depth] = step;
    this.#indexes[this.#depth] = index;
    this.#depth++;
  }

  #leave(): void {
    this.#depth--;
  }

  /** The FHIRPath of the node being walked, or of item `index` (-1: the single value) under its FHIRPath `step`. */
  #at(step?: string, index = -1): string {
    let path = this.#root;
    for (let d = 0; d < this.#depth; d++) path = pathOf(path, this.#keys[d] as string, this.#indexes[d] as number);
    return step === undefined ? path : pathOf(path, step, index);
  }

  /** The resource being walked to; `root` when it starts a new %rootResource (not a contained one). */
  resource(value: Record<string, unknown>, type: string, outer: InvariantEnv | undefined, root: boolean) {
    const env: InvariantEnv = {
      resource: value,
      rootResource: root || !outer ? value : outer.rootResource,
      resourceFocus: undefined,
      rootResourceFocus: undefined,
    };
    if (!root) {
      // A contained resource: its local references count for its container (dom-3 reads %resource.descendants()).
      const saved = this.#containedId;
      this.#containedId = typeof value.id === "string" ? value.id : undefined;
      this.#object(value, compiledType(type), env, type);
      this.#containedId = saved;
      return;
    }
    const saved = this.#local;
    this.#local = value.contained !== undefined ? { references: new Set(), toContainer: new Set() } : undefined;
    this.#object(value, compiledType(type), env, type);
    if (this.#full && this.#local && Array.isArray(value.contained)) this.#dom3(value.contained, type);
    this.#local = saved;
  }

  /**
   * dom-3, checked natively (R4 writes it with `as()` on a collection, which HL7's FHIRPath engine refuses to
   * evaluate): each contained resource is referred to as `#id` by a Reference or a canonical, uri or url of its
   * container, or refers to the container itself with `#`.
   */
  #dom3(contained: unknown[], type: string): void {
    const local = this.#local;
    if (!local) return;
    for (const c of contained) {
      if (!isObject(c) || typeof c.id !== "string") continue;
      if (local.references.has(`#${c.id}`) || local.toContainer.has(c.id)) continue;
      this.#add(
        "invariant",
        `dom-3: the contained resource "${c.id}" is not referred to from elsewhere in the ${type} ("#${c.id}"); a contained resource SHALL be referred to from its container or refer to it.`,
        this.#at(),
      );
    }
  }

  /** A local reference ("#id", or "#" for the container) read while walking a resource that has contained ones. */
  #localReference(value: string): void {
    const local = this.#local;
    if (!local) return;
    if (value === "#") {
      if (this.#containedId !== undefined) local.toContainer.add(this.#containedId);
    } else local.references.add(value);
  }

  #object(value: Record<string, unknown>, type: CompiledType, env: InvariantEnv, label: string): void {
    const full = this.#full;
    // The first choice element met, and its key; a map only for an object with more than one (rare).
    let choiceName: string | undefined;
    let choiceKey: string | undefined;
    let seenChoice: Map<string, string> | undefined;
    let keys = 0;
    for (const key in value) {
      keys++;
      if (key === "resourceType") continue;
      const child = value[key];
      if (key.charCodeAt(0) === 95 /* _ */) {
        this.#primitiveExtension(key, child, value, type, env, label);
        continue;
      }
      const slot = type.slots.get(key);
      if (!slot) {
        if (full) this.#unknown(key, type, label);
        continue;
      }
      if (slot.element.choice && full) {
        let other: string | undefined;
        if (choiceName === undefined) {
          choiceName = slot.name;
          choiceKey = key;
        } else if (choiceName === slot.name) other = choiceKey;
        else {
          seenChoice ??= new Map();
          other = seenChoice.get(slot.name);
          if (!other) seenChoice.set(slot.name, key);
        }
        if (other) {
          this.#add(
            "structure",
            `${label}.${slot.name}[x] takes one value, but both ${other} and ${key} are given; keep one.`,
            // FHIRPath reaches one value of a choice element (`value.ofType(string)` finds nothing beside a
            // valueQuantity): the parent is pointed at, and the diagnostics name both keys.
            this.#at(),
          );
        }
      }
      if (slot.repeating) {
        if (!Array.isArray(child)) {
          this.#add(
            "structure",
            `${label}.${key} repeats in R4 and must be a JSON array (wrap a single value in [ ]), found ${describe(child)}.`,
            this.#at(slot.step),
          );
          continue;
        }
        if (child.length === 0) {
          if (full)
            this.#add("structure", `${label}.${key} is an empty array; leave the element out instead.`, this.#at());
          continue;
        }
        if (full && slot.element.max > 0 && child.length > slot.element.max) {
          this.#add(
            "structure",
            `${label}.${key} allows at most ${slot.element.max} values, found ${child.length}.`,
            this.#at(slot.step),
          );
        }
        for (let i = 0; i < child.length; i++) {
          const item = child[i];
          if (item === null) {
            // null holds a place only where the `_` array carries that item's extensions.
            const extensions = value[`_${key}`];
            if (!(slot.primitive && Array.isArray(extensions) && isObject(extensions[i]))) {
              // FHIRPath drops nulls, so the item cannot be pointed at: its parent is.
              this.#add("structure", `${label}.${key}[${i}] is null; JSON null is not a FHIR value.`, this.#at());
            }
            continue;
          }
          this.#value(item, slot, key, i, env, label);
        }
      } else if (Array.isArray(child)) {
        this.#add(
          "structure",
          `${label}.${key} does not repeat in R4: give a single value, not an array.`,
          this.#at(slot.step),
        );
      } else if (child === null) {
        this.#add(
          "structure",
          `${label}.${key} is null; JSON null is not a FHIR value (leave the element out).`,
          this.#at(),
        );
      } else {
        this.#value(child, slot, key, -1, env, label);
      }
    }
    if (!full) return;
    if (keys === 0 || (keys === 1 && "id" in value)) {
      this.#add("structure", `${label} is empty: an element must have a value or children (ele-1).`, this.#at());
    }
    for (const req of type.required) {
      if (!hasAny(value, req.present)) {
        const names = req.keys.length > 1 ? `${req.name}[x] (${req.keys.join(", ")})` : req.name;
        this.#add("required", `${label}.${names} is required (at least ${req.min}) but missing.`, this.#at());
      }
    }
    this.#invariants(type.invariants, value, env);
  }

  /**
   * The value of `owner`'s element `key` (item `index` of it, or -1 for a single value) under the node being walked.
   * Names are joined only when a problem needs them: most values are valid primitives.
   */
  #value(value: unknown, slot: Slot, key: string, index: number, env: InvariantEnv, owner: string) {
    const full = this.#full;
    if (slot.primitive) {
      const problem = slot.primitive(value);
      if (problem) {
        if (full || problem.code === "structure") {
          this.#add(problem.code, `${owner}.${key} ${problem.says}`, this.#at(slot.step, index));
        }
        return;
      }
      if (!full) return;
      if (
        this.#local !== undefined &&
        typeof value === "string" &&
        value.charCodeAt(0) === 35 /* # */ &&
        (slot.localReference || (key === "reference" && owner === "Reference"))
      ) {
        this.#localReference(value);
      }
      if (slot.binding) this.#binding(slot, value, key, index, owner);
      if (slot.xhtml && typeof value === "string") {
        for (const p of xhtmlProblems(value)) {
          this.#add("invariant", `${owner}.${key}: ${p.says}`, this.#at(slot.step, index));
        }
      }
      if (slot.invariants.length > 0) this.#invariants(slot.invariants, value, env, slot.step, index);
      return;
    }
    if (!isObject(value)) {
      this.#add(
        "structure",
        `${owner}.${key} must be a JSON object (FHIR ${slot.type}), found ${describe(value)}.`,
        this.#at(slot.step, index),
      );
      return;
    }
    if (slot.type === "Resource") {
      const rt = value.resourceType;
      if (typeof rt !== "string" || !isResourceType(rt)) {
        this.#add(
          "structure",
          `${owner}.${key}: ${describeType(rt)} is not an R4 resource type; every resource needs a known resourceType.`,
          this.#at(slot.step, index),
        );
        return;
      }
      const saved = this.#entryUrl;
      this.#enter(slot.step, index);
      this.resource(value, rt, env, slot.name !== "contained");
      this.#leave();
      this.#entryUrl = saved;
      return;
    }
    if (slot.type === "Bundle.entry") this.#entryUrl = typeof value.fullUrl === "string" ? value.fullUrl : undefined;
    slot.child ??= compiledType(slot.type);
    this.#enter(slot.step, index);
    this.#object(value, slot.child, env, slot.type);
    this.#leave();
    if (!full) return;
    if (slot.binding) this.#binding(slot, value, key, index, owner);
    if (slot.invariants.length > 0) this.#invariants(slot.invariants, value, env, slot.step, index);
    switch (slot.special) {
      case "Reference":
        this.#reference(value, slot, key, index, owner);
        break;
      case "Identifier":
        this.#emiratesId(value, slot, index);
        break;
      case "Coding": {
        const unknown = unknownCodeOf(value);
        if (unknown)
          this.#add("code-invalid", `${owner}.${key}: ${unknown}`, `${this.#at(slot.step, index)}.code`, "warning");
        break;
      }
    }
  }

  #primitiveExtension(
    key: string,
    child: unknown,
    value: Record<string, unknown>,
    type: CompiledType,
    env: InvariantEnv,
    label: string,
  ): void {
    const name = key.slice(1);
    const slot = type.slots.get(name);
    if (!slot?.primitive) {
      if (this.#full) this.#unknown(key, type, label);
      return;
    }
    const element = compiledType("Element");
    // FHIRPath reaches `_name` as `name` (its extensions as `name.extension`), even without a value.
    if (slot.repeating) {
      if (!Array.isArray(child)) {
        this.#add("structure", `${label}.${key} must be an array matching ${label}.${name}.`, this.#at());
        return;
      }
      // R4 JSON: both arrays the same length, null filling the gaps (a `_name` alone, with no values, is fine).
      const values = value[name];
      if (Array.isArray(values) && values.length !== child.length) {
        this.#add(
          "structure",
          `${label}.${key} has ${child.length} item${child.length === 1 ? "" : "s"} and ${label}.${name} ${values.length}: they must be as long, with null where an item has no id or extension.`,
          this.#at(),
        );
      }
      for (let i = 0; i < child.length; i++) {
        const item = child[i];
        if (item === null) continue;
        if (!isObject(item)) {
          this.#add("structure", `${label}.${key}[${i}] must be an object (id, extension).`, this.#at());
          continue;
        }
        this.#enter(slot.step, i);
        this.#object(item, element, env, `${label}.${name}`);
        this.#leave();
      }
    } else if (!isObject(child)) {
      this.#add(
        "structure",
        `${label}.${key} must be an object (id, extension), found ${describe(child)}.`,
        this.#at(),
      );
    } else {
      this.#enter(slot.step, -1);
      this.#object(child, element, env, `${label}.${name}`);
      this.#leave();
    }
  }

  #unknown(key: string, type: CompiledType, label: string): void {
    const name = key.startsWith("_") ? key.slice(1) : key;
    const keys = choiceKeys(type).get(name);
    if (keys) {
      // A bare choice name (`value`) is not reachable by FHIRPath: the issue points at the parent.
      this.#add(
        "structure",
        `${label} has no element "${key}": ${name}[x] is a choice element, named by its type: ${keys.join(", ")}.`,
        this.#at(),
      );
      return;
    }
    // "Did you mean" for the first names only: an answer lists MAX_ISSUES issues, and a megabyte of unknown names
    // would otherwise cost an edit distance to every element name each.
    const near = this.#hints++ < MAX_HINTS ? nearest(name, type.names) : undefined;
    this.#add(
      "structure",
      `"${key}" is not an element of ${label} in FHIR R4${near ? ` (did you mean "${near}"?)` : ""}; unknown elements are not allowed (use an extension).`,
      // A name FHIRPath cannot spell (`a b`, `1x`, `code.x`) cannot be pointed at: its parent is.
      IDENTIFIER.test(key) ? this.#at(fhirpathName(key)) : this.#at(),
    );
  }

  /** The binding of element `key` (item `index`) of the node being walked. */
  #binding(slot: Slot, value: unknown, key: string, index: number, owner: string): void {
    const binding = slot.binding;
    if (!binding) return;
    const problems = bindingProblems(slot.type, value, binding);
    if (problems.length === 0) return;
    const path = this.#at(slot.step, index);
    const label = `${owner}.${key}`;
    for (const p of problems) {
      this.#add(
        "code-invalid",
        `${label}${p.at}: ${p.says}`,
        `${path}${p.at}`,
        binding.strength === "required" ? "error" : "warning",
      );
    }
  }

  /** Invariants on the node being walked, or (with `step`) on item `index` under its FHIRPath step `step`. */
  #invariants(list: readonly Invariant[], value: unknown, env: InvariantEnv, step?: string, index = -1): void {
    for (const inv of list) {
      if (!inv.check(value, env))
        this.#add("invariant", `${inv.key}: ${inv.human}`, this.#at(step, index), inv.severity);
    }
  }

  #reference(value: Record<string, unknown>, slot: Slot, key: string, index: number, owner: string): void {
    const problem = referenceProblem(value, slot.targets, this.#references, this.#entryUrl);
    if (problem) this.#add(problem.code, `${owner}.${key}: ${problem.says}`, `${this.#at(slot.step, index)}.reference`);
  }

  #emiratesId(value: Record<string, unknown>, slot: Slot, index: number): void {
    const { emiratesIdCheck, emiratesIdSystem } = this.options;
    if (emiratesIdCheck === "off" || value.system !== emiratesIdSystem || typeof value.value !== "string") return;
    if (isValidEmiratesId(value.value)) return;
    this.#add(
      "value",
      `${JSON.stringify(value.value)} is not a valid Emirates ID (system ${emiratesIdSystem}): expected 784-YYYY-NNNNNNN-C, 784, the birth year, a 7-digit serial and a Luhn check digit over the 14 digits before it.`,
      `${this.#at(slot.step, index)}.value`,
      emiratesIdCheck,
    );
  }
}

function hasAny(value: Record<string, unknown>, keys: readonly string[]): boolean {
  for (const k of keys) if (value[k] !== undefined) return true;
  return false;
}

/** The FHIRPath of item `index` (-1: the single value) under FHIRPath step `step` of `parent`. */
function pathOf(parent: string, step: string, index: number): string {
  return index < 0 ? `${parent}.${step}` : `${parent}.${step}[${index}]`;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Unknown names that get a "did you mean" hint, per message (as many as an answer lists issues). */
const MAX_HINTS = MAX_ISSUES;

const choices = new WeakMap<CompiledType, Map<string, string[]>>();

/** A type's choice elements: name → its JSON keys (`value` → valueQuantity, valueString, …), built once per type. */
function choiceKeys(type: CompiledType): Map<string, string[]> {
  let map = choices.get(type);
  if (!map) {
    map = new Map();
    for (const [k, s] of type.slots) {
      if (!s.element.choice) continue;
      const keys = map.get(s.name) ?? [];
      keys.push(k);
      map.set(s.name, keys);
    }
    choices.set(type, map);
  }
  return map;
}

/** The element name closest to a misspelt one (edit distance ≤ 2), for "did you mean". */
function nearest(name: string, names: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  const lower = name.toLowerCase();
  for (const candidate of names) {
    if (Math.abs(candidate.length - name.length) >= bestDistance) continue;
    const d = distance(lower, candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

function distance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return 3;
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j] as number;
      row[j] = Math.min((row[j] as number) + 1, (row[j - 1] as number) + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = current;
    }
  }
  return row[b.length] as number;
}
