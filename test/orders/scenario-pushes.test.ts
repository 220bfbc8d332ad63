import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app.js";
import type { SandboxOptions } from "../../src/config/options.js";
import {
  medicationRequestsOf,
  type OrderView,
  type PushInbox,
  pushesSettled,
  pushInbox,
  quietLogger,
  subscribeAll,
  taskOf,
  useFakeClock,
} from "./pharmacy-client.js";

/** A fixture pharmacy whose endpoint is the inbox channel of the same name. */
const FIXTURE = `fixtures:
  pharmacies:
    - licence: FX-1
      name: Fixture pharmacy
      endpoint: http://fx-1.pharmacy.test/hook
`;

const cleanups: Array<() => unknown> = [];
afterEach(() => {
  vi.useRealTimers();
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function scenarioDir(yaml: string): string {
  const dir = mkdtempSync(join(tmpdir(), "scenario-pushes-"));
  writeFileSync(join(dir, "pushes.yaml"), yaml);
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Fake timers first: the `on: start` pushes are scheduled while the app is built. */
function start(yaml: string, options: Partial<SandboxOptions> = {}, logger = quietLogger) {
  useFakeClock();
  const inbox = pushInbox();
  const sandbox = createApp(
    { scenarios: scenarioDir(yaml), pushBackoffMs: 1, ...options },
    { fetch: inbox.fetch, logger },
  );
  cleanups.push(sandbox.close);
  return { sandbox, app: sandbox.app, inbox };
}

async function orders(app: ReturnType<typeof start>["app"]): Promise<OrderView[]> {
  return ((await (await app.request("/__admin/orders")).json()) as { orders: OrderView[] }).orders;
}

/** Waits until every push of every order was answered. */
async function delivered(
  sandbox: ReturnType<typeof start>["sandbox"],
  inbox: PushInbox,
  licence: string,
  count: number,
) {
  for (const order of sandbox.orders.list()) await pushesSettled(sandbox, order.id);
  expect(inbox.channel(licence).received).toHaveLength(count);
}

describe("scenario push entries (push:)", () => {
  it("on start, after a delay: one order to the fixture pharmacy, no sooner", async () => {
    const { sandbox, app, inbox } = start(`${FIXTURE}push:
  - name: later
    after: 5s
`);
    vi.advanceTimersByTime(4999);
    expect(await orders(app)).toEqual([]);
    vi.advanceTimersByTime(1);
    const [order, ...more] = await orders(app);
    expect(more).toEqual([]);
    expect(order?.pharmacies.map((p) => p.licence)).toEqual(["FX-1"]);
    const push = await inbox.channel("FX-1").next();
    expect(taskOf(push.bundle).owner?.identifier?.value).toBe("FX-1");
    await delivered(sandbox, inbox, "FX-1", 1);
  });

  it("every with times: 3 makes exactly 3 orders, then no more", async () => {
    const { sandbox, app, inbox } = start(`${FIXTURE}push:
  - name: thrice
    every: 10s
    times: 3
`);
    vi.advanceTimersByTime(0);
    expect(await orders(app)).toHaveLength(1);
    vi.advanceTimersByTime(9999);
    expect(await orders(app)).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(await orders(app)).toHaveLength(2);
    vi.advanceTimersByTime(10_000);
    expect(await orders(app)).toHaveLength(3);
    vi.advanceTimersByTime(60 * 60_000);
    const all = await orders(app);
    expect(all.map((o) => o.id)).toEqual(["1", "2", "3"]);
    expect(all.map((o) => Date.parse(o.createdAt) - Date.parse(all[0]?.createdAt ?? ""))).toEqual([0, 10_000, 20_000]);
    await delivered(sandbox, inbox, "FX-1", 3);
  });

  it("on subscribed: an order goes to the pharmacy that just subscribed, each time one does", async () => {
    const { sandbox, app, inbox } = start(`push:
  - name: welcome
    on: subscribed
    after: 2s
    order: { deadline: 45s }
`);
    vi.advanceTimersByTime(60_000);
    expect(await orders(app)).toEqual([]);

    await subscribeAll(app, inbox, ["PH-A"]);
    vi.advanceTimersByTime(1999);
    expect(await orders(app)).toEqual([]);
    vi.advanceTimersByTime(1);
    await subscribeAll(app, inbox, ["PH-B"]);
    vi.advanceTimersByTime(2000);
    const all = await orders(app);
    expect(all.map((o) => o.pharmacies.map((p) => p.licence))).toEqual([["PH-A"], ["PH-B"]]);
    expect(all.map((o) => Date.parse(o.deadline) - Date.parse(o.createdAt))).toEqual([45_000, 45_000]);
    await delivered(sandbox, inbox, "PH-A", 1);
    await delivered(sandbox, inbox, "PH-B", 1);
  });

  it("an explicit order: its items, deadline and pharmacies", async () => {
    const { sandbox, app, inbox } = start(`${FIXTURE}    - licence: FX-2
      endpoint: http://fx-2.pharmacy.test/hook
push:
  - order:
      pharmacies: [FX-2]
      deadline: 90s
      items:
        - medication: { code: "197361", display: amlodipine 5 MG Oral Tablet }
          quantity: 28
          unit: tablet
          dosage: 1 tablet once daily
`);
    vi.advanceTimersByTime(0);
    const [order] = await orders(app);
    expect(order?.pharmacies.map((p) => p.licence)).toEqual(["FX-2"]);
    expect(Date.parse(order?.deadline ?? "") - Date.parse(order?.createdAt ?? "")).toBe(90_000);
    const push = await inbox.channel("FX-2").next();
    const [request, ...more] = medicationRequestsOf(push.bundle);
    expect(more).toEqual([]);
    expect(request?.medicationCodeableConcept?.coding?.[0]).toMatchObject({
      code: "197361",
      display: "amlodipine 5 MG Oral Tablet",
    });
    expect(request?.dispenseRequest?.quantity).toEqual({ value: 28, unit: "tablet" });
    expect(request?.dosageInstruction?.[0]?.text).toBe("1 tablet once daily");
    await delivered(sandbox, inbox, "FX-1", 0);
  });

  it("POST /__admin/reset runs the start pushes again, counting afresh", async () => {
    const { sandbox, app, inbox } = start(`${FIXTURE}push:
  - after: 1s
    every: 1s
    times: 2
`);
    vi.advanceTimersByTime(1000);
    expect(await orders(app)).toHaveLength(1);
    await delivered(sandbox, inbox, "FX-1", 1);
    // reset halfway: the second push of the first run never comes
    expect((await app.request("/__admin/reset", { method: "POST" })).status).toBe(200);
    expect(await orders(app)).toEqual([]);
    vi.advanceTimersByTime(999);
    expect(await orders(app)).toEqual([]);
    vi.advanceTimersByTime(1);
    expect((await orders(app)).map((o) => o.id)).toEqual(["1"]);
    vi.advanceTimersByTime(60_000);
    expect((await orders(app)).map((o) => o.id)).toEqual(["1", "2"]);
    await delivered(sandbox, inbox, "FX-1", 3);
  });

  it("a push with no pharmacy to go to makes no order and says why in the log", async () => {
    const errors: string[] = [];
    const { app } = start(
      "push:\n  - name: lonely\n",
      {},
      { info: () => undefined, error: (m: string) => errors.push(m) },
    );
    vi.advanceTimersByTime(0);
    expect(await orders(app)).toEqual([]);
    expect(errors.join("\n")).toMatch(/lonely.*No pharmacy has an active subscription/s);
  });

  describe("times is bounded", () => {
    it.each([
      [1001, false],
      [0, false],
      [2.5, false],
      [1000, true],
    ])("times: %s loads: %s", (times, loads) => {
      const build = () => start(`${FIXTURE}push:\n  - every: 1m\n    times: ${times}\n`);
      if (loads) expect(build).not.toThrow();
      else expect(build).toThrow(/times/);
    });

    it("POST /__admin/scenarios refuses times above 1000 too", async () => {
      const { app } = start(FIXTURE);
      const res = await app.request("/__admin/scenarios", {
        method: "POST",
        headers: { "content-type": "application/yaml" },
        body: "push:\n  - every: 1s\n    times: 5000\n",
      });
      expect(res.status).toBe(400);
      expect(JSON.stringify(await res.json())).toMatch(/times/);
    });
  });
});
