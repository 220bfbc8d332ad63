import { useState } from "hono/jsx/dom";
import { pageUrl } from "../api.js";
import { DataTable, ErrorNote, Loading, useThrottled } from "../components/common.js";
import { patientPath } from "../format.js";
import { useLive } from "../live.js";
import { patientTitle } from "../patient-name.js";
import { useData } from "../use-data.js";

interface PatientSummary {
  id: string;
  identifier: Array<{ system?: string; value?: string }>;
  name: Array<{ text?: string; given?: string[]; family?: string }>;
  gender: string | null;
  birthDate: string | null;
  records: Record<string, number>;
}

const keyOf = (p: PatientSummary) => {
  const id = p.identifier.find((i) => i.value);
  return id ? `${id.system ?? ""}|${id.value}` : p.id;
};

export function PatientsPage() {
  const [q, setQ] = useState(new URLSearchParams(location.search).get("q") ?? "");
  const list = useData<{ patients: PatientSummary[]; total: number }>(`patients?q=${encodeURIComponent(q)}`);
  const reload = useThrottled(list.reload, 500);
  useLive(({ event }) => {
    if (event === "ready" || event === "call") reload();
  });
  const search = (event: Event) => {
    event.preventDefault();
    const value = String(new FormData(event.currentTarget as HTMLFormElement).get("q") ?? "");
    setQ(value);
    history.replaceState(null, "", value ? `?q=${encodeURIComponent(value)}` : location.pathname);
  };
  return (
    <>
      <search aria-label="Find a patient">
        <form class="filters" onSubmit={search}>
          <label>
            Identifier, name or id
            <input type="search" name="q" value={q} />
          </label>
          <button type="submit">Find</button>
        </form>
      </search>
      {list.error ? <ErrorNote error={list.error} /> : null}
      {!list.data && !list.error ? <Loading /> : null}
      {list.data ? (
        <DataTable
          caption={
            <>
              Patients the sandbox knows, most recent first ({list.data.patients.length} of {list.data.total} shown)
            </>
          }
          columns={["Name", "Identifiers", "Gender", "Born", "Records"]}
        >
          {list.data.patients.map((p) => (
            <tr>
              <th scope="row">
                <a href={pageUrl(patientPath(keyOf(p)))}>{patientTitle(p)}</a>
              </th>
              <td class="wrap">{p.identifier.map((i) => `${i.system ?? ""}|${i.value ?? ""}`).join(", ") || p.id}</td>
              <td>{p.gender ?? "—"}</td>
              <td>{p.birthDate ?? "—"}</td>
              <td>
                {Object.entries(p.records)
                  .map(([type, n]) => `${n} ${type}`)
                  .join(", ") || "—"}
              </td>
            </tr>
          ))}
        </DataTable>
      ) : null}
    </>
  );
}
