import { choiceKey, R4 } from "../../../src/validation/r4/definitions.js";

/**
 * Random R4 instances and mutations, driven by a seed (fast-check supplies
 * the seeds so failures print a reproducible one). Values come from pools
 * biased towards what invariants test: every string literal of every
 * expression, dates at each precision, `#` references to contained ids.
 */

export type Rnd = () => number;

/** Small deterministic PRNG (mulberry32). */
export function rng(seed: number): Rnd {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pick<T>(r: Rnd, xs: readonly T[]): T {
  return xs[Math.floor(r() * xs.length)] as T;
}

/** The string literals of an expression. */
export function literalsOf(expression: string): string[] {
  return [...expression.matchAll(/'((?:[^'\\]|\\.)*)'/g)].map((m) => m[1] ?? "");
}

const LITERALS = [
  ...new Set(
    Object.values(R4.constraints).flatMap((c) =>
      [...c.expression.matchAll(/'((?:[^'\\]|\\.)*)'/g)].map((m) => m[1] ?? ""),
    ),
  ),
];

const IDS = ["a", "p1", "org", "x"];
const STRINGS = [
  "",
  "a",
  "#a",
  "#p1",
  "#",
  "#zz",
  "Patient/1",
  "http://x/Patient/1/_history/2",
  "urn:uuid:1",
  "1.5",
  "A_b",
  "ab c",
  ...IDS,
  ...LITERALS,
];
const DATES = [
  "2020",
  "2021",
  "2020-01",
  "2020-02",
  "2020-01-01",
  "2020-01-02",
  "2020-01-01T10:00:00Z",
  "2020-01-01T10:00:00.500Z",
  "2020-01-01T09:00:00Z",
  "2020-01-01T10:00:00+01:00",
  "2020-01-01T10:00:00",
  "2020-01-01T10:00Z",
  "2019-12-31T23:00:00-02:00",
  "2020-13-01",
  "2020-02-30",
  "2021-02-29T10:00:00Z",
  "2024-02-29",
  "not a date",
];
const NUMBERS = [-1, 0, 0.5, 1, 1.5, 2, 100, 101];

function primitive(code: string, r: Rnd, literals: readonly string[]): unknown {
  // Strings the invariant itself tests for are the interesting ones.
  if (
    literals.length > 0 &&
    r() < 0.5 &&
    !["boolean", "integer", "positiveInt", "unsignedInt", "decimal"].includes(code)
  ) {
    return pick(r, literals);
  }
  switch (code) {
    case "boolean":
      return r() < 0.5;
    case "integer":
    case "positiveInt":
    case "unsignedInt":
      return pick(r, [-1, 0, 1, 2, 3]);
    case "decimal":
      return pick(r, NUMBERS);
    case "date":
    case "dateTime":
    case "instant":
      return pick(r, DATES);
    case "time":
      return pick(r, ["10:00:00", "11:30:00"]);
    case "id":
      return pick(r, IDS);
    case "uri":
      return pick(r, [...STRINGS, "http://unitsofmeasure.org", "urn:iso:std:iso:4217"]);
    default:
      return pick(r, STRINGS);
  }
}

const RESOURCES = ["Observation", "Patient", "Organization", "Practitioner", "Bundle", "Composition", "MessageHeader"];

function isQuantity(code: string): boolean {
  for (let t: string | undefined = code; t !== undefined; t = R4.types[t]?.base) if (t === "Quantity") return true;
  return false;
}

/** Quantities mostly in UCUM with a few shared units, so orderings are exercised. */
function quantity(r: Rnd): Record<string, unknown> {
  const q: Record<string, unknown> = {};
  if (r() < 0.9) q.value = pick(r, NUMBERS);
  if (r() < 0.8) q.system = r() < 0.8 ? "http://unitsofmeasure.org" : "http://x";
  if (r() < 0.85) q.code = pick(r, ["mg", "mg", "g", "a", "%", "1", "h"]);
  if (r() < 0.1) q.comparator = "<";
  if (r() < 0.1) q.unit = "u";
  return q;
}

/**
 * A random value of type `code`; `focus` names elements to favour and
 * `literals` are string values to favour.
 */
