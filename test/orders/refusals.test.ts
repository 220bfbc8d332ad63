import type { Bundle, MedicationDispense, MedicationRequest, OperationOutcome, Task } from "fhir/r4.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app.js";
import type { SandboxOptions } from "../../src/config/options.js";
import { messageBundle, post, type Reply, responseHeader } from "../support/messages.js";
import {
  confirm,
  confirmationTask,
  diagnosticsOf,
  dispense,
  dispensesFor,
  fromPharmacy,
  type PharmacySandbox,
  type PlacedOrder,
  placeOrder,
  pushesSettled,
  quietLogger,
  receiveAllocation,
  subscribe,
  TWO_ITEMS,
  useFakeClock,
  withPharmacies,
} from "./pharmacy-client.js";

const LICENCES = ["PH-A", "PH-B"] as const;

const closers: Array<() => unknown> = [];
afterEach(() => {
  vi.useRealTimers();
  for (const close of closers.splice(0)) close();
});

/** A sandbox with PH-A and PH-B subscribed and one order sent to both. */
interface Flow extends PharmacySandbox, PlacedOrder {
  /** PH-A confirms everything available (allocated at once under first-confirmed) and the allocation push is answered. */
  allocateToA(): Promise<void>;
  /** PH-A, allocated, dispenses everything as ordered. */
  dispenseByA(): Promise<void>;
  /** Advances fake time past the deadline. */
  passDeadline(): void;
}

async function flow(
  options: Partial<SandboxOptions>,
  order: unknown = { ...TWO_ITEMS, deadline: "30s" },
): Promise<Flow> {
  const p = await withPharmacies((inbox) => {
    const sandbox = createApp({ pushBackoffMs: 1, ...options }, { fetch: inbox.fetch, logger: quietLogger });
    closers.push(sandbox.close);
    return sandbox;
  }, LICENCES);
  const placed = await placeOrder(p, order);
  const f: Flow = {
    ...p,
    ...placed,
    async allocateToA() {
      expect(
        responseHeader((await confirm(p.app, "PH-A", placed.task("PH-A"), { availability: "available" })).body).response
          ?.code,
      ).toBe("ok");
      await p.inbox.channel("PH-A").next();
      await pushesSettled(p.sandbox, placed.order.id);
    },
    async dispenseByA() {
      expect(responseHeader((await dispense(p.app, "PH-A", dispensesFor(placed.requests))).body).response?.code).toBe(
        "ok",
      );
    },
    passDeadline() {
      vi.advanceTimersByTime(30_000);
    },
  };
  return f;
}

const ok = async (reply: Promise<Reply>) => expect(responseHeader((await reply).body).response?.code).toBe("ok");
const partialOf = (f: Flow) => ({ availability: "partial" as const, items: [f.requests[0]?.id as string] });
const cancel = async (f: Flow) =>
  expect((await f.app.request(`/__admin/orders/${f.order.id}/cancel`, { method: "POST" })).status).toBe(200);
const unsubscribe = async (f: Flow, licence: string) =>
  expect((await subscribe(f.app, licence, f.inbox.channel(licence).url, { status: "off" })).status).toBe(200);

interface RefusalCase {
  name: string;
  options?: Partial<SandboxOptions>;
  order?: unknown;
  fake?: boolean;
  /** Brings the order to the state in question. */
  arrange(f: Flow): Promise<void> | void;
  /** The message that is refused. */
  send(f: Flow): Promise<Reply>;
  code: string;
  /** What the diagnostic must say: mostly the order's state. */
  says: RegExp[];
}

