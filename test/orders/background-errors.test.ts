import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createApp, type Logger } from "../../src/app.js";
import type { Order } from "../../src/orders/order.js";
import { within } from "../support/within.js";
import {
  confirm,
  newOrder,
  type PharmacySandbox,
  pushInbox,
  taskOf,
  useFakeClock,
  withPharmacies,
} from "./pharmacy-client.js";

/**
 * Work the order workflow does in the background (after a push is answered,
 * at the confirmation deadline) must not end as an unhandled rejection or an
 * uncaught exception when something it calls throws: the failure goes to the
 * logger, and the sandbox keeps serving (issue 10, defect 11).
 */

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
const closers: Array<() => unknown> = [];

beforeEach(() => {
  unhandled.length = 0;
  process.on("unhandledRejection", onUnhandled);
});
afterEach(() => {
  process.off("unhandledRejection", onUnhandled);
  for (const close of closers.splice(0)) close();
  vi.useRealTimers();
});

/** A logger that records errors and lets a test wait for the next one. */
function recordingLogger() {
  const errors: Array<{ message: string; error: unknown }> = [];
  let waiting: (() => void) | undefined;
  const logger: Logger = {
    info: () => undefined,
    error: (message, error) => {
      errors.push({ message, error });
      waiting?.();
    },
  };
  const next = () => within(new Promise<void>((resolve) => (waiting = resolve)), "an error logged");
  return { logger, errors, next };
}

/** One event-loop turn and its microtasks: when Node reports a rejection nobody handled. */
const turn = () => new Promise((resolve) => setImmediate(resolve));

async function sandboxWithFailingObserver(failOn: RegExp) {
  const log = recordingLogger();
  const pharmacies: PharmacySandbox = await withPharmacies(
    (inbox) => {
      const sandbox = createApp({ pushBackoffMs: 1 }, { fetch: inbox.fetch, logger: log.logger });
      closers.push(sandbox.close);
      // An observer of order updates that fails on the update made when a push is answered.
      sandbox.events.on("order:updated", (order: Order) => {
        if (failOn.test(order.history.at(-1)?.event ?? "")) throw new Error("observer failed");
      });
      return sandbox;
    },
    ["PH-A"],
  );
  return { ...pharmacies, log };
}

describe("background work of the order workflow", () => {
  it("a failure after the fulfillment push is answered is logged, not an unhandled rejection", async () => {
    const s = await sandboxWithFailingObserver(/^PH-A: delivered$/);
    const logged = s.log.next();

    const order = await newOrder(s.app);
    await logged;
    await turn();
    await turn();

    expect(unhandled).toEqual([]);
    expect(s.log.errors).toEqual([
      {
        message: expect.stringMatching(/order 1.*PH-A.*order-fulfillment-request/),
        error: expect.objectContaining({ message: "observer failed" }),
      },
    ]);
    expect(order.state).toBe("open");
    expect(s.sandbox.orders.get(order.id)?.pharmacies[0]?.state).toBe("delivered");
  });

  it("a failure after the allocation push is answered is logged, not an unhandled rejection", async () => {
    const s = await sandboxWithFailingObserver(/allocation delivered$/);
    const order = await newOrder(s.app);
    const push = await s.inbox.channel("PH-A").next();
    const logged = s.log.next();

    const reply = await confirm(s.app, "PH-A", taskOf(push.bundle), { availability: "available" });
    expect(reply.status).toBe(200);
    await logged;
    await turn();
    await turn();

    expect(unhandled).toEqual([]);
    expect(s.log.errors.map((e) => e.message)).toEqual([expect.stringMatching(/order 1.*PH-A.*order-allocation/)]);
    expect(s.sandbox.orders.get(order.id)?.state).toBe("allocated");
  });
});

describe("timers of the order workflow", () => {
  it("a failure at the confirmation deadline is logged, not an uncaught exception", async () => {
    useFakeClock();
    const s = await sandboxWithFailingObserver(/expired at the deadline$/);
    const order = await newOrder(s.app, { deadline: 1_000 });
    await s.inbox.channel("PH-A").next();

    await vi.advanceTimersByTimeAsync(1_000);

    expect(s.log.errors.map((e) => e.message)).toEqual([`order ${order.id}: the confirmation deadline failed`]);
    expect(s.sandbox.orders.get(order.id)?.state).toBe("expired");
  });

  it("a failure of a scheduled scenario push is logged, not an uncaught exception", async () => {
    useFakeClock();
    const dir = mkdtempSync(join(tmpdir(), "scheduled-push-"));
    closers.push(() => rmSync(dir, { recursive: true, force: true }));
    const inbox = pushInbox();
    writeFileSync(
      join(dir, "push.yaml"),
      [
        "fixtures:",
        "  pharmacies:",
        `    - { licence: PH-A, endpoint: "${inbox.channel("PH-A").url}" }`,
        "push:",
        "  - name: later",
        "    after: 1s",
      ].join("\n"),
    );
    const log = recordingLogger();
    const sandbox = createApp({ scenarios: dir, watch: false }, { fetch: inbox.fetch, logger: log.logger });
    closers.push(sandbox.close);
    sandbox.events.on("order:updated", (order: Order) => {
      if (/^created for/.test(order.history.at(-1)?.event ?? "")) throw new Error("observer failed");
    });

    await vi.advanceTimersByTimeAsync(1_000);

    expect(log.errors.map((e) => e.message)).toEqual([expect.stringMatching(/scenario push later/)]);
  });
});
