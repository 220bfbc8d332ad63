import { useState } from "hono/jsx/dom";
import { pageUrl } from "../api.js";
import { Badge, DataTable, Time, toneOfStatus, useThrottled } from "../components/common.js";
import { PatientLink, useHeld } from "../components/patient-link.js";
import { useLive } from "../live.js";
import type { CallDetail, CallPage, CallSummary, OrderView } from "../types.js";
import { useData } from "../use-data.js";
import { toneOfState } from "./orders.js";

// The parts of a call's page that look at the sandbox as it is now, not as the call recorded it — the patients
// it names, the other calls of its message (a push's later attempts, resends), the order it is about — and so
// follow the live events.

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** A body as recorded → the message Bundle inside an envelope, else the body itself. */
export function unwrap(body: unknown): { value: unknown; enveloped: boolean } {
  if (isObject(body) && typeof body.content === "string") {
    try {
      return { value: JSON.parse(body.content), enveloped: true };
    } catch {
      // Not JSON inside: shown as it came.
    }
  }
  return { value: body, enveloped: false };
}

/** The resources of a body's Bundle entries. */
function resourcesOf(body: unknown): Array<Record<string, unknown>> {
  const { value } = unwrap(body);
  if (!isObject(value) || !Array.isArray(value.entry)) return [];
  return value.entry.flatMap((e) => (isObject(e) && isObject(e.resource) ? [e.resource] : []));
}

/** The patients a request message is about: its Patient entries' identifiers. */
function patientKeys(body: unknown): string[] {
  return resourcesOf(body).flatMap((r) =>
    r.resourceType === "Patient" && Array.isArray(r.identifier)
      ? r.identifier.flatMap((i) =>
          isObject(i) && typeof i.value === "string"
            ? [`${typeof i.system === "string" ? i.system : ""}|${i.value}`]
            : [],
        )
      : [],
  );
}

/** Resources of an answer other than its MessageHeader and OperationOutcome: what was stored or found. */
function answeredResources(body: unknown): Array<{ index: number; type: string; id: string; version?: string }> {
  const { value } = unwrap(body);
  if (!isObject(value) || !Array.isArray(value.entry)) return [];
  return value.entry.flatMap((e, index) => {
    const r = isObject(e) ? e.resource : undefined;
    if (!isObject(r) || r.resourceType === "MessageHeader" || r.resourceType === "OperationOutcome") return [];
    const meta = isObject(r.meta) ? r.meta : {};
    return [
      {
        index,
        type: String(r.resourceType),
        id: String(r.id ?? ""),
        ...(typeof meta.versionId === "string" ? { version: meta.versionId } : {}),
      },
    ];
  });
}

/** A patient the message names, linked only when the sandbox holds them: a refused message stores nothing. */
function PatientItem({ patientKey, check }: { patientKey: string; check: number }) {
  const held = useHeld(patientKey, check);
  return (
    <li>
      Patient <PatientLink patientKey={patientKey} held={held} />
      {typeof held === "object"
        ? ": profile as the sandbox holds it now"
        : held === "not-held"
          ? ": the sandbox holds no such patient, so there is no profile to show"
          : ""}
    </li>
  );
}

/** What the answer holds, and the patients the message names. */
export function Resources({ call }: { call: CallDetail }) {
  const patients = patientKeys(call.request.body);
  const resources = call.response ? answeredResources(call.response.body) : [];
  const [check, setCheck] = useState(0);
  // A later message may create a patient this one named, a reset may remove one.
  const recheck = useThrottled(() => setCheck((n) => n + 1), 1000);
  useLive(({ event }) => {
    if (event === "ready" || event === "call" || event === "calls-cleared") recheck();
  });
  if (patients.length === 0 && resources.length === 0) return null;
  return (
    <section aria-labelledby="resources">
      <h2 id="resources">Resources</h2>
      <ul>
        {resources.map((r) => (
          <li>
            In the answer: <a href={`#answer-entry-${r.index}`}>{`${r.type}/${r.id}`}</a>
            {r.version ? ` (stored, version ${r.version})` : ""}
          </li>
        ))}
        {patients.map((key) => (
          <PatientItem patientKey={key} check={check} />
        ))}
      </ul>
    </section>
  );
}