export function generate(
  code: string,
  r: Rnd,
  depth: number,
  focus: ReadonlySet<string>,
  literals: readonly string[] = [],
): unknown {
  let type = code;
  if (code === "Resource" || code === "DomainResource") type = pick(r, RESOURCES);
  const def = R4.types[type];
  if (!def) return {};
  if (def.kind === "primitive-type") return primitive(type, r, literals);
  if (isQuantity(type) && r() < 0.8) return quantity(r);
  const out: Record<string, unknown> = {};
  if (def.kind === "resource") out.resourceType = type;
  const entries = Object.entries(def.elements);
  for (const [name, el] of entries) {
    const favoured = focus.has(name);
    const p = favoured ? 0.55 : depth === 0 ? 0.15 : 0.06;
    if (r() >= p || depth > 4) continue;
    if (name === "text" && def.kind === "resource") {
      out.text = { status: "generated", div: '<div xmlns="http://www.w3.org/1999/xhtml">x</div>' };
      continue;
    }
    const refs = el.choice ? el.types.filter(() => r() < 0.25) : el.types.slice(0, 1);
    if (el.choice && refs.length === 0 && el.types[0]) refs.push(pick(r, el.types));
    for (const ref of refs) {
      const key = el.choice ? choiceKey(name, ref.code) : name;
      const one = () => generate(ref.code, r, depth + 1, focus, literals);
      const isPrimitive = R4.types[ref.code]?.kind === "primitive-type";
      if (el.max !== 1) {
        const n = 1 + Math.floor(r() * 3);
        const items = Array.from({ length: n }, one);
        // Repeats matter to isDistinct() and union: copy an item now and then.
        if (n > 1 && r() < 0.3) items[n - 1] = structuredClone(items[0]);
        out[key] = items;
      } else {
        out[key] = one();
      }
      if (isPrimitive && r() < 0.08) {
        out[`_${key}`] = Array.isArray(out[key])
          ? (out[key] as unknown[]).map(() => (r() < 0.5 ? null : { id: "e" }))
          : { extension: [{ url: "http://x", valueString: "y" }] };
        if (r() < 0.3) delete out[key];
      }
    }
  }
  return out;
}

/** A shallow container resource with contained ids for `#` references. */
export function generateRoot(r: Rnd, type: string | undefined): Record<string, unknown> {
  const root = (type ? generate(type, r, 3, new Set(["type", "code", "kind", "status"])) : {}) as Record<
    string,
    unknown
  >;
  root.resourceType = type ?? pick(r, ["Patient", "Observation"]);
  if (r() < 0.7 && root.resourceType !== "Bundle") {
    root.contained = IDS.filter(() => r() < 0.5).map((id) => ({ resourceType: "Organization", id }));
  }
  return root;
}

function paths(v: unknown, at: (string | number)[], out: (string | number)[][]): void {
  if (typeof v !== "object" || v === null) return;
  for (const [k, x] of Object.entries(v)) {
    const p = [...at, Array.isArray(v) ? Number(k) : k];
    out.push(p);
    paths(x, p, out);
  }
}

/** A copy of `node` with a few random edits: drops, swaps, nulls, precisions, contained, `#` refs. */
export function mutate(node: unknown, r: Rnd): unknown {
  const copy = structuredClone(node) as Record<string, unknown>;
  const n = 1 + Math.floor(r() * 3);
  for (let i = 0; i < n; i++) {
    const all: (string | number)[][] = [];
    paths(copy, [], all);
    if (all.length === 0) break;
    const path = pick(r, all);
    let parent: Record<string | number, unknown> = copy;
    for (const k of path.slice(0, -1)) parent = parent[k] as Record<string | number, unknown>;
    const last = path[path.length - 1] as string | number;
    const old = parent[last];
    const op = Math.floor(r() * 9);
    if (op === 0 || op === 1) {
      if (Array.isArray(parent)) parent.splice(last as number, 1);
      else delete parent[last];
    } else if (op === 2 && typeof old === "string") {
      parent[last] = pick(r, /^\d{4}/.test(old) ? DATES : STRINGS);
    } else if (op === 3) {
      parent[last] = typeof old === "number" ? pick(r, NUMBERS) : typeof old === "boolean" ? !old : pick(r, STRINGS);
    } else if (op === 4 && Array.isArray(old)) {
      old.push(structuredClone(old[0] ?? null));
    } else if (op === 5 && !Array.isArray(parent) && typeof last === "string" && !last.startsWith("_")) {
      parent[`_${last}`] = { extension: [{ url: "http://x", valueCode: "unknown" }] };
    } else if (op === 6) {
      copy.contained = [
        { resourceType: "Organization", id: pick(r, IDS), meta: r() < 0.3 ? { versionId: "1" } : undefined },
      ];
    } else if (op === 7 && typeof old === "object" && old !== null && !Array.isArray(old)) {
      (old as Record<string, unknown>).reference = pick(r, ["#a", "#p1", "#", "Patient/1"]);
    } else if (op === 8) {
      parent[last] = null;
      // Now and then keep the old value as the `_element` data the library reads.
      if (!Array.isArray(parent) && typeof last === "string" && r() < 0.3) parent[`_${last}`] = old;
    }
  }
  return JSON.parse(JSON.stringify(copy));
}
