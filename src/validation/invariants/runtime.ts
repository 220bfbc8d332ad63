/**
 * Runtime values of compiled invariants. A collection is a plain array of
 * JSON values; two rare shapes that the fhirpath library models as nodes
 * with extra data get a wrapper so counting stays exact:
 *   - a primitive with no value but an `_element` (or a `null` array slot),
 *   - a primitive with a value and an `_element` (equality then involves
 *     the extension, so value operations defer to the library).
 * Anything the compiled code is not sure to evaluate exactly like the
 * library throws `BAIL`, and the caller re-evaluates with the library.
 */

/** A primitive node that carries `_element` data, or no value at all. */
export class Special {
  constructor(
    /** The value, `null` when absent. */
    readonly value: unknown,
    /** The `_element` object (extension, id), `null` when absent. */
    readonly ext: unknown,
  ) {}
}

/**
 * Thrown where the library certainly raises an evaluation error (so the
 * invariant does not hold). Sound because the library evaluates at least
 * everything the compiled code does: both operands of every operator and
 * every iteration body per item.
 */
export const FAILS: unique symbol = Symbol("evaluation error in the fhirpath library");

/** Thrown to hand an evaluation over to the fhirpath library. */
export const BAIL: unique symbol = Symbol("bail to the fhirpath library");

export type Coll = unknown[];

export interface Env {
  resource: unknown;
  rootResource: unknown;
  /** `[resource]` and `[rootResource]`, made on first use: every evaluation on one resource shares them. */
  resourceFocus?: Coll;
  rootResourceFocus?: Coll;
}

/** The kind of JSON a static type holds, checked while navigating. */
export type Shape = "primitive" | "object" | "resource" | "untyped" | "any";

/** Throws BAIL; typed `never` so it can stand in expressions. */
export function bail(): never {
  throw BAIL;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Special);
}

/** Checks a navigated value against the JSON shape its static type implies. */
function checkShape(v: unknown, shape: Shape, resourceTypes: ReadonlySet<string>): void {
  if (shape === "any") return;
  if (shape === "untyped") {
    // An object with a resourceType would be typed by the library.
    if (isPlainObject(v) && v.resourceType !== undefined) bail();
    return;
  }
  if (shape === "primitive") {
    if (typeof v === "object") bail();
    return;
  }
  if (!isPlainObject(v)) bail();
  const rt = v.resourceType;
  if (shape === "object") {
    // The library retypes any object with a resourceType as that resource.
    if (rt !== undefined) bail();
  } else if (typeof rt !== "string" || !resourceTypes.has(rt)) {
    bail();
  }
}

function pushValue(out: Coll, v: unknown, ext: unknown, shape: Shape, resourceTypes: ReadonlySet<string>): void {
  if (v === null || v === undefined) {
    out.push(new Special(null, ext ?? null));
    return;
  }
  if (Array.isArray(v)) bail();
  checkShape(v, shape, resourceTypes);
  if (ext !== null && ext !== undefined) {
    if (shape !== "primitive" && (shape !== "untyped" || typeof v === "object")) bail();
    out.push(new Special(v, ext));
    return;
  }
  out.push(v);
}

/**
 * Child values of `key` (and `ukey`, the interned `_key`) on every item, like the library's
 * makeChildResNodes: `key` and `_key` are paired by index, `null` slots and
 * value-less `_key` entries are kept as items. `trusted` when the items are
 * known to be plain objects whose resourceType (if any) is a resource type
 * name, which an element name never is: typed navigation checked them.
 */
