import { useState } from "hono/jsx/dom";
import { ApiError, apiFetch } from "../api.js";
import { Badge, DataTable, ErrorNote, Facts, Loading } from "../components/common.js";
import { when } from "../format.js";
import { useLive } from "../live.js";
import { useData } from "../use-data.js";

interface ScenariosView {
  folder: string | null;
  loadedAt: string | null;
  problems: Array<{ file: string; line: number; column: number; message: string }>;
  files: Array<{ source: string; name: string | null; rules: number }>;
  rules: Array<{
    id: string;
    name: string;
    source: string;
    line: number;
    operations: string[] | null;
    times: number | null;
    responses: number;
    matched: number;
    answered: number;
  }>;
}

/** The loaded scenario files and rules with their hit counts; reload, and what a failed reload said. */
export function ScenariosPage() {
  const view = useData<ScenariosView>("scenarios");
  const [said, setSaid] = useState("");
  useLive(({ event }) => {
    // Hit counts move with calls; reloads come as their own event.
    if (event === "ready" || event === "scenarios" || event === "call") view.reload();
  });
  const reload = async () => {
    setSaid("");
    try {
      await apiFetch("scenarios/reload", { method: "POST" });
      setSaid("Reloaded.");
    } catch (e) {
      setSaid(
        e instanceof ApiError && e.status === 400 ? "The reload failed: see the problems below." : (e as Error).message,
      );
    }
    view.reload();
  };
  if (view.error) return <ErrorNote error={view.error} />;
  if (!view.data) return <Loading />;
  const v = view.data;
  return (
    <>
      <Facts
        items={[
          ["Folder", v.folder ?? "none (--scenarios)"],
          ["Last successful load", when(v.loadedAt)],
          ["Files", String(v.files.length)],
          ["Rules", String(v.rules.length)],
        ]}
      />
      <p>
        <button type="button" onClick={reload}>
          Reload from disk
        </button>{" "}
        <span role="status">{said}</span>
      </p>
      {v.problems.length > 0 ? (
        <section aria-labelledby="problems" class="problems">
          <h2 id="problems">The last reload failed; the previous scenarios keep serving</h2>
          <ul>
            {v.problems.map((p) => (
              <li>
                <code>
                  {p.file}:{p.line}:{p.column}
                </code>
                : {p.message}
              </li>
            ))}
          </ul>
        </section>
      ) : null}
      <section aria-labelledby="files">
        <h2 id="files">Files</h2>
        <ul>
          {v.files.map((f) => (
            <li>
              <code>{f.source}</code>
              {f.name ? ` — ${f.name}` : ""}: {f.rules} rule{f.rules === 1 ? "" : "s"}
            </li>
          ))}
        </ul>
      </section>
      <section aria-labelledby="rules">
        <h2 id="rules">Rules, in the order they are tried</h2>
        <DataTable
          caption={<>Rules with their hit counts</>}
          hiddenCaption
          columns={["Rule", "Where", "Operations", "Matched", "Answered", "Times"]}
        >
          {v.rules.map((r) => (
            <tr>
              <th scope="row">{r.name}</th>
              <td>
                <code>
                  {r.source}:{r.line}
                </code>
              </td>
              <td>{r.operations?.join(", ") ?? "any"}</td>
              <td class="number">{r.matched}</td>
              <td class="number">{r.answered > 0 ? <Badge tone="good">{r.answered}</Badge> : r.answered}</td>
              <td class="number">{r.times ?? "∞"}</td>
            </tr>
          ))}
        </DataTable>
      </section>
    </>
  );
}
