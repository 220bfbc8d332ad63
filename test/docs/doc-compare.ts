// Comparing the output a page shows with the output its command gave. Only *values* can be volatile, never structure:
// JSON is compared node by node (same types, same keys, same array lengths, numbers and booleans exactly), and inside
// a string (or a text line) only the spans that look like a volatile value (a UUID, an instant, a time of day, a
// duration, a signed token) may differ, and only with a span of the same kind and shape; so may a number under a key
// that names a time taken (`durationMs`). A volatile-looking value the page itself
// wrote in a command it runs (a MessageHeader id, a Bundle timestamp) is not volatile: it must come back exactly.
// Volatile values stand for each other consistently across a page: one id shown twice is one id got twice, and two
// ids shown are two ids got; one instant shown twice is two instants got within a minute. A date or an instant is volatile only when both are clock values: the one got near now,
// the one shown near the time the page's author ran it (the latest instant the page shows).

interface Kind {
  name: string;
  pattern: RegExp;
  /** The span's shape: what must agree even when the value may differ (e.g. digits become 0). */
  shape: (span: string) => string;
}

const digits = (s: string) => s.replace(/\d/g, "0");
/** How far from now a date or instant the sandbox took from its clock may be (deadlines lie days ahead). */
const CLOCK_WINDOW_MS = 7 * 86_400_000;

/** The volatile spans, most specific first (an instant contains a time of day). */
const KINDS: readonly Kind[] = [
  {
    name: "uuid",
    pattern: /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi,
    shape: (s) => s.replace(/[0-9a-f]/gi, "x"),
  },
  {
    name: "instant",
    pattern: /\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:\d\d)?/g,
    // Fraction digits vary with the clock (…43.6Z is 43.600): the shape keeps the format, not the digit count.
    shape: (s) => digits(s).replace(/\.0+/, ".0"),
  },
  // A signed token (a JWT): new keys at each start. A page may show it cut short with "…".
  { name: "jwt", pattern: /\beyJ[\w-]+(?:\.[\w-]*){0,2}…?/g, shape: () => "eyJ…" },
  // A date alone (an order's authoredOn). Dates and instants are volatile only near the run's time (checked below).
  { name: "date", pattern: /\b\d{4}-\d\d-\d\d\b/g, shape: digits },
  { name: "time", pattern: /\b\d\d:\d\d:\d\d(?:\.\d+)?\b/g, shape: (s) => digits(s).replace(/\.0+/, ".0") },
  // A duration's digits vary; right-aligned in a column (two spaces or more before it), the padding takes up the
  // difference, so the padded field keeps its width.
  {
    name: "duration",
    pattern: / *\b\d+(?:\.\d+)? ?ms\b/g,
    shape: (s) => (s.startsWith("  ") ? `${s.length} wide` : s.replace(/[\d.]+/, "N")),
  },
];

interface Span {
  kind: string;
  value: string;
  shape: string;
}

/** A string split into literal text and volatile spans. */
function tokens(s: string): Array<string | Span> {
  const found: Array<{ start: number; end: number; kind: Kind }> = [];
  for (const kind of KINDS) {
    for (const m of s.matchAll(kind.pattern)) {
      const start = m.index;
      const end = start + m[0].length;
      if (found.some((f) => start < f.end && end > f.start)) continue;
      found.push({ start, end, kind });
    }
  }
  found.sort((a, b) => a.start - b.start);
  const out: Array<string | Span> = [];
  let at = 0;
  for (const f of found) {
    if (f.start > at) out.push(s.slice(at, f.start));
    const value = s.slice(f.start, f.end);
    out.push({ kind: f.kind.name, value, shape: f.kind.shape(value) });
    at = f.end;
  }
  if (at < s.length) out.push(s.slice(at));
  return out;
}

export interface CompareContext {
  /** Text the page feeds the sandbox (its shell blocks): a volatile-looking value found in it must match exactly. */
  input: string;
  /** When the page's author ran it: the latest instant its output and log blocks show (NaN when they show none). */
  shownAt: number;
  /** Volatile values matched so far on the page: shown → got, and got → shown. */
  bound: Map<string, string>;
  boundBack: Map<string, string>;
}

