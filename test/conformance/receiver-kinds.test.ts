import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { receiverKinds } from "../../src/conformance/kinds/receiver.js";
import type { Plan } from "../../src/conformance/plan-schema.js";
import { Session } from "../../src/conformance/session.js";
import type { SessionReport } from "../../src/conformance/session-report.js";
import { PushDispatcher } from "../../src/push/dispatcher.js";

/**
 * The receiver kinds in one process, against a receiver the test scripts: how a pharmacy answers a push about an
 * order it never got decides expectRefused (a 4xx, or a 2xx carrying a fatal-error response message, refuses it;
 * anything else takes it or fails), and the message says what it answered.
 */

const closers: Array<() => void> = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

/** A receiver answering every push with `status` and `body`. */
async function receiver(status: number, body: string): Promise<string> {
  const server: Server = createServer((req, res) => {
    req.resume().on("end", () => res.writeHead(status, { "content-type": "application/fhir+json" }).end(body));
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

async function session(pharmacyUrl: string): Promise<SessionReport> {
  const app = createApp({ scenarios: undefined });
  closers.push(() => app.close());
  const { workspace } = app;
  workspace.pharmacies.put({ licence: "PH-K", name: "K", endpoint: pharmacyUrl, headers: {}, source: "fixture" });
  const dispatcher = new PushDispatcher(
    { timeoutMs: 2000, attempts: 1, concurrency: 4, backoffMs: 10, allow: [] },
    { fetch, events: workspace.events, now: () => new Date(), monotonic: () => performance.now(), random: Math.random },
  );
  const run = new Session({
    facts: { id: "s1", role: "receiver", operations: [], pharmacyUrl, pharmacyLicence: "PH-K", timeScale: 1 },
    plan: { plan, source: "test" },
    workspace,
    sandbox: {
      now: () => new Date(),
      newId: () => crypto.randomUUID(),
      publicUrl: () => "http://127.0.0.1:1",
      messageUrl: () => "http://127.0.0.1:1/uae-fhir/r4/$process-message",
      operationIds: () => [],
      deliver: (push) => dispatcher.deliver(push),
    },
    kinds: receiverKinds,
  });
  void run.run();
  return run.done;
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
