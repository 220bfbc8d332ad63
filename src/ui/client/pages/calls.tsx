import { useState } from "hono/jsx/dom";
import { pageUrl } from "../api.js";
import {
  Badge,
  DataTable,
  ErrorNote,
  Loading,
  Time,
  toneOfCode,
  toneOfStatus,
  useThrottled,
} from "../components/common.js";
import { ms } from "../format.js";
import { useLive } from "../live.js";
import type { CallPage, Operations } from "../types.js";
import { useData } from "../use-data.js";

const PAGE_SIZE = 50;
const FILTERS = ["operation", "direction", "status", "code", "patient", "q"] as const;
type Filters = Record<(typeof FILTERS)[number], string>;

function filtersFromUrl(): Filters {
  const query = new URLSearchParams(location.search);
  return Object.fromEntries(FILTERS.map((f) => [f, query.get(f) ?? ""])) as Filters;
}

function queryOf(filters: Filters): URLSearchParams {
  const query = new URLSearchParams();
  for (const f of FILTERS) if (filters[f].trim() !== "") query.set(f, filters[f].trim());
  return query;
}

function FilterForm({ filters, onApply }: { filters: Filters; onApply: (filters: Filters) => void }) {
  const ops = useData<Operations>("operations");
  const read = (form: HTMLFormElement): Filters =>
    Object.fromEntries(FILTERS.map((f) => [f, String(new FormData(form).get(f) ?? "")])) as Filters;
  const submit = (event: Event) => {
    event.preventDefault();
    onApply(read(event.currentTarget as HTMLFormElement));
  };
  // Choices apply at once; typed fields on Enter or the button.
  const changed = (event: Event) => {
    const form = (event.target as HTMLElement).closest("form");
    if (form && (event.target as HTMLElement).tagName === "SELECT") onApply(read(form));
  };
  const names = [...(ops.data?.operations.map((o) => o.id) ?? []), ...(ops.data?.pushes.map((p) => p.id) ?? [])];
  return (
    <search aria-label="Filter calls">
      <form class="filters" onSubmit={submit} onChange={changed}>
        <label>
          Operation
          <select name="operation" value={filters.operation}>
            <option value="">any</option>
            {names.map((n) => (
              <option value={n} selected={n === filters.operation}>
                {n}
              </option>
            ))}
          </select>
        </label>
        <label>
          Direction
          <select name="direction" value={filters.direction}>
            <option value="">any</option>
            <option value="inbound" selected={filters.direction === "inbound"}>
              inbound
            </option>
            <option value="outbound" selected={filters.direction === "outbound"}>
              outbound (pushes)
            </option>
          </select>
        </label>
        <label>
          Status
          <input name="status" value={filters.status} placeholder="400 or 4xx" size={8} />
        </label>
        <label>
          Response code
          <select name="code" value={filters.code}>
            <option value="">any</option>
            {["ok", "transient-error", "fatal-error"].map((c) => (
              <option value={c} selected={c === filters.code}>
                {c}
              </option>
            ))}
          </select>
        </label>
        <label>
          Patient
          <input name="patient" value={filters.patient} placeholder="identifier or key" size={20} />
        </label>
        <label>
          Text
          <input type="search" name="q" value={filters.q} placeholder="anywhere in the call" size={20} />
        </label>
        <button type="submit">Apply filters</button>
      </form>
    </search>
  );
}

/** The journal, newest first, updated live on the first page; older pages through the `next` cursor. */
export function CallsPage() {
  const [filters, setFilters] = useState<Filters>(filtersFromUrl);
  // Cursors of the pages before this one (empty on the newest page) and this page's own.
  const [trail, setTrail] = useState<string[]>([]);
  const [missed, setMissed] = useState(0);
  const cursor = trail.at(-1);
  const query = queryOf(filters);
  query.set("order", "desc");
  query.set("limit", String(PAGE_SIZE));
  query.set("view", "summary");
  if (cursor !== undefined) query.set("cursor", cursor);
  const page = useData<CallPage>(`calls?${query}`);
  const reload = useThrottled(page.reload, 250);
  useLive(({ event }) => {
    if (event === "ready" || event === "calls-cleared" || event === "overflow") page.reload();
    else if (event === "call") {
      if (cursor === undefined) reload();
      else setMissed((n) => n + 1);
    }
  });
  const apply = (next: Filters) => {
    setFilters(next);
    setTrail([]);
    setMissed(0);
    const search = queryOf(next).toString();
    history.replaceState(null, "", search ? `?${search}` : location.pathname);
  };
  const newest = () => {
    setTrail([]);
    setMissed(0);
  };
  const calls = page.data?.calls ?? [];
  return (
    <>
      <FilterForm filters={filters} onApply={apply} />
      {cursor !== undefined && missed > 0 ? (
        <p role="status">
          {missed} new call{missed === 1 ? "" : "s"} since this page was loaded.{" "}
          <button type="button" onClick={newest}>
            Show the newest
          </button>
        </p>
      ) : null}
      {page.error ? <ErrorNote error={page.error} /> : null}
      {!page.data && !page.error ? <Loading /> : null}
      {page.data ? (
        <DataTable
          caption={
            <>
              {cursor === undefined ? "Calls, newest first, as they arrive" : "Older calls, newest first"}
              {calls.length === 0 ? ": none yet" : ""}
            </>
          }
          columns={["Time", "Direction", "Operation", "Status", "Response code", "Rule", "Duration"]}
        >
          {calls.map((call) => (
            <tr key={call.id}>
              <td>
                <a href={pageUrl(`calls/${call.id}`)}>
                  <Time at={call.at} />
                </a>{" "}
                <span class="muted">#{call.id}</span>
              </td>
              <td>{call.direction === "inbound" ? "inbound" : `outbound (attempt ${call.attempt ?? 1})`}</td>
              <td>{call.operation ?? <span class="muted">{call.path}</span>}</td>
              <td>
                <Badge tone={toneOfStatus(call.status)}>{call.status ?? call.fault ?? "no answer"}</Badge>
                {call.duplicate ? <span class="muted"> resend</span> : null}
              </td>
              <td>{call.code ? <Badge tone={toneOfCode(call.code)}>{call.code}</Badge> : "—"}</td>
              <td>{call.rule ?? "—"}</td>
              <td class="number">{ms(call.durationMs)}</td>
            </tr>
          ))}
        </DataTable>
      ) : null}
      <nav aria-label="Pages of calls" class="pager">
        <button type="button" disabled={trail.length === 0} onClick={() => setTrail(trail.slice(0, -1))}>
          Newer
        </button>
        <button
          type="button"
          disabled={!page.data?.next}
          onClick={() => page.data?.next && setTrail([...trail, page.data.next])}
        >
          Older
        </button>
      </nav>
    </>
  );
}