const CASES: RefusalCase[] = [
  {
    name: "confirm after the deadline (the order expired)",
    fake: true,
    arrange: (f) => f.passDeadline(),
    send: (f) => confirm(f.app, "PH-A", f.task("PH-A"), { availability: "available" }),
    code: "business-rule",
    says: [/expired/],
  },
  {
    name: "confirm after the deadline while the order waits for a manual allocation",
    options: { allocation: "manual" },
    fake: true,
    arrange: async (f) => {
      await ok(confirm(f.app, "PH-B", f.task("PH-B"), { availability: "available" }));
      f.passDeadline();
    },
    send: (f) => confirm(f.app, "PH-A", f.task("PH-A"), { availability: "available" }),
    code: "business-rule",
    says: [/deadline/, /expired/, /open/],
  },
  {
    name: "confirm twice",
    arrange: (f) => ok(confirm(f.app, "PH-A", f.task("PH-A"), partialOf(f))),
    send: (f) => confirm(f.app, "PH-A", f.task("PH-A"), { availability: "available" }),
    code: "duplicate",
    says: [/already confirmed/, /open/],
  },
  {
    name: "confirm an order already allocated to another pharmacy",
    arrange: (f) => f.allocateToA(),
    send: (f) => confirm(f.app, "PH-B", f.task("PH-B"), { availability: "available" }),
    code: "business-rule",
    says: [/allocated/, /PH-A/],
  },
  {
    name: "confirm a cancelled order",
    arrange: cancel,
    send: (f) => confirm(f.app, "PH-A", f.task("PH-A"), { availability: "available" }),
    code: "business-rule",
    says: [/cancelled/],
  },
  {
    name: "confirm a dispensed order",
    arrange: async (f) => {
      await f.allocateToA();
      await f.dispenseByA();
    },
    send: (f) => confirm(f.app, "PH-B", f.task("PH-B"), { availability: "available" }),
    code: "business-rule",
    says: [/dispensed/],
  },
  {
    name: "confirm a Task sent to another pharmacy",
    arrange: () => undefined,
    send: (f) => confirm(f.app, "PH-B", f.task("PH-A"), { availability: "available" }),
    code: "business-rule",
    says: [/sent to pharmacy PH-A, not to PH-B/, /open/],
  },
  {
    name: "confirm an unknown Task id",
    arrange: () => undefined,
    send: (f) => confirm(f.app, "PH-A", { ...f.task("PH-A"), id: "no-such-task" }, { availability: "available" }),
    code: "not-found",
    says: [/Task\/no-such-task is not a fulfillment request/],
  },
  {
    name: "receive-allocation while the order is open",
    arrange: (f) => ok(confirm(f.app, "PH-A", f.task("PH-A"), partialOf(f))),
    send: (f) => receiveAllocation(f.app, "PH-A", f.task("PH-A").id as string),
    code: "business-rule",
    says: [/open/],
  },
  {
    name: "receive-allocation once the order expired",
    fake: true,
    arrange: (f) => f.passDeadline(),
    send: (f) => receiveAllocation(f.app, "PH-A", f.task("PH-A").id as string),
    code: "business-rule",
    says: [/expired/],
  },
  {
    name: "receive-allocation once the order was cancelled",
    arrange: cancel,
    send: (f) => receiveAllocation(f.app, "PH-B", f.task("PH-B").id as string),
    code: "business-rule",
    says: [/cancelled/],
  },
  {
    name: "receive-allocation of an unknown Task",
    arrange: (f) => f.allocateToA(),
    send: (f) => receiveAllocation(f.app, "PH-A", "no-such-task"),
    code: "not-found",
    says: [/no-such-task/],
  },
  {
    name: "dispense before the allocation",
    arrange: (f) => ok(confirm(f.app, "PH-A", f.task("PH-A"), partialOf(f))),
    send: (f) => dispense(f.app, "PH-A", dispensesFor(f.requests)),
    code: "business-rule",
    says: [/open/, /not allocated/],
  },
  {
    name: "dispense from a pharmacy that was not allocated",
    arrange: (f) => f.allocateToA(),
    send: (f) => dispense(f.app, "PH-B", dispensesFor(f.requests)),
    code: "business-rule",
    says: [/allocated to PH-A, not to PH-B/],
  },
  {
    name: "dispense twice",
    arrange: async (f) => {
      await f.allocateToA();
      await f.dispenseByA();
    },
    send: (f) => dispense(f.app, "PH-A", dispensesFor(f.requests)),
    code: "duplicate",
    says: [/dispensed/],
  },
  {
    name: "dispense more than ordered",
    arrange: (f) => f.allocateToA(),
    send: (f) => dispense(f.app, "PH-A", dispensesFor(f.requests.slice(0, 1), { quantity: 61 })),
    code: "business-rule",
    says: [/61 is above the ordered quantity 60/, /allocated/],
  },
  {
    name: "dispense with an authorizingPrescription that is not of an order",
    arrange: (f) => f.allocateToA(),
    send: (f) =>
      dispense(f.app, "PH-A", dispensesFor([{ ...(f.requests[0] as MedicationRequest), id: "not-an-order" }])),
    code: "not-found",
    says: [/authorizingPrescription/],
  },
  {
    name: "dispense (completed Task) of a device order before the allocation",
    order: { items: [{ device: { code: "58938008", display: "Wheelchair" } }] },
    arrange: (f) => ok(confirm(f.app, "PH-A", f.task("PH-A"), { availability: "unavailable" })),
    send: (f) => dispense(f.app, "PH-A", [{ ...f.task("PH-A"), status: "completed" }]),
    code: "business-rule",
    says: [/open/],
  },
  {
    name: "confirm from a pharmacy that unsubscribed",
    arrange: (f) => unsubscribe(f, "PH-A"),
    send: (f) => confirm(f.app, "PH-A", f.task("PH-A"), { availability: "available" }),
    code: "business-rule",
    says: [/PH-A has no active subscription/],
  },
  {
    name: "receive-allocation from a pharmacy that never subscribed",
    arrange: (f) => f.allocateToA(),
    send: (f) => receiveAllocation(f.app, "PH-ZZ", f.task("PH-A").id as string),
    code: "business-rule",
    says: [/PH-ZZ has no active subscription/],
  },
  {
    name: "dispense from the allocated pharmacy after it unsubscribed",
    arrange: async (f) => {
      await f.allocateToA();
      await unsubscribe(f, "PH-A");
    },
    send: (f) => dispense(f.app, "PH-A", dispensesFor(f.requests)),
    code: "business-rule",
    says: [/PH-A has no active subscription/],
  },
];

