import type { Child } from "hono/jsx";

/** A step from a JSON value to a member: a property name or an array index (as GET /__admin/calls/{id} sends). */
export type JsonStep = string | number;

const pathKey = (path: readonly JsonStep[]) => JSON.stringify(path);

interface Context {
  /** Prefix of the ids of this view's anchors (request, answer). */
  prefix: string;
  /** Issue numbers by the JSON path of the node they point at. */
  marks: Map<string, number[]>;
  /** Entry index by fullUrl and by Type/id: references become links to their entry. */
  entries: Map<string, number>;
  /** Issues whose first node has been given its anchor. */
  anchored: Set<number>;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

function entryIndex(bundle: Record<string, unknown>): Map<string, number> {
  const index = new Map<string, number>();
  const entries = Array.isArray(bundle.entry) ? bundle.entry : [];
  entries.forEach((entry, i) => {
    if (!isObject(entry)) return;
    if (typeof entry.fullUrl === "string") index.set(entry.fullUrl, i);
    const r = entry.resource;
    if (isObject(r) && typeof r.resourceType === "string" && typeof r.id === "string")
      index.set(`${r.resourceType}/${r.id}`, i);
  });
  return index;
}

/** The entry a reference names: by fullUrl, or by the Type/id at its end (absolute or relative). */
function resolve(reference: string, entries: Map<string, number>): number | undefined {
  const direct = entries.get(reference);
  if (direct !== undefined) return direct;
  const typed = /([A-Z][A-Za-z]+\/[A-Za-z0-9\-.]{1,64})(?:\/_history\/[^/]+)?$/.exec(reference)?.[1];
  return typed === undefined ? undefined : entries.get(typed);
}

export const entryAnchor = (prefix: string, index: number) => `${prefix}-entry-${index}`;
export const issueAnchor = (prefix: string, issue: number) => `${prefix}-issue-${issue}`;

function Scalar({ value, name, ctx }: { value: unknown; name: JsonStep | undefined; ctx: Context }) {
  const text = JSON.stringify(value);
  if (name === "reference" && typeof value === "string") {
    const target = resolve(value, ctx.entries);
    if (target !== undefined)
      return (
        <a class="json-string" href={`#${entryAnchor(ctx.prefix, target)}`} title={`Go to entry ${target}`}>
          {text}
        </a>
      );
  }
  return <span class={`json-${value === null ? "null" : typeof value}`}>{text}</span>;
}

const Label = ({ name }: { name: JsonStep | undefined }) =>
  name === undefined ? null : typeof name === "number" ? (
    <span class="json-index">{name}: </span>
  ) : (
    <span class="json-key">{JSON.stringify(name)}: </span>
  );

/** Wraps a node some issues point at: marked, with the issue numbers written out (not colour alone). */
function Marked({ path, ctx, children }: { path: JsonStep[]; ctx: Context; children: Child }) {
  const issues = ctx.marks.get(pathKey(path));
  if (!issues) return <>{children}</>;
  const first = issues.find((n) => !ctx.anchored.has(n));
  if (first !== undefined) ctx.anchored.add(first);
  return (
    <mark class="issue-at" id={first === undefined ? undefined : issueAnchor(ctx.prefix, first)} tabindex={-1}>
      <span class="issue-tag">{issues.map((n) => `Issue ${n}`).join(", ")}</span>
      {children}
    </mark>
  );
}

function JsonNode({ name, value, path, ctx }: { name?: JsonStep; value: unknown; path: JsonStep[]; ctx: Context }) {
  let body: Child;
  if (Array.isArray(value) || isObject(value)) {
    const members: Array<[JsonStep, unknown]> = Array.isArray(value)
      ? value.map((v, i) => [i, v])
      : Object.entries(value);
    const [open, close] = Array.isArray(value) ? ["[", "]"] : ["{", "}"];
    body =
      members.length === 0 ? (
        <div class="json-leaf">
          <Label name={name} />
          {open}
          {close}
        </div>
      ) : (
        <details open class="json-node">
          <summary>
            <Label name={name} />
            {open}
            <span class="json-count">
              {" "}
              {members.length} {Array.isArray(value) ? "item" : "member"}
              {members.length === 1 ? "" : "s"}
            </span>
          </summary>
          <div class="json-members">
            {members.map(([k, v]) => (
              <JsonNode name={k} value={v} path={[...path, k]} ctx={ctx} />
            ))}
          </div>
          <span class="json-close">{close}</span>
        </details>
      );
  } else {
    body = (
      <div class="json-leaf">
        <Label name={name} />
        <Scalar value={value} name={name} ctx={ctx} />
      </div>
    );
  }
  return (
    <Marked path={path} ctx={ctx}>
      {body}
    </Marked>
  );
}

const describeEntry = (entry: unknown): string => {
  const r = isObject(entry) ? entry.resource : undefined;
  if (!isObject(r)) return "(no resource)";
  return `${String(r.resourceType ?? "?")}${typeof r.id === "string" ? `/${r.id}` : ""}`;
};

/** A Bundle's entries by resource type, each a link to its entry (which opens it, wherever it is folded). */
function EntryTypes({ bundle, prefix }: { bundle: Record<string, unknown>; prefix: string }) {
  const entries = Array.isArray(bundle.entry) ? bundle.entry : [];
  const byType = new Map<string, number[]>();
  entries.forEach((e, i) => {
    const type = isObject(e) && isObject(e.resource) ? String(e.resource.resourceType) : "(no resource)";
    byType.set(type, [...(byType.get(type) ?? []), i]);
  });
  if (byType.size === 0) return null;
  return (
    <nav aria-label={`Entries of the ${prefix} by resource type`} class="entry-types">
      <ul>
        {[...byType].map(([type, indexes]) => (
          <li>
            <strong>{type}</strong>:{" "}
            {indexes.map((i, n) => (
              <>
                {n > 0 ? ", " : ""}
                <a href={`#${entryAnchor(prefix, i)}`}>entry {i}</a>
              </>
            ))}
          </li>
        ))}
      </ul>
    </nav>
  );
}

/** A Bundle: its own elements, then each entry as a collapsible section. */
function BundleView({ bundle, ctx }: { bundle: Record<string, unknown>; ctx: Context }) {
  const entries = Array.isArray(bundle.entry) ? bundle.entry : [];
  const own = Object.entries(bundle).filter(([k]) => k !== "entry");
  return (
    <div class="fhir-bundle">
      <div class="json-members">
        {own.map(([k, v]) => (
          <JsonNode name={k} value={v} path={[k]} ctx={ctx} />
        ))}
      </div>
      {entries.map((entry, i) => (
        <Marked path={["entry", i]} ctx={ctx}>
          <details open class="fhir-entry" id={entryAnchor(ctx.prefix, i)}>
            <summary>
              <span class="entry-title">{describeEntry(entry)}</span> <span class="muted">entry {i}</span>
            </summary>
            <div class="json-members">
              {isObject(entry) ? (
                Object.entries(entry).map(([k, v]) => <JsonNode name={k} value={v} path={["entry", i, k]} ctx={ctx} />)
              ) : (
                <JsonNode value={entry} path={["entry", i]} ctx={ctx} />
              )}
            </div>
          </details>
        </Marked>
      ))}
    </div>
  );
}

export interface FhirViewProps {
  value: unknown;
  /** Anchor prefix and the entries navigation's name: "request", "answer". */
  prefix: string;
  /** For each issue number (1-based), the JSON paths it points at in `value`. */
  marks?: ReadonlyArray<{ issue: number; locations: JsonStep[][] }>;
}

/** Past this many lines (as pretty JSON), a body starts folded: a call's page stays a few screens tall. */
export const LONG_BODY_LINES = 60;

/** The lines a value takes as pretty JSON (2 spaces), about the lines it takes on the page. */
export const jsonLines = (value: unknown): number => (JSON.stringify(value, null, 2) ?? "").split("\n").length;

/**
 * A long body folded in a native disclosure (no script needed to open it; the browser opens it on its own for
 * find-in-page and for a link to a place inside). Short ones are shown as they are.
 */
export function Folded({ lines, marked = [], children }: { lines: number; marked?: number[]; children: Child }) {
  if (lines <= LONG_BODY_LINES) return <>{children}</>;
  return (
    <details class="long-body">
      <summary>
        <span class="when-closed">Show the whole body</span>
        <span class="when-open">Fold the body</span>{" "}
        <span class="muted">
          ({lines} lines
          {marked.length === 0 ? "" : `; issue${marked.length === 1 ? "" : "s"} ${marked.join(", ")} marked inside`})
        </span>
      </summary>
      {children}
    </details>
  );
}

/**
 * FHIR JSON, pretty and collapsible, folded as a whole when long; references link to their entry; nodes that
 * issues point at are marked.
 */
export function FhirView({ value, prefix, marks = [] }: FhirViewProps) {
  const byPath = new Map<string, number[]>();
  for (const { issue, locations } of marks)
    for (const path of locations) byPath.set(pathKey(path), [...(byPath.get(pathKey(path)) ?? []), issue]);
  const bundle = isObject(value) && value.resourceType === "Bundle" ? value : undefined;
  const ctx: Context = {
    prefix,
    marks: byPath,
    entries: bundle ? entryIndex(bundle) : new Map(),
    anchored: new Set(),
  };
  return (
    <div class="fhir">
      {bundle ? <EntryTypes bundle={bundle} prefix={prefix} /> : null}
      <Folded lines={jsonLines(value)} marked={marks.filter((m) => m.locations.length > 0).map((m) => m.issue)}>
        {bundle ? (
          <Marked path={[]} ctx={ctx}>
            <BundleView bundle={bundle} ctx={ctx} />
          </Marked>
        ) : (
          <JsonNode value={value} path={[]} ctx={ctx} />
        )}
      </Folded>
    </div>
  );
}
