import { useState } from "hono/jsx/dom";
import { pageUrl, post } from "../api.js";
import { Badge, DataTable, ErrorNote, Facts, Loading, Problem, Time } from "../components/common.js";
import { PatientLink, useHeld } from "../components/patient-link.js";
import { OrderStateDiagram } from "../components/state-diagram.js";
import { useLive } from "../live.js";
import type { PageProps } from "../page-props.js";
import type { Delivery, OrderView } from "../types.js";
import { useData } from "../use-data.js";
import { toneOfState } from "./orders.js";

const delivery = (d: Delivery | null) =>
  d === null ? (
    "—"
  ) : (
    <>
      {d.attempts} attempt{d.attempts === 1 ? "" : "s"}
      {d.status !== null ? `, answered ${d.status}` : ""}
      {d.error ? `, ${d.error}` : ""}
      {d.deliveredAt ? (
        <>
          , delivered <Time at={d.deliveredAt} />
        </>
      ) : null}
    </>
  );

function OrderPatient({ patientKey }: { patientKey: string }) {
  return <PatientLink patientKey={patientKey} held={useHeld(patientKey)} />;
}

/** One order: its state on the diagram, its pharmacies, its timeline; allocate or cancel it. */
export function OrderPage({ param }: PageProps) {
  const path = `orders/${encodeURIComponent(param)}`;
  const { data: order, error, reload } = useData<OrderView>(path);
  const [problem, setProblem] = useState("");
  useLive(({ event, data }) => {
    if (event === "ready" || (event === "order" && (data as OrderView).id === param)) reload();
  });
  if (error) return <ErrorNote error={error} />;
  if (!order) return <Loading />;
  const act = async (what: string, body: unknown) => {
    try {
      setProblem("");
      await post(`${path}/${what}`, body);
      reload();
    } catch (e) {
      setProblem((e as Error).message);
    }
  };
  const patientKey = order.patient.identifier[0]
    ? `${order.patient.identifier[0].system ?? ""}|${order.patient.identifier[0].value ?? ""}`
    : order.patient.id;
  return (
    <>
      <p class="order-state">
        State: <Badge tone={toneOfState(order.state)}>{order.state}</Badge>
        {order.allocatedTo ? ` — allocated to ${order.allocatedTo}` : ""}
      </p>
      <OrderStateDiagram state={order.state} />
      <Facts
        items={[
          ["Kind", order.kind],
          ["Created", <Time at={order.createdAt} />],
          ["Deadline to confirm", <Time at={order.deadline} />],
          ["Patient", <OrderPatient patientKey={patientKey} />],
          ["Items", order.items.map((i) => i.display ?? i.code ?? i.requestId).join("; ")],
        ]}
      />
      <Problem message={problem} />
      <section aria-labelledby="pharmacies">
        <h2 id="pharmacies">Pharmacies</h2>
        <DataTable
          caption={<>Each pharmacy's request and fulfillment Task</>}
          columns={["Pharmacy", "State", "Task", "Request delivery", "Confirmation", "Allocation delivery", "Action"]}
        >
          {order.pharmacies.map((p) => (
            <tr>
              <th scope="row">{p.licence}</th>
              <td>
                <Badge tone={toneOfState(p.state)}>{p.state}</Badge>
              </td>
              <td>
                {p.taskStatus}
                {p.businessStatus ? ` (${p.businessStatus})` : ""}
              </td>
              <td>{delivery(p.delivery)}</td>
              <td>
                {p.confirmation ? (
                  <>
                    {p.confirmation.availability} at <Time at={p.confirmation.at} />
                  </>
                ) : (
                  "—"
                )}
              </td>
              <td>{delivery(p.allocationDelivery)}</td>
              <td>
                {order.state === "open" &&
                p.state === "confirmed" &&
                p.confirmation &&
                p.confirmation.availability !== "unavailable" ? (
                  <button type="button" onClick={() => act("allocate", { licence: p.licence })}>
                    Allocate to {p.licence}
                  </button>
                ) : null}
              </td>
            </tr>
          ))}
        </DataTable>
      </section>
      <section aria-labelledby="timeline">
        <h2 id="timeline">Timeline</h2>
        <ol class="timeline">
          {order.history.map((h) => (
            <li>
              <Time at={h.at} /> {h.event}
            </li>
          ))}
        </ol>
        <p>The calls about each pharmacy's Task: pushes, their attempts, and the pharmacy's messages.</p>
        <ul>
          {order.pharmacies.map((p) => (
            <li>
              <a href={pageUrl(`?q=${encodeURIComponent(p.taskId)}`)}>Calls about {p.licence}'s Task</a>
            </li>
          ))}
        </ul>
      </section>
      {order.state === "open" || order.state === "allocated" ? (
        <button type="button" onClick={() => act("cancel", {})}>
          Cancel order {order.id}
        </button>
      ) : null}
    </>
  );
}