/** What must not change: the order as the admin API shows it, the pharmacies, and the pushes made. */
async function snapshot(f: Flow) {
  const order = await (await f.app.request(`/__admin/orders/${f.order.id}`)).json();
  const pharmacies = await (await f.app.request("/__admin/pharmacies")).json();
  const pushes = LICENCES.map((l) => f.inbox.channel(l).received.length);
  return { order, pharmacies, pushes };
}

describe.each([
  ["message", 200],
  ["http", 422],
] as const)("refused drug-order messages (--business-errors %s → %i)", (businessErrors, status) => {
  it.each(CASES)("$name", async (c) => {
    if (c.fake) useFakeClock();
    const f = await flow({ businessErrors, ...c.options }, c.order);
    await c.arrange(f);
    await pushesSettled(f.sandbox, f.order.id);
    const before = await snapshot(f);

    const reply = await c.send(f);
    expect(reply.status).toBe(status);
    const header = responseHeader(reply.body);
    expect(header.response?.code).toBe("fatal-error");
    const details = (reply.body as Bundle).entry?.find(
      (e) => e.fullUrl === header.response?.details?.reference,
    )?.resource;
    expect(details?.resourceType).toBe("OperationOutcome");
    const issues = (details as OperationOutcome).issue;
    expect(issues.map((i) => i.code)).toContain(c.code);
    for (const i of issues) expect(i.severity).toMatch(/^(error|fatal)$/);
    const diagnostics = diagnosticsOf(reply.body);
    for (const says of c.says) expect(diagnostics).toMatch(says);

    expect(await snapshot(f)).toEqual(before);
  });
});

describe("drug-order messages that are not processed (400)", () => {
  const withoutOwner = (task: Task): Task => {
    const { owner: _owner, ...rest } = task;
    return rest;
  };

  it.each([
    {
      name: "a confirmation naming no pharmacy (no MessageHeader.sender, no Task.owner)",
      send: (f: Flow) =>
        post(
          f.app,
          messageBundle("confirm-drugs-availability", [
            confirmationTask(withoutOwner(f.task("PH-A")), { availability: "available" }),
          ]),
        ),
      says: /MessageHeader\.sender/,
    },
    {
      name: "a confirmation whose Task status is neither accepted nor rejected",
      send: (f: Flow) =>
        post(
          f.app,
          fromPharmacy("confirm-drugs-availability", "PH-A", [
            { ...confirmationTask(f.task("PH-A"), { availability: "available" }), status: "completed" },
          ]),
        ),
      says: /accepted .*rejected/,
    },
    {
      name: "a subscription with a malformed channel.header",
      send: (f: Flow) =>
        subscribe(f.app, "PH-A", "http://ph-a2.pharmacy.test/hook", { headers: ["X-Api-Key: fine", "no colon here"] }),
      says: /Name: value/,
    },
    {
      name: "a subscription endpoint whose host --push-allow does not allow",
      send: (f: Flow) => subscribe(f.app, "PH-A", "http://attacker.example.com/hook"),
      says: /attacker\.example\.com.*--push-allow/,
    },
    {
      name: "a subscription endpoint that is not http(s)",
      send: (f: Flow) => subscribe(f.app, "PH-C", "ftp://ph-c.pharmacy.test/hook"),
      says: /http:\/\/ or https:\/\//,
    },
    {
      name: "a subscription endpoint with a file: URL",
      send: (f: Flow) => subscribe(f.app, "PH-A", "file:///etc/passwd"),
      says: /http:\/\/ or https:\/\//,
    },
    {
      name: "a MedicationDispense without whenHandedOver",
      allocate: true,
      send: (f: Flow) => dispense(f.app, "PH-A", dispensesFor(f.requests, { whenHandedOver: null })),
      says: /whenHandedOver/,
    },
    {
      name: "a MedicationDispense without authorizingPrescription",
      allocate: true,
      send: (f: Flow) => {
        const [first] = dispensesFor(f.requests) as [MedicationDispense];
        const { authorizingPrescription: _, ...rest } = first;
        return dispense(f.app, "PH-A", [rest]);
      },
      says: /authorizingPrescription/,
    },
    {
      name: "receive-allocation with a Task without an id",
      allocate: true,
      send: (f: Flow) =>
        post(
          f.app,
          fromPharmacy("receive-allocation", "PH-A", [{ resourceType: "Task", status: "requested", intent: "order" }]),
        ),
      says: /Task\.id is required/,
    },
  ])("$name", async ({ send, says, allocate }) => {
    const f = await flow({ pushAllow: ["*.pharmacy.test"] });
    if (allocate) await f.allocateToA();
    const before = await snapshot(f);
    const reply = await send(f);
    expect(reply.status).toBe(400);
    expect(reply.body.resourceType).toBe("OperationOutcome");
    expect(diagnosticsOf(reply.body)).toMatch(says);
    expect(await snapshot(f)).toEqual(before);
  });
});
