import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Task } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { receiverKinds } from "../../src/conformance/kinds/receiver.js";
import type { Plan } from "../../src/conformance/plan-schema.js";
import { Session } from "../../src/conformance/session.js";
import type { SessionReport } from "../../src/conformance/session-report.js";
import type { StepContext } from "../../src/conformance/step-context.js";
import { PushDispatcher } from "../../src/push/dispatcher.js";
import { messageBundle, post } from "../support/messages.js";

/**
 * The receiver kinds in one process, against a receiver the test scripts: how a pharmacy answers a push about an
 * order it never got decides expectRefused (a 4xx, or a 2xx carrying a fatal-error response message, refuses it;
 * anything else takes it or fails), and the message says what it answered.
 */

const closers: Array<() => void> = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

/** A receiver answering every push with `status` and `body`; `pushed` hears each push's body first. */
async function receiver(status: number, body: string, pushed?: (text: string) => void): Promise<string> {
  const server: Server = createServer((req, res) => {
    let text = "";
    req.on("data", (chunk) => {
      text += chunk;
    });
    req.on("end", () => {
      pushed?.(text);
      res.writeHead(status, { "content-type": "application/fhir+json" }).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => server.close());
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/fhir-hook`;
}

const plan: Plan = {
  id: "unknown-order",
  title: "Unknown order",
  version: "1",
  role: "receiver",
  rules: { r: { source: "host", ref: "https://example.org/r", text: "refuse what you never got" } },
  tests: [
    {
      id: "unknown-order-refused",
      title: "refused",
      rule: "r",
      required: true,
      steps: [
        { id: "push-unknown-order", title: "push", pushUnknownOrder: { event: "order-allocation" } },
        { id: "refused", title: "refused", expectRefused: { within: "2s" } },
      ],
    },
  ],
};

async function session(
  pharmacyUrl: string,
  run: Plan = plan,
  app = createApp({ scenarios: undefined }),
  now: () => Date = () => new Date(),
): Promise<SessionReport> {
  closers.push(() => app.close());
  const { workspace } = app;
  workspace.pharmacies.put({ licence: "PH-K", name: "K", endpoint: pharmacyUrl, headers: {}, source: "fixture" });
  const dispatcher = new PushDispatcher(
    { timeoutMs: 2000, attempts: 1, concurrency: 4, backoffMs: 10, allow: [] },
    { fetch, events: workspace.events, now: () => new Date(), monotonic: () => performance.now(), random: Math.random },
  );
  const running = new Session({
    facts: { id: "s1", role: "receiver", operations: [], pharmacyUrl, pharmacyLicence: "PH-K", timeScale: 1 },
    plan: { plan: run, source: "test" },
    workspace,
    sandbox: {
      now,
      newId: () => crypto.randomUUID(),
      publicUrl: () => "http://127.0.0.1:1",
      messageUrl: () => "http://127.0.0.1:1/uae-fhir/r4/$process-message",
      operationIds: () => [],
      deliver: (push) => dispatcher.deliver(push),
    },
    kinds: receiverKinds,
  });
  void running.run();
  return running.done;
}

const responseMessage = (code: string) =>
  JSON.stringify({
    resourceType: "Bundle",
    type: "message",
    entry: [{ resource: { resourceType: "MessageHeader", response: { identifier: "x", code } } }],
  });

describe("expectRefused", () => {
  it.each([
    [404, '{"resourceType":"OperationOutcome"}', "pass", /^refused: 404 after \d+ ms$/],
    [200, responseMessage("fatal-error"), "pass", /^refused: 200 after \d+ ms with a fatal-error response message$/],
    [
      200,
      "",
      "fail",
      /^expected the pharmacy to refuse the order-allocation push of order \d+ \(MessageHeader [0-9a-f]{8}…\) \(a 4xx, or a fatal-error response message\); it answered 200 after \d+ ms: it took a push about an order it never got$/,
    ],
    [
      200,
      responseMessage("ok"),
      "fail",
      /; it answered 200 after \d+ ms \(ok\): it took a push about an order it never got$/,
    ],
    [503, "", "fail", /; it answered 503 after \d+ ms$/],
  ])("an answer %i %s: %s", async (status, body, verdict, message) => {
    const report = await session(await receiver(status, body));
    const refused = report.tests[0]?.steps[1];
    expect(refused?.status).toBe(verdict);
    expect(refused?.message).toMatch(message);
    expect(refused?.evidence[0]).toMatchObject({ direction: "outbound", operation: "order-allocation", status });
  });
});

describe("allocate", () => {
  it("waits for a confirmation still due before the deadline, then allocates and names the push", async () => {
    const app = createApp({ scenarios: undefined });
    // A pharmacy that confirms 300 ms after the fulfillment request: the allocate step runs before that.
    const url = await receiver(200, "", (text) => {
      const bundle = JSON.parse(JSON.parse(text).content);
      if (bundle.entry[0].resource.eventCoding.code !== "order-fulfillment-request") return;
      const task = bundle.entry.find((e: { resource: { resourceType: string } }) => e.resource.resourceType === "Task");
      const confirmation = messageBundle("confirm-drugs-availability", [
        {
          resourceType: "Task",
          id: task.resource.id,
          status: "accepted",
          intent: "order",
          businessStatus: { coding: [{ system: "urn:uae-fhir-sandbox:fulfillment-status", code: "available" }] },
          owner: { identifier: { system: "urn:ae:pharmacy-licence", value: "PH-K" } },
        } as Task,
      ]);
      setTimeout(() => void post(app.app, confirmation), 300);
    });
    const allocation: Plan = {
      ...plan,
      tests: [
        {
          id: "allocation",
          title: "allocation",
          rule: "r",
          required: true,
          steps: [
            { id: "push-order", title: "push", pushOrder: { deadline: "5s" } },
            { id: "allocate", title: "allocate", allocate: {} },
            { id: "acknowledged", title: "ack", expectAck: { within: "2s" } },
          ],
        },
      ],
    };
    const report = await session(url, allocation, app);
    expect(report.tests[0]?.steps.map((s) => [s.id, s.status, s.message])).toEqual([
      ["push-order", "pass", expect.stringMatching(/^order 1 pushed to /)],
      ["allocate", "pass", "order 1 allocated to PH-K: the order-allocation push goes to its endpoint"],
      ["acknowledged", "pass", expect.stringMatching(/^answered 200 after \d+ ms$/)],
    ]);
    expect(report.tests[0]?.steps[2]?.evidence[0]).toMatchObject({ operation: "order-allocation", status: 200 });
    expect(app.workspace.orders.get("1")?.state).toBe("allocated");
  });
});

describe("after an order the pharmacy did not confirm", () => {
  it("allocate and the steps after the allocation skip, whichever ended first: allocate's wait or the deadline's timer", async () => {
    // The session's clock a minute ahead of the order book's: allocate's wait for a confirmation ends at once (its
    // deadline passed), while the order book's deadline timer (30 s) has not run, so the order is still open. That
    // is the order in which the two timers ended when allocate's fired first.
    const ahead = () => new Date(Date.now() + 60_000);
    const unconfirmed: Plan = {
      ...plan,
      tests: [
        {
          id: "allocation-and-dispense-summary",
          title: "allocation",
          rule: "r",
          required: true,
          steps: [
            { id: "push-order", title: "push", pushOrder: { deadline: "30s" } },
            { id: "allocate", title: "allocate", allocate: {} },
            {
              id: "allocation-received",
              title: "receive-allocation",
              required: false,
              expectMessage: { operation: "receive-allocation", about: "task", within: "2s" },
            },
            {
              id: "dispense-summary",
              title: "dispense summary",
              expectMessage: { operation: "send-dispense-summary", about: "order", within: "2s" },
            },
          ],
        },
      ],
    };
    // A pharmacy that takes the push and never confirms.
    const report = await session(await receiver(200, ""), unconfirmed, undefined, ahead);
    const steps = report.tests[0]?.steps ?? [];
    expect(steps.map((s) => [s.id, s.status])).toEqual([
      ["push-order", "pass"],
      ["allocate", "skip"],
      ["allocation-received", "skip"],
      ["dispense-summary", "skip"],
    ]);
    expect(steps[1]?.message).toMatch(
      /^not run: order 1 is open and the pharmacy did not confirm it before its deadline/,
    );
    for (const step of steps.slice(2)) {
      expect(step.message).toMatch(
        /^not run: order 1 .*it was never allocated to the pharmacy, so no (receive-allocation|send-dispense-summary) can be expected$/,
      );
    }
  });
});

describe("expectSubscription, with a pharmacyUrl", () => {
  const facts = (pharmacyUrl: string) => ({
    id: "s1",
    role: "receiver" as const,
    operations: [],
    pharmacyUrl,
    pharmacyLicence: "PH-K",
    timeScale: 1,
  });
  const expectSubscription = receiverKinds.expectSubscription as unknown as (
    ctx: Pick<StepContext, "session" | "workspace" | "memory">,
    spec: object,
  ) => Promise<{ status: string; message: string }>;

  it("says the pharmacy subscribed again with another endpoint when the registration was replaced", async () => {
    const app = createApp({ scenarios: undefined });
    closers.push(() => app.close());
    const { workspace } = app;
    workspace.pharmacies.put({
      licence: "PH-K",
      name: "K",
      endpoint: "http://127.0.0.1:2/other-hook",
      headers: {},
      source: "subscription",
    });
    const verdict = await expectSubscription(
      { session: facts("http://127.0.0.1:1/fhir-hook"), workspace, memory: {} },
      {},
    );
    expect(verdict).toMatchObject({
      status: "fail",
      message:
        "expected the pharmacy registered at http://127.0.0.1:1/fhir-hook as PH-K; PH-K now has the endpoint http://127.0.0.1:2/other-hook: did the pharmacy subscribe again with another endpoint?",
    });
  });

  it("says the pharmacy unsubscribed when its licence has no endpoint", async () => {
    const app = createApp({ scenarios: undefined });
    closers.push(() => app.close());
    const { workspace } = app;
    workspace.pharmacies.put({ licence: "PH-K", name: "K", endpoint: undefined, headers: {}, source: "subscription" });
    const verdict = await expectSubscription(
      { session: facts("http://127.0.0.1:1/fhir-hook"), workspace, memory: {} },
      {},
    );
    expect(verdict.message).toBe(
      "expected the pharmacy registered at http://127.0.0.1:1/fhir-hook as PH-K; PH-K has no endpoint: did the pharmacy unsubscribe (status off)?",
    );
  });
});
