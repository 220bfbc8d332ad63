import { isObject, parseJson } from "../envelope/json.js";

/** One answer to a call: then (as recorded) or now (as replayed). */
export interface ObservedAnswer {
  /** HTTP status, or null when no answer came (connection reset, timeout, refused). */
  status: number | null;
  /** The body as the journal shows it: parsed JSON, the text, or null when empty. */
  body: unknown;
  /** Why there was no answer. */
  error?: string;
}

/** A difference between the recorded and the replayed answer; `undefined` means absent on that side. */
export interface Difference {
  /** FHIRPath-like location, e.g. Bundle.entry[1].resource.code.coding[0].code, or `status`. */
  path: string;
  recorded: unknown;
  replayed: unknown;
}

export interface Comparison {
  same: boolean;
  /** The first differences found (at most the limit asked for). */
  differences: Difference[];
  /** How many differences there are in all. */
  total: number;
}

/** What a volatile value is replaced by on both sides, so only its presence is compared. */
const VOLATILE = "(volatile)";

/** A date-time with a time part: an instant stamped at answer time, never compared by value. */
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

const TYPE_AND_ID = /([A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[^/]+)?$/;

/** A `{"content": "<bundle>"}` response envelope (--response-envelope) is compared by the Bundle inside. */
function unwrapEnvelope(body: unknown): unknown {
  if (isObject(body) && typeof body.content === "string" && Object.keys(body).length === 1) {
    const inner = parseJson(body.content);
    if (inner.ok) return inner.value;
  }
  return body;
}

/** References to entries of a Bundle (by fullUrl, or Type/id) → the entry's position. */
function entryTargets(root: Record<string, unknown>): (reference: string) => string | undefined {
  const targets = new Map<string, string>();
  if (root.resourceType === "Bundle" && Array.isArray(root.entry)) {
    root.entry.forEach((entry: unknown, i: number) => {
      if (!isObject(entry)) return;
      const at = `Bundle.entry[${i}]`;
      if (typeof entry.fullUrl === "string") targets.set(entry.fullUrl, at);
      const resource = entry.resource;
      if (isObject(resource) && typeof resource.resourceType === "string" && typeof resource.id === "string") {
        targets.set(`${resource.resourceType}/${resource.id}`, at);
      }
    });
  }
  return (reference) => {
    const exact = targets.get(reference);
    if (exact) return exact;
    const m = TYPE_AND_ID.exec(reference);
    return m ? targets.get(`${m[1]}/${m[2]}`) : undefined;
  };
}

/**
 * The answer with its volatile parts neutralised (see `compareAnswers`).
 * Copies; never changes `body`.
 */
function normalise(body: unknown): unknown {
  const value = unwrapEnvelope(body);
  if (!isObject(value)) return value;
  const root = value;
  const resolve = entryTargets(root);
  const isBundle = root.resourceType === "Bundle";
  const entryType = (i: unknown) => {
    const entry = Array.isArray(root.entry) ? root.entry[i as number] : undefined;
    return isObject(entry) && isObject(entry.resource) ? entry.resource.resourceType : undefined;
  };

  const volatile = (trail: ReadonlyArray<string | number>, key: string): boolean => {
    const depth = trail.length;
    if (key === "lastUpdated" && trail[depth - 1] === "meta") return true;
    if (depth === 0) return key === "id" || (isBundle && key === "timestamp");
    if (!isBundle || trail[0] !== "entry") return false;
    // Bundle.entry[i].fullUrl, Bundle.entry[i].resource.id, MessageHeader.source.endpoint
    if (depth === 2 && key === "fullUrl") return true;
    if (depth === 3 && trail[2] === "resource" && key === "id") return true;
    return (
      depth === 4 &&
      trail[2] === "resource" &&
      trail[3] === "source" &&
      key === "endpoint" &&
      entryType(trail[1]) === "MessageHeader"
    );
  };

  const walk = (node: unknown, trail: Array<string | number>): unknown => {
    if (Array.isArray(node)) return node.map((item, i) => walk(item, [...trail, i]));
    if (!isObject(node)) return node;
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(node)) {
      if (volatile(trail, key)) out[key] = VOLATILE;
      else if (key === "reference" && typeof child === "string") out[key] = resolve(child) ?? child;
      else out[key] = walk(child, [...trail, key]);
    }
    return out;
  };
  return walk(root, []);
}

function rootName(...bodies: unknown[]): string {
  for (const body of bodies) {
    const value = unwrapEnvelope(body);
    if (isObject(value) && typeof value.resourceType === "string" && /^[A-Za-z]+$/.test(value.resourceType)) {
      return value.resourceType;
    }
  }
  return "body";
}

function walkDifferences(a: unknown, b: unknown, path: string, found: (d: Difference) => void): void {
  if (a === b) return;
  if (typeof a === "string" && typeof b === "string" && INSTANT.test(a) && INSTANT.test(b)) return;
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) walkDifferences(a[i], b[i], `${path}[${i}]`, found);
    return;
  }
  if (isObject(a) && isObject(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const key of keys) walkDifferences(a[key], b[key], `${path}.${key}`, found);
    return;
  }
  found({ path, recorded: a, replayed: b });
}

/**
 * Compares a recorded answer with a replayed one, field by field, ignoring
 * what legitimately changes from one answer to the next:
 *
 * - ids the server assigns: the root resource's `id` (the response Bundle's,
 *   a bare OperationOutcome's) and every `Bundle.entry[i].resource.id`
 *   (MessageHeader ids, ids of stored records);
 * - `Bundle.entry[i].fullUrl`, and references are compared by the entry they
 *   point at (`Bundle.entry[2]`) rather than by URL or id;
 * - `Bundle.timestamp`, any `meta.lastUpdated`, and any other date-time with
 *   a time part (an instant stamped when the answer was built); dates
 *   without a time (birthDate, onset dates) are compared;
 * - `MessageHeader.source.endpoint` (the replay target's own URL);
 * - a `{"content": "..."}` response envelope: the Bundle inside is compared.
 *
 * `meta.versionId` is compared: replaying calls in order on a fresh target
 * gives the same versions. Response headers are not compared.
 *
 * @example
 *   compareAnswers({ status: 200, body: recorded }, { status: 200, body: replayed }).differences
 *   // → [{ path: "Bundle.entry[1].resource.code.coding[0].code", recorded: "227493005", replayed: "91936005" }]
 */
export function compareAnswers(then: ObservedAnswer, now: ObservedAnswer, limit = 50): Comparison {
  const differences: Difference[] = [];
  let total = 0;
  const found = (d: Difference) => {
    total++;
    if (differences.length < limit) differences.push(d);
  };
  if (then.status === null || now.status === null) {
    if (then.status !== now.status) {
      found({
        path: "answer",
        recorded: then.status === null ? `no answer (${then.error ?? "none recorded"})` : `HTTP ${then.status}`,
        replayed: now.status === null ? `no answer (${now.error ?? "none"})` : `HTTP ${now.status}`,
      });
    }
    return { same: total === 0, differences, total };
  }
  if (then.status !== now.status) found({ path: "status", recorded: then.status, replayed: now.status });
  walkDifferences(normalise(then.body), normalise(now.body), rootName(then.body, now.body), found);
  return { same: total === 0, differences, total };
}

/** A value as a report shows it: JSON, cut at `max` characters; `(absent)` for a missing one. */
export function shownValue(value: unknown, max = 120): string {
  if (value === undefined) return "(absent)";
  const text = JSON.stringify(value) ?? String(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