/** The context of one page: what its blocks send, and what its output and log blocks show. */
export function pageContext(input: string, shown: string): CompareContext {
  let latest = Number.NaN;
  for (const kind of ["instant", "date"])
    for (const m of shown.matchAll((KINDS.find((k) => k.name === kind) as Kind).pattern)) {
      const t = Date.parse(m[0]);
      if (!(t <= latest)) latest = t;
    }
  return { input, shownAt: latest, bound: new Map(), boundBack: new Map() };
}

/** Kinds whose values name one thing (an id, a token), so that two shown values stand for two values got. */
const ONE_TO_ONE = new Set(["uuid", "jwt"]);

/**
 * Whether two values got for one value shown are the same: ids and tokens exactly; two events the page shows at one
 * instant (or on one date) happened within a minute (a day) of each other here, on a busy machine.
 */
function same(kind: string, a: string, b: string): boolean {
  if (kind !== "instant" && kind !== "date") return a === b;
  return Math.abs(Date.parse(a) - Date.parse(b)) <= (kind === "instant" ? 60_000 : 86_400_000);
}

/** Whether `text` (the page's commands) holds `value`, not as part of a longer number or word. */
function written(text: string, span: Span): boolean {
  if (span.kind !== "duration") return text.includes(span.value);
  const [, n] = /([\d.]+)/.exec(span.value) ?? [];
  return new RegExp(`(?<![\\d.])${(n as string).replace(".", "\\.")} ?ms\\b`).test(text);
}

/** Why `actual` is not what `expected` shows (volatile spans aside), or undefined when it is. */
export function compareString(expected: string, actual: string, ctx: CompareContext): string | undefined {
  if (expected === actual) return undefined;
  const e = tokens(expected);
  const a = tokens(actual);
  const problem = `expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`;
  if (e.length !== a.length) return problem;
  // Bound only once the whole string matches (a log line is tried against many printed lines).
  const bind = new Map<string, string>();
  const bindBack = new Map<string, string>();
  for (let i = 0; i < e.length; i++) {
    const x = e[i] as string | Span;
    const y = a[i] as string | Span;
    if (typeof x === "string" || typeof y === "string") {
      if (x !== y) return problem;
      continue;
    }
    if (x.kind !== y.kind || x.shape !== y.shape) return problem;
    const shown = x.kind === "duration" ? x.value.trim() : x.value;
    const got = y.kind === "duration" ? y.value.trim() : y.value;
    if (shown !== got && written(ctx.input, x))
      return `${problem} (${shown} is in the page's own commands, so it is not volatile)`;
    // A birth date or a record's date comes from the seed and must match; one the sandbox took from its clock (a
    // lastUpdated, an order's date or deadline) is near the time the page ran, and the one shown near when it was
    // written.
    if (shown !== got && (x.kind === "date" || x.kind === "instant")) {
      if (!(Math.abs(Date.parse(got) - Date.now()) <= CLOCK_WINDOW_MS))
        return `${problem} (${got} is not near the time of this run, so it is not volatile)`;
      if (!(Math.abs(Date.parse(shown) - ctx.shownAt) <= CLOCK_WINDOW_MS))
        return `${problem} (${shown} is not near the time the page shows it ran, so it is not volatile)`;
    }
    if (x.kind === "time" || x.kind === "duration" || (x.kind === "jwt" && shown.endsWith("…"))) continue;
    const before = ctx.bound.get(shown) ?? bind.get(shown);
    if (before !== undefined && !same(x.kind, before, got))
      return `${problem} (${shown} stands for ${before} elsewhere on the page, here for ${got})`;
    bind.set(shown, got);
    if (!ONE_TO_ONE.has(x.kind)) continue;
    const other = ctx.boundBack.get(got) ?? bindBack.get(got);
    if (other !== undefined && other !== shown)
      return `${problem} (${got} stands for ${other} elsewhere on the page, and here for ${shown})`;
    bindBack.set(got, shown);
  }
  for (const [k, v] of bind) ctx.bound.set(k, v);
  for (const [k, v] of bindBack) ctx.boundBack.set(k, v);
  return undefined;
}

/**
 * JSON keys whose numbers are times taken (`durationMs`, `uptimeSeconds`, `totalDuration`): any number matches
 * another there. The time is a whole word of the key, followed by a unit at most (not `durationsCount`, `uptimer`).
 */
