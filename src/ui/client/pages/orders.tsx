import { useState } from "hono/jsx/dom";
import { pageUrl, post } from "../api.js";
import { Badge, DataTable, ErrorNote, Loading, Problem, Time, useThrottled } from "../components/common.js";
import { useLive } from "../live.js";
import type { OrderView, Pharmacy } from "../types.js";
import { useData } from "../use-data.js";

export const toneOfState = (state: string) =>
  state === "dispensed" || state === "allocated" || state === "delivered" || state === "confirmed"
    ? "good"
    : state === "expired" || state === "cancelled" || state === "delivery-failed"
      ? "bad"
      : "info";

/** POST /__admin/orders from a form: everything optional (a generated order). */
function TriggerOrder() {
  const pharmacies = useData<{ pharmacies: Pharmacy[] }>("pharmacies");
  const [problem, setProblem] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const text = (name: string) => String(form.get(name) ?? "").trim();
    const chosen = form.getAll("pharmacy").map(String);
    const spec: Record<string, unknown> = {};
    if (chosen.length > 0) spec.pharmacies = chosen;
    if (text("deadline")) spec.deadline = text("deadline");
    if (text("patient")) spec.patient = text("patient");
    if (text("code")) {
      spec.items = [
        {
          medication: { code: text("code"), ...(text("display") ? { display: text("display") } : {}) },
          ...(text("quantity") ? { quantity: Number(text("quantity")) } : {}),
        },
      ];
    }
    setBusy(true);
    try {
      const order = await post<OrderView>("orders", spec);
      location.assign(pageUrl(`orders/${order.id}`));
    } catch (e) {
      setProblem((e as Error).message);
      setBusy(false);
    }
  };
  const active = pharmacies.data?.pharmacies.filter((p) => p.active) ?? [];
  return (
    <section aria-labelledby="trigger">
      <h2 id="trigger">Trigger an order</h2>
      <p class="muted">
        Everything is optional: left empty, the sandbox generates the order and sends it to every subscribed pharmacy.
      </p>
      <form onSubmit={submit} class="stacked">
        <fieldset>
          <legend>Pharmacies</legend>
          {active.length === 0 ? <p class="muted">No pharmacy is subscribed.</p> : null}
          {active.map((p) => (
            <label class="check">
              <input type="checkbox" name="pharmacy" value={p.licence} /> {p.licence}
              {p.name ? ` (${p.name})` : ""}
            </label>
          ))}
        </fieldset>
        <label>
          Medication code (RxNorm)
          <input name="code" placeholder="e.g. 197361" />
        </label>
        <label>
          Medication name
          <input name="display" placeholder="e.g. Amlodipine 5 MG Oral Tablet" />
        </label>
        <label>
          Quantity
          <input name="quantity" inputmode="numeric" />
        </label>
        <label>
          Deadline to confirm
          <input name="deadline" placeholder="e.g. 60s, 5m" />
        </label>
        <label>
          Patient key
          <input name="patient" placeholder="system|value or an id" />
        </label>
        <button type="submit" disabled={busy}>
          Trigger order
        </button>
      </form>
      <Problem message={problem} />
    </section>
  );
}

export function OrdersPage() {
  const orders = useData<{ orders: OrderView[]; allocation: string }>("orders");
  const reload = useThrottled(orders.reload, 250);
  useLive(({ event }) => {
    if (event === "order" || event === "ready") reload();
  });
  const list = [...(orders.data?.orders ?? [])].reverse();
  return (
    <>
      {orders.error ? <ErrorNote error={orders.error} /> : null}
      {!orders.data && !orders.error ? <Loading /> : null}
      {orders.data ? (
        <>
          <p>
            Allocation policy: <strong>{orders.data.allocation}</strong>
          </p>
          <DataTable
            caption={<>Orders, newest first{list.length === 0 ? ": none yet" : ""}</>}
            columns={["Order", "State", "Created", "Deadline", "Pharmacies"]}
          >
            {list.map((o) => (
              <tr>
                <td>
                  <a href={pageUrl(`orders/${o.id}`)}>Order {o.id}</a>
                </td>
                <td>
                  <Badge tone={toneOfState(o.state)}>{o.state}</Badge>
                </td>
                <td>
                  <Time at={o.createdAt} />
                </td>
                <td>
                  <Time at={o.deadline} />
                </td>
                <td>
                  {o.pharmacies.map((p) => (
                    <span class="pharmacy-state">
                      {p.licence}: <Badge tone={toneOfState(p.state)}>{p.state}</Badge>{" "}
                    </span>
                  ))}
                </td>
              </tr>
            ))}
          </DataTable>
        </>
      ) : null}
      <TriggerOrder />
    </>
  );
}
