import { choiceKey, R4 } from "../r4/definitions.js";
import type { Env } from "./runtime.js";
import { RESOURCE_TYPES } from "./static-types.js";

/**
 * An invariant's verdict computed in plain TypeScript over the JSON: `true` (it holds), `false` (it fails), or
 * `undefined` for a shape this code leaves to the compiled FHIRPath (a primitive extension such as `_fullUrl`, a
 * value of the wrong JSON type, a local reference, a document Bundle). It must agree with the compiled check (and
 * so with the fhirpath library) wherever it answers: test/validation/native-invariants.test.ts compares them.
 */
export type NativeCheck = (node: unknown, env: Env) => boolean | undefined;

/** "Not decided here": a shape the compiled FHIRPath evaluates. */
const DEFER = Symbol("defer");
type Defer = typeof DEFER;

type Obj = Record<string, unknown>;

function isObject(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * A primitive string element: its value, undefined when absent, DEFER when it has a `_name` part (`extra`, spelled
 * out by the caller: no string built per call) or another JSON type.
 */
function str(o: Obj, key: string, extra: string): string | undefined | Defer {
  if (o[extra] !== undefined) return DEFER;
  const v = o[key];
  return v === undefined || typeof v === "string" ? v : DEFER;
}

/** A single complex element: the object, undefined when absent, DEFER for any other JSON value. */
function obj(o: Obj, key: string): Obj | undefined | Defer {
  const v = o[key];
  return v === undefined || isObject(v) ? v : DEFER;
}

/** A Bundle's entries when every one is an object ([] when absent), else DEFER. */
function entries(bundle: Obj): readonly Obj[] | Defer {
  const list = bundle.entry;
  if (list === undefined) return [];
  if (!Array.isArray(list)) return DEFER;
  for (const e of list) if (!isObject(e)) return DEFER;
  return list as Obj[];
}

/** The `type` of the Bundle the invariant is checked on, or DEFER (not a Bundle, no plain type). */
function bundleType(node: unknown): string | Defer {
  if (!isObject(node) || node.resourceType !== "Bundle") return DEFER;
  const type = str(node, "type", "_type");
  return type === undefined ? DEFER : type;
}

/** An entry (a backbone element: an object without resourceType, as the compiled check's guard wants), or DEFER. */
function entryOf(node: unknown): Obj | Defer {
  return isObject(node) && node.resourceType === undefined ? node : DEFER;
}

/** A check written with DEFER, as a NativeCheck. */
function decided(f: (node: unknown, env: Env) => boolean | Defer): NativeCheck {
  return (node, env) => {
    const v = f(node, env);
    return v === DEFER ? undefined : v;
  };
}

/**
 * bdl-3 and bdl-4: `entry.all(<element>.exists() = (%resource.type = 'a' or …))`, %resource being the Bundle
 * itself (otherwise left to the compiled check).
 */
function everyEntryHas(element: string, types: ReadonlySet<string>): NativeCheck {
  return decided((node, env) => {
    const type = bundleType(node);
    if (type === DEFER || env.resource !== node) return DEFER;
    const list = entries(node as Obj);
    if (list === DEFER) return DEFER;
    const wanted = types.has(type);
    // Every entry read before a verdict: an odd entry after a failing one may make the whole expression an error.
    let holds = true;
    for (const e of list) {
      const v = obj(e, element);
      if (v === DEFER) return DEFER;
      if ((v !== undefined) !== wanted) holds = false;
    }
    return holds;
  });
}

/** bdl-7: `(type = 'history') or entry.where(fullUrl.exists()).select(fullUrl&resource.meta.versionId).isDistinct()`. */
const bdl7 = decided((node) => {
  const type = bundleType(node);
  if (type === DEFER) return DEFER;
  if (type === "history") return true;
  const list = entries(node as Obj);
  if (list === DEFER) return DEFER;
  // `&` joins the two strings, an empty side read as '': fullUrl "a" + version "bc" equals "ab" + "c", as in FHIRPath.
  // Every entry read before a verdict: an odd entry after a duplicate may make the whole expression an error.
  const seen = new Set<string>();
  let distinct = true;
  for (const e of list) {
    const url = str(e, "fullUrl", "_fullUrl");
    if (url === DEFER) return DEFER;
    if (url === undefined) continue;
    const resource = obj(e, "resource");
    if (resource === DEFER) return DEFER;
    let version: string | undefined;
    if (resource !== undefined) {
      const rt = resource.resourceType;
      if (typeof rt !== "string" || !RESOURCE_TYPES.has(rt)) return DEFER;
      const meta = obj(resource, "meta");
      if (meta === DEFER) return DEFER;
      const v = meta === undefined ? undefined : str(meta, "versionId", "_versionId");
      if (v === DEFER) return DEFER;
      version = v;
    }
    const key = version === undefined ? url : url + version;
    if (seen.has(key)) distinct = false;
    seen.add(key);
  }
  return distinct;
});

/** bdl-12 (`type = 'message' implies entry.first().resource.is(MessageHeader)`), bdl-11 likewise for documents. */
function firstResourceIs(bundleKind: string, resourceType: string): NativeCheck {
  return decided((node) => {
    const type = bundleType(node);
    if (type === DEFER) return DEFER;
    if (type !== bundleKind) return true;
    const list = entries(node as Obj);
    if (list === DEFER) return DEFER;
    const first = list[0];
    // No first entry or no resource: `true implies {}` is empty, which does not fail.
    if (first === undefined) return true;
    const r = obj(first, "resource");
    if (r === DEFER) return DEFER;
    if (r === undefined) return true;
    const rt = r.resourceType;
    if (rt === resourceType) return true;
    return typeof rt === "string" && RESOURCE_TYPES.has(rt) ? false : DEFER;
  });
}

const AIT_VERIFICATION = "http://terminology.hl7.org/CodeSystem/allergyintolerance-verification";

/**
 * For ait-1 and ait-2: whether the AllergyIntolerance is entered in error
 * (`verificationStatus.coding.where(system = '…' and code = 'entered-in-error')` not empty) and has a
 * clinicalStatus; DEFER for shapes left to the compiled check.
 */
function allergyStatus(node: unknown): { inError: boolean; clinical: boolean } | Defer {
  if (!isObject(node) || node.resourceType !== "AllergyIntolerance") return DEFER;
  const clinical = obj(node, "clinicalStatus");
  const verification = obj(node, "verificationStatus");
  if (clinical === DEFER || verification === DEFER) return DEFER;
  let inError = false;
  const codings = verification?.coding;
  if (codings !== undefined) {
    if (!Array.isArray(codings)) return DEFER;
    for (const c of codings) {
      if (!isObject(c)) return DEFER;
      const system = str(c, "system", "_system");
      const code = str(c, "code", "_code");
      if (system === DEFER || code === DEFER) return DEFER;
      if (system === AIT_VERIFICATION && code === "entered-in-error") inError = true;
    }
  }
  return { inError, clinical: clinical !== undefined };
}

/** The JSON keys of Extension.value[x] (valueString, valueCoding, …). */
const EXTENSION_VALUES = new Set(
  (R4.types.Extension?.elements.value?.types ?? []).map((t) => choiceKey("value", t.code)),
);

/**
 * ext-1, `extension.exists() != value.exists()`: decided for an Extension whose extensions are a non-empty list of
 * objects (or absent) and whose value is one plain value (not null, "", a list, nor a `_value…` part).
 */
const ext1 = decided((node) => {
  if (!isObject(node) || node.resourceType !== undefined) return DEFER;
  const ext = node.extension;
  let hasExtension = false;
  if (ext !== undefined) {
    if (!Array.isArray(ext) || ext.length === 0) return DEFER;
    for (const e of ext) if (!isObject(e)) return DEFER;
    hasExtension = true;
  }
  let hasValue = false;
  for (const k in node) {
    if (k.startsWith("_value")) return DEFER;
    if (!EXTENSION_VALUES.has(k)) continue;
    const v = node[k];
    if (v === null || v === "" || Array.isArray(v)) return DEFER;
    if (v !== undefined) hasValue = true;
  }
  return hasExtension !== hasValue;
});

/** bdl-9 and bdl-10 (`type = 'document' implies …`): decided here only for a Bundle that is no document. */
const notADocument: NativeCheck = (node) => {
  const type = bundleType(node);
  return type === DEFER || type === "document" ? undefined : true;
};

const CHECKS: Record<string, NativeCheck> = {
  // total.empty() or (type = 'searchset') or (type = 'history')
  "bdl-1@Bundle": (node) => {
    const type = bundleType(node);
    if (type === DEFER) return undefined;
    if (type === "searchset" || type === "history") return true;
    const b = node as Obj;
    return b.total === undefined && b._total === undefined ? true : undefined;
  },
  // entry.search.empty() or (type = 'searchset')
  "bdl-2@Bundle": (node) => {
    const type = bundleType(node);
    if (type === DEFER) return undefined;
    if (type === "searchset") return true;
    const list = entries(node as Obj);
    if (list === DEFER) return undefined;
    for (const e of list) if (e.search !== undefined) return undefined;
    return true;
  },
  "bdl-3@Bundle": everyEntryHas("request", new Set(["batch", "transaction", "history"])),
  "bdl-4@Bundle": everyEntryHas("response", new Set(["batch-response", "transaction-response", "history"])),
  "bdl-7@Bundle": bdl7,
  "bdl-9@Bundle": notADocument,
  "bdl-10@Bundle": notADocument,
  "bdl-11@Bundle": firstResourceIs("document", "Composition"),
  "bdl-12@Bundle": firstResourceIs("message", "MessageHeader"),
  // resource.exists() or request.exists() or response.exists()
  "bdl-5@Bundle.entry": (node) => {
    const e = entryOf(node);
    if (e === DEFER) return undefined;
    const resource = obj(e, "resource");
    const request = obj(e, "request");
    const response = obj(e, "response");
    if (resource === DEFER || request === DEFER || response === DEFER) return undefined;
    return resource !== undefined || request !== undefined || response !== undefined;
  },
  // fullUrl.exists() implies fullUrl.contains('/_history/').not()
  "bdl-8@Bundle.entry": (node) => {
    const e = entryOf(node);
    if (e === DEFER) return undefined;
    const url = str(e, "fullUrl", "_fullUrl");
    if (url === DEFER) return undefined;
    return url === undefined || !url.includes("/_history/");
  },
  // verificationStatus.coding.where(… 'entered-in-error').exists() or clinicalStatus.exists()
  "ait-1@AllergyIntolerance": decided((node) => {
    const a = allergyStatus(node);
    return a === DEFER ? DEFER : a.inError || a.clinical;
  }),
  // verificationStatus.coding.where(… 'entered-in-error').empty() or clinicalStatus.empty()
  "ait-2@AllergyIntolerance": decided((node) => {
    const a = allergyStatus(node);
    return a === DEFER ? DEFER : !a.inError || !a.clinical;
  }),
  "ext-1@Extension": ext1,
  // reference.startsWith('#').not() or (… in %rootResource.contained.id): decided here when not a local reference.
  "ref-1@Reference": (node) => {
    if (!isObject(node) || node.resourceType !== undefined) return undefined;
    const ref = str(node, "reference", "_reference");
    if (ref === DEFER) return undefined;
    // No reference: `{}.not() or ({} in …)` is empty, which does not fail.
    return ref === undefined || !ref.startsWith("#") ? true : undefined;
  },
};

/** The invariants checked natively, as `key@context`. */
export const NATIVE_INVARIANTS: readonly string[] = Object.keys(CHECKS);

/**
 * The native check of invariant `key` on `contextType`, if there is one: the hottest invariants of this exchange's
 * messages (the Bundle's, evaluated over every entry, Reference's ref-1, AllergyIntolerance's, Extension's ext-1), which cost more as compiled FHIRPath
 * closures than the rest of the validation.
 * @example nativeInvariant("bdl-8", "Bundle.entry")?.({ fullUrl: "urn:uuid:1" }, env) // true
 */
export function nativeInvariant(key: string, contextType: string): NativeCheck | undefined {
  return CHECKS[`${key}@${contextType}`];
}
