import type { Patient, Task } from "fhir/r4.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { SandboxOptions } from "../../src/config/options.js";
import { focusOf, responseHeader } from "../support/messages.js";
import {
  type ConfirmationSpec,
  confirm,
  orderView,
  type PharmacySandbox,
  pharmacyIn,
  placeOrder,
  pushesSettled,
  receiveAllocation,
  sandboxWith,
  TWO_ITEMS,
  taskOf,
  useFakeClock,
} from "./pharmacy-client.js";

const closers: Array<() => unknown> = [];
afterEach(() => {
  vi.useRealTimers();
  for (const close of closers.splice(0)) close();
});

const open = (options: Partial<SandboxOptions>, licences: readonly string[]) => sandboxWith(closers, options, licences);

async function allocate(p: PharmacySandbox, orderId: string, body: unknown) {
  const res = await p.app.request(`/__admin/orders/${orderId}/allocate`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return {
    status: res.status,
    body: (await res.json()) as { state?: string; allocatedTo?: string; issue?: Array<{ diagnostics: string }> },
  };
}

const okCode = (reply: { body: unknown }) => responseHeader(reply.body as never).response?.code;

describe("--allocation first-confirmed (default)", () => {
  it.each([
    {
      name: "an earlier partial confirmation does not win; the first available one does, at once",
      steps: [
        ["PH-A", "partial", null],
        ["PH-B", "available", "PH-B"],
      ],
    },
    {
      name: "unavailable does not win",
      steps: [
        ["PH-A", "unavailable", null],
        ["PH-C", "available", "PH-C"],
      ],
    },
    {
      name: "partial confirmations alone leave the order open",
      steps: [
        ["PH-A", "partial", null],
        ["PH-B", "partial", null],
        ["PH-C", "unavailable", null],
      ],
    },
  ] as const)("$name", async ({ steps }) => {
    const p = await open({}, ["PH-A", "PH-B", "PH-C"]);
    const placed = await placeOrder(p, TWO_ITEMS);
    for (const [licence, availability, allocatedTo] of steps) {
      const reply = await confirm(p.app, licence, placed.task(licence), {
        availability,
        ...(availability === "partial" ? { items: [placed.requests[0]?.id as string] } : {}),
      });
      expect(okCode(reply)).toBe("ok");
      const view = await orderView(p.app, placed.order.id);
      expect([view.state, view.allocatedTo]).toEqual(allocatedTo ? ["allocated", allocatedTo] : ["open", null]);
    }
  });

  it("the others become not-allocated (Task cancelled) and their receive-allocation answers ok with that Task", async () => {
    const p = await open({}, ["PH-A", "PH-B", "PH-C"]);
    const placed = await placeOrder(p, TWO_ITEMS);
    expect(
      okCode(
        await confirm(p.app, "PH-A", placed.task("PH-A"), {
          availability: "partial",
          items: [placed.requests[0]?.id as string],
        }),
      ),
    ).toBe("ok");
    const won = await confirm(p.app, "PH-B", placed.task("PH-B"), {
      availability: "available",
      options: [{ method: "pickup", etaMinutes: 15 }],
    });
    expect(okCode(won)).toBe("ok");
    expect(focusOf(won.body)[0]).toMatchObject({ id: placed.task("PH-B").id, status: "in-progress" });

    const allocation = await p.inbox.channel("PH-B").next();
    await pushesSettled(p.sandbox, placed.order.id);
    expect(responseHeader(allocation.bundle).eventCoding?.code).toBe("order-allocation");
    expect(taskOf(allocation.bundle)).toMatchObject({ id: placed.task("PH-B").id, status: "in-progress" });

    const view = await orderView(p.app, placed.order.id);
    expect(view.pharmacies.map((x) => [x.licence, x.state, x.taskStatus, x.businessStatus])).toEqual([
      ["PH-A", "not-allocated", "cancelled", "not-allocated"],
      ["PH-B", "allocated", "in-progress", "allocated"],
      ["PH-C", "not-allocated", "cancelled", "not-allocated"],
    ]);
    expect(pharmacyIn(view, "PH-B").allocationDelivery).toMatchObject({ attempts: 1, status: 200 });
    // only the winner is pushed the allocation
    expect(p.inbox.channel("PH-A").received).toHaveLength(1);
    expect(p.inbox.channel("PH-C").received).toHaveLength(1);

    for (const licence of ["PH-A", "PH-C"]) {
      const reply = await receiveAllocation(p.app, licence, placed.task(licence).id as string);
      expect(okCode(reply), licence).toBe("ok");
      const task = focusOf(reply.body)[0] as Task;
      expect(task, licence).toMatchObject({ id: placed.task(licence).id, status: "cancelled" });
      expect(task.businessStatus?.coding?.[0]?.code, licence).toBe("not-allocated");
      // a pharmacy that was not allocated never sees the patient: only the anonymous one Task.for names
      const patients = (reply.body.entry as Array<{ resource: Patient }>)
        .map((e) => e.resource)
        .filter((r) => r.resourceType === "Patient");
      expect(patients.map((x) => `Patient/${x.id}`)).toEqual([task.for?.reference]);
      expect(patients.map((x) => [x.identifier, x.name])).toEqual([[undefined, undefined]]);
    }
    const winner = await receiveAllocation(p.app, "PH-B", placed.task("PH-B").id as string);
    expect(focusOf(winner.body)[0]).toMatchObject({ status: "in-progress" });
  });
});

interface BestCase {
  name: string;
  items?: number;
  /** In the order they arrive, a second apart. */
  confirms: Array<
    [string, ConfirmationSpec["availability"], { items?: number[]; options?: ConfirmationSpec["options"] }?]
  >;
  winner: string | null;
}

const BEST: BestCase[] = [
  {
    name: "more available items beat a faster delivery",
    confirms: [
      ["PH-A", "partial", { items: [0], options: [{ method: "home-delivery", etaMinutes: 10 }] }],
      ["PH-B", "available", { options: [{ method: "home-delivery", etaMinutes: 120 }] }],
    ],
    winner: "PH-B",
  },
  {
    name: "a partial with more items beats one with fewer",
    items: 3,
    confirms: [
      ["PH-A", "partial", { items: [0], options: [{ method: "pickup", etaMinutes: 5 }] }],
      ["PH-B", "partial", { items: [0, 2], options: [{ method: "pickup", etaMinutes: 90 }] }],
    ],
    winner: "PH-B",
  },
  {
    name: "equally complete: the fastest delivery option wins",
    confirms: [
      ["PH-A", "available", { options: [{ method: "home-delivery", etaMinutes: 60 }] }],
      ["PH-B", "available", { options: [{ method: "home-delivery", etaMinutes: 30 }] }],
      ["PH-C", "available", { options: [{ method: "pickup", etaMinutes: 45 }] }],
    ],
    winner: "PH-B",
  },
  {
    name: "a pharmacy's fastest option counts, wherever it is listed",
    confirms: [
      [
        "PH-A",
        "available",
        {
          options: [
            { method: "pickup", etaMinutes: 240 },
            { method: "home-delivery", etaMinutes: 20 },
          ],
        },
      ],
      ["PH-B", "available", { options: [{ method: "home-delivery", etaMinutes: 30 }] }],
    ],
    winner: "PH-A",
  },
  {
    name: "an option without an ETA counts as slowest",
    confirms: [
      ["PH-A", "available", { options: [{ method: "home-delivery" }] }],
      ["PH-B", "available", { options: [{ method: "home-delivery", etaMinutes: 240 }] }],
    ],
    winner: "PH-B",
  },
  {
    name: "equally complete and fast: the earliest confirmation wins",
    confirms: [
      ["PH-C", "available", { options: [{ method: "pickup", etaMinutes: 30 }] }],
      ["PH-A", "available", { options: [{ method: "pickup", etaMinutes: 30 }] }],
      ["PH-B", "available", { options: [{ method: "pickup", etaMinutes: 30 }] }],
    ],
    winner: "PH-C",
  },
  {
    name: "unavailable never wins",
    confirms: [
      ["PH-A", "unavailable", { options: [{ method: "pickup", etaMinutes: 1 }] }],
      ["PH-B", "partial", { items: [1], options: [{ method: "pickup", etaMinutes: 300 }] }],
    ],
    winner: "PH-B",
  },
  {
    name: "nothing available: the order expires",
    confirms: [
      ["PH-A", "unavailable"],
      ["PH-B", "unavailable"],
    ],
    winner: null,
  },
  { name: "nobody confirmed: the order expires", confirms: [], winner: null },
];

describe("--allocation best-at-deadline", () => {
  it.each(BEST)("$name", async ({ items = 2, confirms, winner }) => {
    useFakeClock();
    const p = await open({ allocation: "best-at-deadline" }, ["PH-A", "PH-B", "PH-C"]);
    const codes = ["861007", "314077", "259255"].slice(0, items);
    const placed = await placeOrder(p, { deadline: "30s", items: codes.map((code) => ({ medication: { code } })) });
    for (const [licence, availability, extra = {}] of confirms) {
      const reply = await confirm(p.app, licence, placed.task(licence), {
        availability,
        ...(extra.options ? { options: extra.options } : {}),
        ...(extra.items ? { items: extra.items.map((i) => placed.requests[i]?.id as string) } : {}),
      });
      expect(okCode(reply), licence).toBe("ok");
      vi.advanceTimersByTime(1000);
    }
    // nothing is allocated before the deadline, however good a confirmation is
    vi.advanceTimersByTime(30_000 - 1000 * confirms.length - 1);
    const before = await orderView(p.app, placed.order.id);
    expect([before.state, before.allocatedTo]).toEqual(["open", null]);
    for (const licence of ["PH-A", "PH-B", "PH-C"]) expect(p.inbox.channel(licence).received, licence).toHaveLength(1);

    vi.advanceTimersByTime(1);
    const view = await orderView(p.app, placed.order.id);
    const confirmed = new Set(confirms.map(([licence]) => licence));
    if (winner === null) {
      expect([view.state, view.allocatedTo]).toEqual(["expired", null]);
    } else {
      expect([view.state, view.allocatedTo]).toEqual(["allocated", winner]);
      const allocation = await p.inbox.channel(winner).next();
      expect(responseHeader(allocation.bundle).eventCoding?.code).toBe("order-allocation");
      await pushesSettled(p.sandbox, placed.order.id);
    }
    for (const x of view.pharmacies) {
      const expected =
        x.licence === winner
          ? "allocated"
          : !confirmed.has(x.licence)
            ? "expired"
            : winner
              ? "not-allocated"
              : "confirmed";
      expect(x.state, x.licence).toBe(expected);
      if (expected === "expired") expect([x.taskStatus, x.businessStatus], x.licence).toEqual(["failed", "expired"]);
      if (expected === "not-allocated")
        expect([x.taskStatus, x.businessStatus], x.licence).toEqual(["cancelled", "not-allocated"]);
    }
    for (const licence of ["PH-A", "PH-B", "PH-C"]) {
      expect(p.inbox.channel(licence).received, licence).toHaveLength(licence === winner ? 2 : 1);
    }
  });
});

describe("--allocation manual", () => {
  it("allocates nothing by itself; POST /__admin/orders/{id}/allocate does, and pushes order-allocation", async () => {
    const p = await open({ allocation: "manual" }, ["PH-A", "PH-B", "PH-C"]);
    const placed = await placeOrder(p);
    const id = placed.order.id;
    expect(okCode(await confirm(p.app, "PH-A", placed.task("PH-A"), { availability: "available" }))).toBe("ok");
    expect(okCode(await confirm(p.app, "PH-B", placed.task("PH-B"), { availability: "unavailable" }))).toBe("ok");
    expect((await orderView(p.app, id)).state).toBe("open");

    const refused = [
      ["PH-C", 409, /not confirmed/],
      ["PH-B", 409, /nothing available/],
      ["PH-NOPE", 404, /not sent to pharmacy PH-NOPE/],
    ] as const;
    for (const [licence, status, says] of refused) {
      const answer = await allocate(p, id, { licence });
      expect(answer.status, licence).toBe(status);
      expect(answer.body.issue?.[0]?.diagnostics, licence).toMatch(says);
    }
    expect((await allocate(p, "999", { licence: "PH-A" })).status).toBe(404);
    for (const bad of [{}, { licence: "" }, { licence: "PH-A", extra: 1 }, "{oops"])
      expect((await allocate(p, id, bad)).status).toBe(400);
    const untouched = await orderView(p.app, id);
    expect([untouched.state, untouched.allocatedTo]).toEqual(["open", null]);
    expect(p.inbox.channel("PH-A").received).toHaveLength(1);

    const done = await allocate(p, id, { licence: "PH-A" });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ state: "allocated", allocatedTo: "PH-A" });
    const allocation = await p.inbox.channel("PH-A").next();
    expect(responseHeader(allocation.bundle).eventCoding?.code).toBe("order-allocation");
    await pushesSettled(p.sandbox, id);
    const view = await orderView(p.app, id);
    expect(view.pharmacies.map((x) => [x.licence, x.state])).toEqual([
      ["PH-A", "allocated"],
      ["PH-B", "not-allocated"],
      ["PH-C", "not-allocated"],
    ]);
    const again = await allocate(p, id, { licence: "PH-A" });
    expect(again.status).toBe(409);
    expect(again.body.issue?.[0]?.diagnostics).toMatch(/allocated/);
  });

  it("at the deadline with a confirmation the order stays open (the unconfirmed expire) and can still be allocated", async () => {
    useFakeClock();
    const p = await open({ allocation: "manual" }, ["PH-A", "PH-B"]);
    const placed = await placeOrder(p, { ...TWO_ITEMS, deadline: "20s" });
    expect(
      okCode(
        await confirm(p.app, "PH-A", placed.task("PH-A"), {
          availability: "partial",
          items: [placed.requests[1]?.id as string],
        }),
      ),
    ).toBe("ok");
    vi.advanceTimersByTime(20_000);
    const view = await orderView(p.app, placed.order.id);
    expect(view.state).toBe("open");
    expect(view.pharmacies.map((x) => [x.licence, x.state, x.taskStatus])).toEqual([
      ["PH-A", "confirmed", "accepted"],
      ["PH-B", "expired", "failed"],
    ]);
    vi.advanceTimersByTime(10 * 60_000);
    expect((await orderView(p.app, placed.order.id)).state).toBe("open");
    expect((await allocate(p, placed.order.id, { licence: "PH-B" })).status).toBe(409);
    expect((await allocate(p, placed.order.id, { licence: "PH-A" })).status).toBe(200);
    await p.inbox.channel("PH-A").next();
    await pushesSettled(p.sandbox, placed.order.id);
    const after = await orderView(p.app, placed.order.id);
    expect(after.pharmacies.map((x) => [x.licence, x.state])).toEqual([
      ["PH-A", "allocated"],
      ["PH-B", "expired"],
    ]);
  });

  it("at the deadline with nothing available the order expires", async () => {
    useFakeClock();
    const p = await open({ allocation: "manual" }, ["PH-A", "PH-B"]);
    const placed = await placeOrder(p, { deadline: "20s" });
    expect(okCode(await confirm(p.app, "PH-A", placed.task("PH-A"), { availability: "unavailable" }))).toBe("ok");
    vi.advanceTimersByTime(20_000);
    expect((await orderView(p.app, placed.order.id)).state).toBe("expired");
    const refused = await allocate(p, placed.order.id, { licence: "PH-A" });
    expect(refused.status).toBe(409);
    expect(refused.body.issue?.[0]?.diagnostics).toMatch(/expired/);
  });
});
