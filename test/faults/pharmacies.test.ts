import { afterEach, describe, expect, it } from "vitest";
import { http, killStray, startCli } from "../cli/cli-process.js";
import {
  confirm,
  diagnosticsOf,
  newOrder,
  orderView,
  pharmacyIn,
  subscribe,
  taskOf,
} from "../orders/pharmacy-client.js";
import { responseHeader } from "../support/messages.js";
import { type Received, refusedUrl, startReceiver } from "../support/receiver.js";
import { within } from "../support/within.js";
import { profileMessage, remoteApp, sendMessage, startLoad } from "./load.js";

// Pharmacies that fail, against the real CLI and real receivers on 127.0.0.1: one hangs, one refuses
// connections, one answers 500, one confirms after the deadline. None of them holds up the healthy
// pharmacy or the inbound API, every attempt is journaled, and the late confirmation is refused.

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await killStray();
});

const PUSH_TIMEOUT_MS = 1_000;
const PUSH_ATTEMPTS = 2;
const DEADLINE = "2s";

async function receiver(answer: Parameters<typeof startReceiver>[0]) {
  const r = await startReceiver(answer);
  closers.push(r.close);
  return r;
}

/** What the journal shows of a call (an outbound attempt has a target). */
interface Call {
  at: string;
  durationMs: number;
  target?: string;
  attempt?: number;
  error?: string;
  response: { status: number } | null;
}

const endOf = (c: Call) => Date.parse(c.at) + c.durationMs;

describe("pharmacies that hang, refuse, fail or confirm late", { timeout: 30_000 }, () => {
  it("hold up neither the others nor the inbound API; every attempt is journaled; the late one is refused", async () => {
    const hanging = await receiver(() => "hang");
    const failing = await receiver(() => ({ status: 500, body: '{"error":"pharmacy down"}' }));
    // The healthy pharmacy notes, as each push arrives, whether the hanging one is still holding its request.
    const heldWhileHealthyServed: boolean[] = [];
    const healthy = await receiver(() => {
      heldWhileHealthyServed.push(hanging.stats.open > 0);
      return { status: 200 };
    });
    const late = await receiver(() => ({ status: 200 }));
    const refusing = await refusedUrl();

    const { url } = await startCli([
      "--push-timeout",
      `${PUSH_TIMEOUT_MS}ms`,
      "--push-attempts",
      String(PUSH_ATTEMPTS),
      "--confirm-deadline",
      DEADLINE,
      "--allocation",
      "best-at-deadline",
      "--no-watch",
    ]);
    const app = remoteApp(url);
    const pharmacies = {
      "PH-HANG": hanging.url,
      "PH-REFUSE": refusing,
      "PH-500": failing.url,
      "PH-OK": healthy.url,
      "PH-LATE": late.url,
    };
    for (const [licence, endpoint] of Object.entries(pharmacies)) {
      const reply = await subscribe(app, licence, endpoint);
      expect(responseHeader(reply.body).response?.code, licence).toBe("ok");
    }
    await sendMessage(url, profileMessage());
    const load = startLoad(url, { workers: 2 });

    const order = await newOrder(app, { pharmacies: Object.keys(pharmacies) });
    const request = await within(healthy.next(), "the healthy pharmacy's fulfillment request", 5_000);
    expect(heldWhileHealthyServed).toEqual([true]);

    const confirmed = await confirm(app, "PH-OK", taskOf(request.bundle as never), {
      availability: "available",
      options: [{ method: "pickup", etaMinutes: 30 }],
    });
    expect(responseHeader(confirmed.body).response?.code).toBe("ok");
    const lateRequest: Received = await within(late.next(), "the late pharmacy's fulfillment request", 5_000);

    // At the deadline the order goes to the healthy pharmacy: its allocation push says the deadline passed.
    const allocation = await within(healthy.next(), "the allocation at the deadline", 10_000);
    expect(responseHeader(allocation.bundle).eventCoding?.code).toBe("order-allocation");
    const refused = await confirm(app, "PH-LATE", taskOf(lateRequest.bundle as never), {
      availability: "available",
      options: [{ method: "pickup", etaMinutes: 5 }],
    });
    expect(refused.status).toBe(200);
    expect(responseHeader(refused.body).response?.code).toBe("fatal-error");
    expect(diagnosticsOf(refused.body)).toContain(`Order ${order.id} is allocated (allocated to PH-OK)`);

    // Every attempt is in the journal: the failing pharmacies each tried PUSH_ATTEMPTS times.
    const waited = await http(`${url}/__admin/calls/wait`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        operation: "order-fulfillment-request",
        direction: "outbound",
        atLeast: 2 + 3 * PUSH_ATTEMPTS,
        timeoutMs: 10_000,
      }),
    });
    expect(waited.json.ok).toBe(true);
    const calls = (await http(`${url}/__admin/calls?direction=outbound&operation=order-fulfillment-request`)).json
      .calls as Call[];
    const to = (target: string) => calls.filter((c) => c.target === target);
    expect(to(hanging.url).map((c) => c.error)).toEqual(
      Array(PUSH_ATTEMPTS).fill(`no answer within ${PUSH_TIMEOUT_MS} ms`),
    );
    expect(to(refusing).map((c) => c.error)).toEqual(Array(PUSH_ATTEMPTS).fill(expect.stringMatching(/ECONNREFUSED/)));
    expect(to(failing.url).map((c) => c.response?.status)).toEqual(Array(PUSH_ATTEMPTS).fill(500));
    expect(to(healthy.url).map((c) => c.response?.status)).toEqual([200]);
    // Inbound messages were answered, start to end, while the hanging pharmacy held its first push.
    const held = to(hanging.url)[0] as Call;
    const inbound = (await http(`${url}/__admin/calls?direction=inbound`)).json.calls as Call[];
    const answeredMeanwhile = inbound.filter(
      (c) => Date.parse(c.at) >= Date.parse(held.at) && endOf(c) <= endOf(held) && c.response?.status === 200,
    );
    expect(answeredMeanwhile.length).toBeGreaterThan(0);

    const view = await orderView(app, order.id);
    expect(view.state).toBe("allocated");
    expect(view.allocatedTo).toBe("PH-OK");
    expect(pharmacyIn(view, "PH-HANG").delivery).toMatchObject({ attempts: PUSH_ATTEMPTS, status: null });
    expect(pharmacyIn(view, "PH-REFUSE").delivery).toMatchObject({ attempts: PUSH_ATTEMPTS, status: null });
    expect(pharmacyIn(view, "PH-500").delivery).toMatchObject({ attempts: PUSH_ATTEMPTS, status: 500 });
    expect(pharmacyIn(view, "PH-LATE").state).toBe("expired");

    await load.stop();
    expect(load.failures).toEqual([]);
    expect(load.answered.length).toBeGreaterThan(0);
    expect(load.answered.filter((a) => a.status !== 200)).toEqual([]);
  });
});