export function navigate(
  focus: Coll,
  key: string,
  ukey: string,
  shape: Shape,
  resourceTypes: ReadonlySet<string>,
  into?: Coll,
  trusted = false,
): Coll {
  if (into === undefined && focus.length === 1) {
    const one = navigateOne(focus[0], key, ukey, shape, resourceTypes, trusted);
    if (one !== undefined) return one;
  }
  // Allocated on the first child: most lookups find nothing.
  let out = into;
  for (const it of focus) {
    const item = it as Record<string, unknown>;
    if (trusted) {
      // A null element with `_element` data: the library navigates into that data.
      if (item instanceof Special) bail();
    } else {
      // Navigation from primitives (extension of a primitive) is not compiled.
      if (!isPlainObject(item)) bail();
      // The library's legacy rule: an item whose resourceType is the key is itself.
      if (item.resourceType === key) bail();
    }
    const v = item[key];
    const u = item[ukey];
    if (v === undefined && u === undefined) continue;
    if ((v === null || v === undefined) && (u === null || u === undefined)) continue;
    out ??= [];
    if (Array.isArray(v)) {
      const uArr = u as Record<number, unknown> | null | undefined;
      for (let i = 0; i < v.length; i++) pushValue(out, v[i], uArr?.[i], shape, resourceTypes);
      if (Array.isArray(u)) for (let i = v.length; i < u.length; i++) pushValue(out, null, u[i], shape, resourceTypes);
    } else if ((v === null || v === undefined) && Array.isArray(u)) {
      for (const x of u) pushValue(out, null, x, shape, resourceTypes);
    } else {
      if (Array.isArray(u)) bail();
      pushValue(out, v, u, shape, resourceTypes);
    }
  }
  return out ?? EMPTY;
}

/**
 * The commonest step, one item without `_key` data, without a copy: the value's own JSON array (results are never
 * mutated) or a one-item array. Undefined when the general walk must decide (an `_key`, a null item, an item that
 * is not a plain object).
 */
function navigateOne(
  it: unknown,
  key: string,
  ukey: string,
  shape: Shape,
  resourceTypes: ReadonlySet<string>,
  trusted: boolean,
): Coll | undefined {
  if (trusted ? it instanceof Special : !isPlainObject(it) || it.resourceType === key) return undefined;
  const item = it as Record<string, unknown>;
  const u = item[ukey];
  if (u !== undefined && u !== null) return undefined;
  const v = item[key];
  if (v === undefined || v === null) return EMPTY;
  if (!Array.isArray(v)) {
    checkShape(v, shape, resourceTypes);
    return [v];
  }
  for (const x of v) {
    if (x === null || x === undefined) return undefined;
    if (Array.isArray(x)) bail();
    checkShape(x, shape, resourceTypes);
  }
  return v;
}

/** A choice element's JSON keys: `name` + type suffix, in the library's model order. */
export interface ChoiceKeys {
  keys: readonly string[];
  ukeys: readonly string[];
  shapes: readonly Shape[];
  /** Key or `_key` → its position in `keys`. */
  index: ReadonlyMap<string, number>;
}

export function choiceKeys(keys: readonly string[], shapes: readonly Shape[]): ChoiceKeys {
  const ukeys = keys.map((k) => `_${k}`);
  const index = new Map<string, number>();
  keys.forEach((k, i) => {
    index.set(k, i);
    index.set(ukeys[i] as string, i);
  });
  return { keys, ukeys, shapes, index };
}

/**
 * A choice element `name[x]`: the first of its keys (in the library's model
 * order) that is present as `key` or `_key` on the item, as the library does.
 * One pass over the item's keys is much cheaper than probing every absent key.
 */
export function navigateChoice(focus: Coll, choice: ChoiceKeys, resourceTypes: ReadonlySet<string>): Coll {
  const out: Coll = [];
  const { index } = choice;
  for (const item of focus) {
    if (!isPlainObject(item)) bail();
    let best = -1;
    for (const k in item) {
      const i = index.get(k);
      if (i !== undefined && (best < 0 || i < best) && item[k] !== undefined) best = i;
    }
    if (best >= 0) {
      const key = choice.keys[best] as string;
      navigate([item], key, choice.ukeys[best] as string, choice.shapes[best] ?? "any", resourceTypes, out);
    }
  }
  return out;
}

/** A singleton's boolean, `undefined` for empty; anything else defers to the library. */
export function toBool(c: Coll): boolean | undefined {
  if (c.length === 0) return undefined;
  const v = c[0];
  if (c.length > 1 || typeof v !== "boolean") bail();
  return v;
}