/**
 * The calls of the same message: a push's attempts, a message and its resends. Shown when there is more than
 * this one; a later attempt appears as it is made.
 */
export function SameMessage({ call }: { call: CallDetail }) {
  const query = call.messageId
    ? `calls?messageId=${encodeURIComponent(call.messageId)}&order=asc&view=summary&limit=50`
    : null;
  const calls = useData<CallPage>(query);
  const reload = useThrottled(calls.reload, 250);
  useLive(({ event, data }) => {
    if (event === "ready" || event === "calls-cleared") reload();
    else if (event === "call" && (data as CallSummary).messageId === call.messageId) reload();
  });
  const list = calls.data?.calls ?? [];
  if (list.length < 2) return null;
  return (
    <section aria-labelledby="same-message">
      <h2 id="same-message">Calls of this message</h2>
      <DataTable
        caption={
          <>
            Every call with MessageHeader id <code>{call.messageId}</code>, oldest first
          </>
        }
        hiddenCaption
        columns={["Call", "Time", "Direction", "Status"]}
      >
        {list.map((c) => (
          <tr aria-current={c.id === call.id ? "page" : undefined}>
            <td>
              {c.id === call.id ? <>call {c.id} (this one)</> : <a href={pageUrl(`calls/${c.id}`)}>call {c.id}</a>}
            </td>
            <td>
              <Time at={c.at} />
            </td>
            <td>
              {c.direction === "inbound" ? "inbound" : `outbound (attempt ${c.attempt ?? 1})`}
              {c.duplicate ? ", a resend" : ""}
            </td>
            <td>
              <Badge tone={toneOfStatus(c.status)}>{c.status ?? c.fault ?? c.error ?? "no answer"}</Badge>
            </td>
          </tr>
        ))}
      </DataTable>
    </section>
  );
}

/** Ids of the Tasks and MedicationRequests in a call's bodies: what ties a call to an order. */
function orderIds(call: CallDetail): Set<string> {
  const ids = new Set<string>();
  for (const r of [...resourcesOf(call.request.body), ...resourcesOf(call.response?.body ?? null)])
    if ((r.resourceType === "Task" || r.resourceType === "MedicationRequest") && typeof r.id === "string")
      ids.add(r.id);
  return ids;
}

/** The order a call is about (a push of it, a pharmacy's message on its Task), in the state it is in now. */
export function LinkedOrder({ call }: { call: CallDetail }) {
  const ids = orderIds(call);
  const orders = useData<{ orders: OrderView[] }>(ids.size > 0 ? "orders" : null);
  const reload = useThrottled(orders.reload, 250);
  useLive(({ event }) => {
    if (ids.size > 0 && (event === "ready" || event === "order")) reload();
  });
  const order = orders.data?.orders.find(
    (o) => o.pharmacies.some((p) => ids.has(p.taskId)) || o.items.some((i) => ids.has(i.requestId)),
  );
  if (!order) return null;
  const pharmacies = order.pharmacies.filter((p) => ids.has(p.taskId));
  return (
    <section aria-labelledby="linked-order">
      <h2 id="linked-order">Order</h2>
      <p>
        <a href={pageUrl(`orders/${order.id}`)}>Order {order.id}</a>, now{" "}
        <Badge tone={toneOfState(order.state)}>{order.state}</Badge>
        {pharmacies.map((p) => (
          <>
            ; {p.licence}'s request: <Badge tone={toneOfState(p.state)}>{p.state}</Badge>
          </>
        ))}
      </p>
    </section>
  );
}
