import { pageUrl } from "../api.js";
import { Badge, DataTable, ErrorNote, Loading, Time, toneOfStatus, useThrottled } from "../components/common.js";
import { useLive } from "../live.js";
import type { Pharmacy } from "../types.js";
import { useData } from "../use-data.js";

function LastDelivery({ pharmacy }: { pharmacy: Pharmacy }) {
  const d = pharmacy.lastDelivery;
  if (!d) return <>none yet</>;
  return (
    <>
      <a href={pageUrl(`calls/${d.callId}`)}>{d.operation ?? "push"}</a> at <Time at={d.at} />
      {d.attempt ? `, attempt ${d.attempt}` : ""}:{" "}
      <Badge tone={toneOfStatus(d.status)}>{d.status ?? "no answer"}</Badge>
      {d.error ? ` ${d.error}` : ""}
    </>
  );
}

export function PharmaciesPage() {
  const list = useData<{ pharmacies: Pharmacy[] }>("pharmacies");
  const reload = useThrottled(list.reload, 500);
  useLive(({ event, data }) => {
    // A subscription is a call; a delivery is an outbound call.
    if (event === "ready" || (event === "call" && (data as { operation: string | null }).operation !== null)) reload();
  });
  if (list.error) return <ErrorNote error={list.error} />;
  if (!list.data) return <Loading />;
  return (
    <DataTable
      caption={<>Pharmacies: subscriptions and fixtures{list.data.pharmacies.length === 0 ? ": none yet" : ""}</>}
      columns={["Licence", "Name", "Subscription", "Endpoint", "Headers", "Last delivery"]}
    >
      {list.data.pharmacies.map((p) => (
        <tr>
          <th scope="row">{p.licence}</th>
          <td>{p.name ?? "—"}</td>
          <td>
            <Badge tone={p.active ? "good" : "warn"}>{p.active ? "active" : "off"}</Badge> {p.source}
            {p.subscriptionId ? ` (Subscription/${p.subscriptionId})` : ""}
          </td>
          <td class="wrap">{p.endpoint ?? "—"}</td>
          <td>{Object.keys(p.headers).join(", ") || "—"}</td>
          <td>
            <LastDelivery pharmacy={p} />
          </td>
        </tr>
      ))}
    </DataTable>
  );
}
