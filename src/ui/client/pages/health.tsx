import type { Child } from "hono/jsx";
import { ErrorNote, Facts, Loading, Time, useThrottled } from "../components/common.js";
import { bytes, duration, instant } from "../format.js";
import { useLive } from "../live.js";
import { useData } from "../use-data.js";

type Json = Record<string, unknown>;

/** camelCase → words: "maxBodyBytes" → "max body bytes". */
const words = (name: string) => name.replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase();

/** A health figure in words: sizes in bytes as KiB/MiB, the rest as it is. */
function shown(name: string, value: unknown): Child {
  if (typeof value === "number" && /bytes/i.test(name)) return bytes(value);
  if (typeof value === "number" && /seconds/i.test(name)) return duration(value);
  if (value === null || value === undefined) return "—";
  if (typeof value === "string" && instant(value) !== null) return <Time at={value} />;
  if (typeof value === "number") return value.toLocaleString("en");
  if (typeof value === "object")
    return Object.entries(value)
      .map(([k, v]) => `${words(k)}: ${v ?? "none"}`)
      .join(", ");
  return String(value);
}

const TITLES: Record<string, string> = {
  journal: "Journal",
  store: "Store",
  memory: "Memory",
  pushes: "Push queue",
  server: "Server limits",
  journalFile: "Journal file",
  stateFile: "State file",
};

/**
 * GET /__admin/health as a page: the top-level figures, then each group
 * (journal, store, memory, push queue, …) as its own list, so figures the
 * API adds show up without a change here.
 */
export function HealthPage() {
  const health = useData<Json>("health");
  const reload = useThrottled(health.reload, 1000);
  useLive(({ event }) => {
    if (event === "ready" || event === "call") reload();
  });
  if (health.error) return <ErrorNote error={health.error} />;
  if (!health.data) return <Loading />;
  const entries = Object.entries(health.data);
  const flat = entries.filter(([, v]) => typeof v !== "object" || v === null);
  const groups = entries.filter(([, v]) => typeof v === "object" && v !== null) as Array<[string, Json]>;
  return (
    <>
      <Facts items={flat.map(([k, v]) => [k === "uptimeSeconds" ? "uptime" : words(k), shown(k, v)])} />
      {groups.map(([name, group]) => (
        <section aria-labelledby={`health-${name}`}>
          <h2 id={`health-${name}`}>{TITLES[name] ?? words(name)}</h2>
          <Facts items={Object.entries(group).map(([k, v]) => [words(k), shown(k, v)])} />
        </section>
      ))}
    </>
  );
}