/** `[b]`, or `[]` for undefined. Shared constants: results are never mutated. */
export const TRUE: Coll = Object.freeze([true]) as unknown as Coll;
export const FALSE: Coll = Object.freeze([false]) as unknown as Coll;
export const EMPTY: Coll = Object.freeze([]) as unknown as Coll;

export function fromBool(b: boolean | undefined): Coll {
  return b === undefined ? EMPTY : b ? TRUE : FALSE;
}

/** The plain value of an item for equality, where the library also compares `_element` data. */
export function plain(v: unknown): unknown {
  if (v instanceof Special) bail();
  return v;
}

/** The value of an item for string and ordering operations, which ignore `_element` data. */
export function primitiveValue(v: unknown): unknown {
  if (v instanceof Special) return v.value === null ? bail() : v.value;
  return v;
}

/** A singleton string, `undefined` for empty; non-strings defer to the library. */
export function singletonString(c: Coll): string | undefined {
  if (c.length === 0) return undefined;
  if (c.length > 1) bail();
  const v = primitiveValue(c[0]);
  if (typeof v !== "string") bail();
  return v;
}

/**
 * Structural JSON equality as the library's deepEqual does it for plain
 * data: the same keys, equal values (one pass per side, no sorting).
 */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  const ta = typeof a;
  const tb = typeof b;
  if (ta === "number" && tb === "number") return numbersEqual(a as number, b as number);
  if (a === null || b === null || ta !== "object" || tb !== "object") {
    // The library compares a string to an object by its index keys.
    if ((ta === "string" && tb === "object") || (tb === "string" && ta === "object")) bail();
    return false;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let n = 0;
  for (const k in x) {
    if (!Object.hasOwn(x, k)) continue;
    n++;
    if (!Object.hasOwn(y, k) || !jsonEqual(x[k], y[k])) return false;
  }
  for (const k in y) if (Object.hasOwn(y, k)) n--;
  return n === 0;
}

function numbersEqual(a: number, b: number): boolean {
  if (a === b) return true;
  // The library compares decimals at their precision; only clear differences are decided here.
  if (Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(a), Math.abs(b))) bail();
  return false;
}

/** FHIRPath `=` on two items (no dates or quantities: those are refused statically). */
export function itemEqual(a: unknown, b: unknown): boolean {
  const x = plain(a);
  const y = plain(b);
  const tx = typeof x;
  const ty = typeof y;
  if (tx === "object" || ty === "object") {
    if (x === null || y === null) bail();
    if (tx === "object" && ty === "object") return jsonEqual(x, y);
    const o = (tx === "object" ? x : y) as object;
    if (Array.isArray(o) || Object.hasOwn(o, "0")) bail();
    return false;
  }
  if (tx === "number" && ty === "number") return numbersEqual(x as number, y as number);
  return x === y;
}

/** FHIRPath `=` on collections: empty when either is empty, else ordered pairwise. */
export function collEqual(a: Coll, b: Coll): boolean | undefined {
  if (a.length === 0 || b.length === 0) return undefined;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!itemEqual(a[i], b[i])) return false;
  return true;
}

/** Whether `c` holds an item equal to `v`. */
export function collHas(c: Coll, v: unknown): boolean {
  for (const x of c) if (itemEqual(x, v)) return true;
  return false;
}

/** Items without repeats (by FHIRPath equality), first occurrence kept. */
export function distinct(c: Coll): Coll {
  if (c.length < 2) return c;
  // Plain strings are equal exactly when identical: a Set avoids n² comparisons (a few are compared in place).
  if (allStrings(c)) {
    if (c.length <= 8 && !repeats(c)) return c;
    const set = new Set(c);
    return set.size === c.length ? c : [...set];
  }
  const out: Coll = [];
  for (const x of c) if (!collHas(out, x)) out.push(x);
  return out;
}

function allStrings(c: Coll): boolean {
  for (const x of c) if (typeof x !== "string") return false;
  return true;
}

function repeats(c: Coll): boolean {
  for (let i = 1; i < c.length; i++) for (let j = 0; j < i; j++) if (c[i] === c[j]) return true;
  return false;
}
