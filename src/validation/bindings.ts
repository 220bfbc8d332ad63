import { isObject } from "../envelope/json.js";
import type { Binding } from "./r4/definitions.js";
import { R4 } from "./r4/definitions.js";

/** One binding problem: where under the bound node (a suffix of its path) and what is wrong. */
export interface BindingProblem {
  /** Path below the bound node, e.g. `.coding[0].code`; "" for the node itself. */
  at: string;
  says: string;
}

/** No problem: one shared empty list, as most bound values are fine. */
const NONE: readonly never[] = Object.freeze([]);

/** A value set's codes by system, or undefined when R4's definitions cannot expand it. */
interface Expansion {
  bySystem: Map<string, Set<string>>;
  /** Every code, whatever its system (for `code` elements, which carry no system). */
  all: Set<string>;
  /** The allowed codes in words, for diagnostics. */
  listed: string;
}

const expansions = new Map<string, Expansion | null>();

function expansion(url: string): Expansion | undefined {
  let found = expansions.get(url);
  if (found === undefined) {
    const def = R4.valueSets[url];
    if (!def || "unexpandable" in def) found = null;
    else {
      const bySystem = new Map(Object.entries(def.systems).map(([s, codes]) => [s, new Set(codes)]));
      const all = new Set([...bySystem.values()].flatMap((s) => [...s]));
      const codes = [...all];
      const listed =
        codes.length <= 30 ? codes.join(", ") : `${codes.slice(0, 30).join(", ")} … (${codes.length} codes)`;
      found = { bySystem, all, listed };
    }
    expansions.set(url, found);
  }
  return found ?? undefined;
}

const codeSystems = new Map<string, Set<string>>();
/** The codes of a complete R4 code system, when the definitions carry it. */
function codeSystem(url: string): Set<string> | undefined {
  let found = codeSystems.get(url);
  if (!found) {
    const def = R4.codeSystems[url];
    if (!def) return undefined;
    found = new Set(def.codes);
    codeSystems.set(url, found);
  }
  return found;
}

const vsName = (url: string) => url.replace("http://hl7.org/fhir/ValueSet/", "");

/**
 * Checks a value against its element's binding: a `code` (or string/uri)
 * must be one of the value set's codes; a Coding must be; a CodeableConcept
 * needs at least one coding from the value set, and a coding of one of the
 * value set's systems must name one of its codes. Value sets that draw on
 * code systems R4 does not ship (SNOMED CT, LOINC, UCUM, ISO …) are not checked.
 *
 * @example bindingProblems("code", "severe", { strength: "required", valueSet: ".../allergy-intolerance-criticality" })
 */
export function bindingProblems(type: string, value: unknown, binding: Binding): readonly BindingProblem[] {
  const vs = expansion(binding.valueSet);
  if (!vs) return NONE;
  if (type === "Coding") return isObject(value) ? codingProblems(value, vs, binding, -1, true) : NONE;
  if (type === "CodeableConcept") {
    if (!isObject(value)) return NONE;
    const codings: readonly unknown[] = Array.isArray(value.coding) ? value.coding : NONE;
    let problems: BindingProblem[] | undefined;
    let fromSet = false;
    for (let i = 0; i < codings.length; i++) {
      const coding = codings[i];
      if (!isObject(coding)) continue;
      if (typeof coding.system === "string" && vs.bySystem.has(coding.system)) {
        const own = codingProblems(coding, vs, binding, i, false);
        if (own.length === 0) fromSet = true;
        else {
          problems ??= [];
          problems.push(...own);
        }
      }
    }
    if (problems !== undefined) return problems;
    if (!fromSet) {
      return [
        {
          at: "",
          says: `none of its codings is from ${where(binding)}; add a coding of ${[...vs.bySystem.keys()].join(" or ")} with one of: ${vs.listed}.`,
        },
      ];
    }
    return NONE;
  }
  // code, string, uri: the value itself.
  if (typeof value !== "string" || vs.all.has(value)) return NONE;
  return [{ at: "", says: `${JSON.stringify(value)} is not in ${where(binding)}; allowed: ${vs.listed}.` }];
}

/** In words, for diagnostics (built only when something is wrong: most codes are fine). */
const where = (binding: Binding) => `the ${binding.strength} value set ${vsName(binding.valueSet)}`;

/** A Coding's problem with the value set; `index` is its place in a CodeableConcept's `coding` (-1: a bare Coding). */
function codingProblems(
  coding: Record<string, unknown>,
  vs: Expansion,
  binding: Binding,
  index: number,
  needSystem: boolean,
): readonly BindingProblem[] {
  const { system, code } = coding;
  if (typeof code !== "string") return NONE;
  const codes = typeof system === "string" ? vs.bySystem.get(system) : undefined;
  if (codes?.has(code)) return NONE;
  if (!codes && !needSystem) return NONE;
  const systems = [...vs.bySystem.keys()].join(" or ");
  return [
    {
      at: index < 0 ? ".code" : `.coding[${index}].code`,
      says: codes
        ? `${JSON.stringify(code)} is not in ${where(binding)}; allowed codes of ${system}: ${[...codes].join(", ")}.`
        : `the coding (system ${JSON.stringify(system ?? null)}) is not from ${where(binding)}; use ${systems} with one of: ${vs.listed}.`,
    },
  ];
}

/**
 * A coding of a complete R4 code system (HL7's own, e.g. condition-clinical)
 * must name one of its codes, whatever binds the element.
 */
export function unknownCodeOf(coding: Record<string, unknown>): string | undefined {
  const { system, code } = coding;
  if (typeof system !== "string" || typeof code !== "string") return undefined;
  const codes = codeSystem(system);
  if (!codes || codes.has(code)) return undefined;
  return `${JSON.stringify(code)} is not a code of ${system}.`;
}
