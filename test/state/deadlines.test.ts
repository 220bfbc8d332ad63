import { afterEach, describe, expect, it } from "vitest";
import { killStray } from "../cli/cli-process.js";
import { startReceiver } from "../support/receiver.js";
import { exampleOf, factsOf, type PharmacyPlan, StateSandbox, tempDir } from "./state-sandbox.js";

/**
 * A confirmation deadline that passed while the sandbox was down fires when it starts again: the order is expired
 * or allocated as the allocation policy says (CONTRACT §8, --allocation), not left open for ever.
 */

afterEach(killStray);
const receivers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const r of receivers.splice(0)) await r.close();
});

const PATIENT = "784-1990-1234567-6";
/** Long enough for the order to be delivered (and confirmed) and the sandbox stopped before it passes. */
const DEADLINE = "2s";

/**
 * Under `allocation`, an order to one pharmacy (confirmed or not) with a short deadline; the sandbox stopped by
 * `signal` before the deadline and started after it. Returns the order as the new start shows it, once the deadline
 * fired, and when that start began.
 */
async function deadlineWhileDown(allocation: string, confirm: boolean, signal: "SIGTERM" | "SIGKILL") {
  const receiver = await startReceiver();
  receivers.push(receiver);
  const first = await StateSandbox.start(["--state-file", `${tempDir()}/state.db`, "--allocation", allocation]);
  const pharmacy: PharmacyPlan = { licence: "PH-A", name: "Pharmacy A", endpoint: receiver.url };
  const subscribed = await first.send(
    exampleOf("subscribe-order-notifications", { url: first.url, patient: PATIENT, pharmacy }),
  );
  expect(subscribed.status, subscribed.text).toBe(200);
  const created = await first.admin("/orders", {
    method: "POST",
    body: { pharmacies: ["PH-A"], deadline: DEADLINE },
  });
  expect(created.status, created.text).toBe(201);
  const order = await first.orderWhen(created.json.id, (o) => o.pharmacies[0]?.delivery.deliveredAt != null);
  if (confirm) {
    const confirmed = await first.send(
      exampleOf("confirm-drugs-availability", {
        url: first.url,
        patient: PATIENT,
        pharmacy,
        order: factsOf(order, "PH-A"),
      }),
    );
    expect(confirmed.status, confirmed.text).toBe(200);
  }
  // Still open when the sandbox stops: the deadline is yet to come.
  expect((await first.admin(`/orders/${order.id}`)).json.state).toBe("open");
  await first.stop(signal);

  // Waiting on the clock is the point here: the deadline must pass while nothing runs.
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(order.deadline) - Date.now() + 100)));
  const startedAt = Date.now();
  const second = await first.restart();
  const after = await second.orderWhen(order.id, (o) => o.state !== "open");
  return { after, startedAt, receiver, url: second.url };
}

describe("a confirmation deadline that passed while the sandbox was down", { timeout: 30_000 }, () => {
  it("fires at start: first-confirmed expires the unconfirmed order; best-at-deadline allocates the confirmed one", async () => {
    const [expired, allocated] = await Promise.all([
      deadlineWhileDown("first-confirmed", false, "SIGTERM"),
      deadlineWhileDown("best-at-deadline", true, "SIGKILL"),
    ]);

    expect(expired.after.state).toBe("expired");
    expect(expired.after.pharmacies.map((p) => p.state)).toEqual(["expired"]);
    // It fired at the new start, not before the stop.
    expect(Date.parse(expired.after.history.at(-1)?.at ?? "")).toBeGreaterThanOrEqual(expired.startedAt);
    expect(expired.receiver.received.length).toBe(1);

    expect(allocated.after).toMatchObject({ state: "allocated", allocatedTo: "PH-A" });
    expect(Date.parse(allocated.after.history.at(-1)?.at ?? "")).toBeGreaterThanOrEqual(allocated.startedAt);
    // The pharmacy is told, by the allocation push, after its fulfillment request.
    await allocated.receiver.next();
    const push = await allocated.receiver.next();
    expect(push.bundle.entry[0].resource.eventCoding.code).toBe("order-allocation");
    // Sent once the sandbox listened: it names where it is.
    expect(push.bundle.entry[0].resource.source.endpoint).toBe(`${allocated.url}/uae-fhir/r4/$process-message`);
  });
});
