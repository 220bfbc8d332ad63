import type { Child } from "hono/jsx";
import { Badge, DataTable, ErrorNote, Facts, Loading, Time, useThrottled } from "../components/common.js";
import { useHeading } from "../heading.js";
import { useLive } from "../live.js";
import type { PageProps } from "../page-props.js";
import { patientTitle, personName } from "../patient-name.js";
import { useData } from "../use-data.js";

// biome-ignore lint/suspicious/noExplicitAny: FHIR resources of any shape, read defensively below
type Resource = Record<string, any>;

interface PatientState {
  patient: Resource;
  keys: string[];
  records: Resource[];
}

/** A CodeableConcept in words. */
const concept = (c: Resource | undefined): string => c?.text ?? c?.coding?.[0]?.display ?? c?.coding?.[0]?.code ?? "—";

const code = (c: Resource | undefined): string | undefined => c?.coding?.[0]?.code;

/** A removed record stays, marked entered-in-error the R4 way. */
const removed = (r: Resource) => r.status === "entered-in-error" || code(r.verificationStatus) === "entered-in-error";

function quantity(q: Resource | undefined): string {
  return q ? `${q.value ?? ""} ${q.unit ?? q.code ?? ""}`.trim() : "";
}

function observationValue(o: Resource): string {
  if (o.valueQuantity) return quantity(o.valueQuantity);
  if (Array.isArray(o.component))
    return o.component.map((c: Resource) => `${concept(c.code)} ${quantity(c.valueQuantity)}`).join(", ");
  return o.valueString ?? concept(o.valueCodeableConcept);
}

function RecordTable({
  title,
  records,
  columns,
}: {
  title: string;
  records: Resource[];
  columns: Array<[string, (r: Resource) => Child]>;
}) {
  return (
    <section aria-label={title}>
      <h2>
        {title} ({records.filter((r) => !removed(r)).length})
      </h2>
      {records.length === 0 ? (
        <p class="muted">None.</p>
      ) : (
        <DataTable caption={title} hiddenCaption columns={[...columns.map(([name]) => name), "Version"]}>
          {records.map((r) => (
            <tr class={removed(r) ? "removed" : ""}>
              {columns.map(([, cell]) => (
                <td>{cell(r)}</td>
              ))}
              <td>
                {r.meta?.versionId ?? "—"}
                {removed(r) ? (
                  <>
                    {" "}
                    <Badge tone="bad">removed</Badge>
                  </>
                ) : null}
              </td>
            </tr>
          ))}
        </DataTable>
      )}
    </section>
  );
}

const of = (records: Resource[], ...types: string[]) => records.filter((r) => types.includes(r.resourceType));

/** A patient's profile as the sandbox holds it: allergies, history, measurements and tasks. */
export function PatientPage({ param }: PageProps) {
  const state = useData<PatientState>(`patients/${encodeURIComponent(param)}`);
  const reload = useThrottled(state.reload, 500);
  useLive(({ event }) => {
    if (event === "ready" || event === "call") reload();
  });
  useHeading(state.data ? `Patient ${patientTitle(state.data.patient)}` : undefined);
  if (state.error) return <ErrorNote error={state.error} />;
  if (!state.data) return <Loading />;
  const { patient, keys, records } = state.data;
  return (
    <>
      <Facts
        items={[
          ["Name", personName(patient.name) ?? "(no name)"],
          ["Gender", patient.gender ?? "—"],
          ["Born", patient.birthDate ?? "—"],
          ["Server id", patient.id],
          ["Known by", keys.join(", ")],
        ]}
      />
      <RecordTable
        title="Allergies"
        records={of(records, "AllergyIntolerance")}
        columns={[
          ["Substance", (r) => concept(r.code)],
          ["Clinical status", (r) => code(r.clinicalStatus) ?? "—"],
          ["Verification", (r) => code(r.verificationStatus) ?? "—"],
          ["Criticality", (r) => r.criticality ?? "—"],
          ["Recorded", (r) => <Time at={r.recordedDate} />],
          ["Id", (r) => r.id],
        ]}
      />
      <RecordTable
        title="History"
        records={of(records, "Condition", "Procedure")}
        columns={[
          ["Kind", (r) => (r.resourceType === "Condition" ? "condition" : "procedure")],
          ["What", (r) => concept(r.code)],
          ["Status", (r) => code(r.clinicalStatus) ?? r.status ?? "—"],
          ["When", (r) => <Time at={r.onsetDateTime ?? r.performedDateTime ?? r.recordedDate} />],
          ["Id", (r) => r.id],
        ]}
      />
      <RecordTable
        title="Measurements"
        records={of(records, "Observation")}
        columns={[
          ["Measurement", (r) => concept(r.code)],
          ["Value", observationValue],
          ["When", (r) => <Time at={r.effectiveDateTime} />],
          ["Status", (r) => r.status ?? "—"],
          ["Id", (r) => r.id],
        ]}
      />
      <RecordTable
        title="Tasks"
        records={of(records, "Task")}
        columns={[
          ["Task", (r) => r.description ?? concept(r.code)],
          ["Status", (r) => <Badge>{r.status ?? "—"}</Badge>],
          ["Priority", (r) => r.priority ?? "—"],
          ["Performer", (r) => concept(r.performerType?.[0])],
          ["Authored", (r) => <Time at={r.authoredOn} />],
          ["Id", (r) => r.id],
        ]}
      />
    </>
  );
}
