import { afterEach, describe, expect, it } from "vitest";
import { killStray } from "../cli/cli-process.js";
import { type Received, startReceiver } from "../support/receiver.js";
import { within } from "../support/within.js";
import { exampleOf, factsOf, type PharmacyPlan, StateSandbox, tempDir } from "./state-sandbox.js";

/**
 * Pushes that were due when the sandbox went down are sent when it starts again: a fulfillment request and an
 * allocation whose delivery had not ended (the pharmacy had not answered) reach their pharmacy after the restart.
 */

afterEach(killStray);
const receivers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const r of receivers.splice(0)) await r.close();
});

const PATIENT = "784-1990-1234567-6";

/** The event of a push as a receiver got it. */
const eventOf = (push: Received) => push.bundle.entry[0].resource.eventCoding.code;

describe("pushes in flight at a stop", { timeout: 30_000 }, () => {
  for (const signal of ["SIGTERM", "SIGKILL"] as const) {
    it(`after ${signal}: a fulfillment request and an allocation not yet answered are sent again`, async () => {
      // F holds every push unanswered; L answers its fulfillment request and holds its allocation.
      const f = await startReceiver(() => "hang");
      const l = await startReceiver((_, n) => (n === 1 ? { status: 200 } : "hang"));
      receivers.push(f, l);
      const first = await StateSandbox.start(["--state-file", `${tempDir()}/state.db`]);
      const pharmacyF: PharmacyPlan = { licence: "PH-F", name: "Pharmacy F", endpoint: f.url };
      const pharmacyL: PharmacyPlan = { licence: "PH-L", name: "Pharmacy L", endpoint: l.url };
      for (const pharmacy of [pharmacyF, pharmacyL]) {
        const reply = await first.send(
          exampleOf("subscribe-order-notifications", { url: first.url, patient: PATIENT, pharmacy }),
        );
        expect(reply.status, reply.text).toBe(200);
      }
      const toF = await first.admin("/orders", { method: "POST", body: { pharmacies: ["PH-F"] } });
      const toL = await first.admin("/orders", { method: "POST", body: { pharmacies: ["PH-L"] } });
      expect([toF.status, toL.status]).toEqual([201, 201]);
      const order = await first.orderWhen(toL.json.id, (o) => o.pharmacies[0]?.delivery.deliveredAt != null);
      const confirmed = await first.send(
        exampleOf("confirm-drugs-availability", {
          url: first.url,
          patient: PATIENT,
          pharmacy: pharmacyL,
          order: factsOf(order, "PH-L"),
        }),
      );
      expect(confirmed.status, confirmed.text).toBe(200);
      // Both pushes have arrived and wait for an answer when the sandbox stops.
      expect(eventOf(await within(f.next(), "F's fulfillment request"))).toBe("order-fulfillment-request");
      expect(eventOf(await within(l.next(), "L's fulfillment request"))).toBe("order-fulfillment-request");
      expect(eventOf(await within(l.next(), "L's allocation"))).toBe("order-allocation");
      await first.stop(signal);

      const second = await first.restart();
      const again = await within(f.next(), "F's fulfillment request, again");
      const allocation = await within(l.next(), "L's allocation, again");
      expect(eventOf(again)).toBe("order-fulfillment-request");
      expect(eventOf(allocation)).toBe("order-allocation");
      // The same Task as before: the push is the one that was due, not a new order.
      expect(again.bundle.entry[0].resource.focus).toEqual(f.received[0]?.bundle.entry[0].resource.focus);
      expect(allocation.bundle.entry[0].resource.focus).toEqual(l.received[1]?.bundle.entry[0].resource.focus);
      expect((await second.admin(`/orders/${toL.json.id}`)).json.state).toBe("allocated");
    });
  }
});