const TIMED_KEY = /(?:^(?:duration|elapsed|uptime)|[a-z\d](?:Duration|Elapsed|Uptime))(?:Ms|Millis|Seconds|Secs?|S)?$/;

const typeOf = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);

/** Differences between two JSON values, each as "path: what"; empty when they agree (volatile spans aside). */
export function compareJson(expected: unknown, actual: unknown, ctx: CompareContext, path = "$"): string[] {
  const te = typeOf(expected);
  const ta = typeOf(actual);
  if (te !== ta) return [`${path}: expected ${te} ${JSON.stringify(expected)}, got ${ta} ${JSON.stringify(actual)}`];
  if (te === "string") {
    const why = compareString(expected as string, actual as string, ctx);
    return why === undefined ? [] : [`${path}: ${why}`];
  }
  if (te === "array") {
    const e = expected as unknown[];
    const g = actual as unknown[];
    if (e.length !== g.length) return [`${path}: expected ${e.length} items, got ${g.length}: ${JSON.stringify(g)}`];
    return e.flatMap((v, i) => compareJson(v, g[i], ctx, `${path}[${i}]`));
  }
  if (te === "object") {
    const e = expected as Record<string, unknown>;
    const g = actual as Record<string, unknown>;
    const missing = Object.keys(e).filter((k) => !(k in g));
    const extra = Object.keys(g).filter((k) => !(k in e));
    const out: string[] = [];
    if (missing.length > 0) out.push(`${path}: missing ${missing.join(", ")}`);
    if (extra.length > 0)
      out.push(`${path}: unexpected ${extra.map((k) => `${k}: ${JSON.stringify(g[k])}`).join(", ")}`);
    for (const k of Object.keys(e)) {
      if (!(k in g)) continue;
      if (TIMED_KEY.test(k) && typeof e[k] === "number" && typeof g[k] === "number") continue;
      out.push(...compareJson(e[k], g[k], ctx, `${path}.${k}`));
    }
    return out;
  }
  return Object.is(expected, actual)
    ? []
    : [`${path}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`];
}

/** The JSON values of a command's output: one document, or one per line (jq -c, NDJSON). */
export function parseJsonOutput(text: string): unknown[] | undefined {
  const trimmed = text.trim();
  if (trimmed === "") return [];
  try {
    return [JSON.parse(trimmed)];
  } catch {
    try {
      return trimmed.split(/\r?\n/).map((l) => JSON.parse(l));
    } catch {
      return undefined;
    }
  }
}

/** Lines without trailing spaces, leading and trailing blank lines dropped. */
export function textLines(text: string): string[] {
  const lines = text.split(/\r?\n/).map((l) => l.trimEnd());
  while (lines.length > 0 && lines[0] === "") lines.shift();
  while (lines.length > 0 && lines.at(-1) === "") lines.pop();
  return lines;
}

/** Differences between a shown text output and the command's, line by line. */
export function compareText(expected: string, actual: string, ctx: CompareContext): string[] {
  const e = textLines(expected);
  const a = textLines(actual);
  const out: string[] = [];
  for (let i = 0; i < Math.max(e.length, a.length); i++) {
    if (i >= e.length) out.push(`line ${i + 1}: unexpected ${JSON.stringify(a[i])}`);
    else if (i >= a.length) out.push(`line ${i + 1}: missing ${JSON.stringify(e[i])}`);
    else {
      const why = compareString(e[i] as string, a[i] as string, ctx);
      if (why !== undefined) out.push(`line ${i + 1}: ${why}`);
    }
  }
  return out;
}

/**
 * The shown log lines that the sandbox did not print, in order: each shown line must match one of `printed`, after
 * the one the previous shown line matched (the sandbox prints other lines too: the banner, other calls).
 */
export function missingLogLines(shown: string, printed: readonly string[], ctx: CompareContext): string[] {
  const missing: string[] = [];
  let from = 0;
  for (const line of textLines(shown)) {
    const at = printed.findIndex((p, i) => i >= from && compareString(line, p.trimEnd(), ctx) === undefined);
    if (at < 0) missing.push(line);
    else from = at + 1;
  }
  return missing;
}
