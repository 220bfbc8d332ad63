import type { OperationOutcome } from "fhir/r4.js";
import type { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type SandboxApp } from "../../src/app.js";
import type { SandboxOptions } from "../../src/config/options.js";
import { SandboxEvents } from "../../src/events.js";
import type { CallDraft } from "../../src/journal/call-record.js";
import type { orderView } from "../../src/orders/order-view.js";
import { PushDispatcher } from "../../src/push/dispatcher.js";
import { hostAllowed, pushableScheme } from "../../src/push/push-allow.js";
import { admin, listCalls } from "../admin/admin-client.js";
import { focusOf, type Reply } from "../support/messages.js";
import { startReceiver } from "../support/receiver.js";
import { within } from "../support/within.js";
import { subscribe } from "./pharmacy-client.js";

type OrderView = ReturnType<typeof orderView>;

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A sandbox whose outbound fetch is recorded (and still real). */
function sandbox(options: Partial<SandboxOptions> = {}) {
  const fetched: string[] = [];
  const s = createApp(
    { pushBackoffMs: 2, ...options },
    {
      fetch: (input, init) => {
        fetched.push(String(input));
        return fetch(input, init);
      },
    },
  );
  closers.push(s.close);
  return { ...s, sandbox: s, fetched };
}

async function receiver() {
  const r = await startReceiver();
  closers.push(r.close);
  return r;
}

/** A 400 OperationOutcome whose issue points at the Subscription's channel.endpoint; returns its diagnostics. */
function expectEndpointRefused(reply: Reply): string {
  expect(reply.status, JSON.stringify(reply.body)).toBe(400);
  const outcome = reply.body as OperationOutcome;
  expect(outcome.resourceType).toBe("OperationOutcome");
  const issue = outcome.issue.find((i) =>
    i.expression?.some((e) => /^Bundle\.entry\[\d+\]\.resource\.channel\.endpoint$/.test(e)),
  );
  expect(issue, JSON.stringify(outcome)).toBeDefined();
  expect(issue?.severity).toBe("error");
  return issue?.diagnostics ?? "";
}

async function pharmacies(app: Hono): Promise<Array<{ licence: string; endpoint: string | null }>> {
  return (await admin(app, "GET", "/pharmacies")).body.pharmacies;
}

/** Resolves with the order's admin view once no pharmacy of it is still `sent`. */
async function deliveriesEnded(s: SandboxApp, id: string): Promise<OrderView> {
  const ended = new Promise<void>((resolve) => {
    const check = () => {
      const order = s.orders.get(id);
      if (!order || order.pharmacies.some((p) => p.state === "sent")) return;
      s.events.off("order:updated", check);
      resolve();
    };
    s.events.on("order:updated", check);
    check();
  });
  await within(ended, `order ${id}: every delivery ended`);
  return (await admin(s.app, "GET", `/orders/${id}`)).body as OrderView;
}

describe("hostAllowed: --push-allow host patterns", () => {
  it.each([
    ["http://127.0.0.1:8080/hook", ["127.0.0.1"], true],
    ["https://pharmacy.example.ae/hook", ["pharmacy.example.ae"], true],
    ["https://PHARMACY.Example.AE/hook", ["pharmacy.example.ae"], true],
    ["https://pharmacy.example.ae/hook", ["Pharmacy.Example.ae"], true],
    ["https://other.example.ae/hook", ["pharmacy.example.ae"], false],
    ["https://pharmacy.example.ae.evil.com/hook", ["pharmacy.example.ae"], false],
    ["https://a.example.ae/hook", ["*.example.ae"], true],
    ["https://a.b.example.ae/hook", ["*.example.ae"], true],
    ["https://example.ae/hook", ["*.example.ae"], false],
    ["https://badexample.ae/hook", ["*.example.ae"], false],
    ["https://example.ae.evil.com/hook", ["*.example.ae"], false],
    ["http://127.0.0.1/hook", ["*.example.ae"], false],
    ["http://127.0.0.1/hook", ["*.example.ae", "127.0.0.1"], true],
    ["http://anything.at.all:9/hook", ["*"], true],
    ["http://anything.at.all/hook", [], true],
    ["http://[::1]:8080/hook", ["::1"], true],
    ["http://[::1]:8080/hook", ["127.0.0.1"], false],
    ["http://[::ffff:127.0.0.1]/hook", ["127.0.0.1"], false],
    ["http://user:pw@127.0.0.1/hook", ["127.0.0.1"], true],
    ["not a url", ["127.0.0.1"], false],
    ["http://[bad/hook", ["*"], false],
  ] as const)("%s with %j → %s", (url, patterns, allowed) => {
    expect(hostAllowed(url, patterns)).toBe(allowed);
  });

  it.each([
    ["http://127.0.0.1/hook", true],
    ["https://pharmacy.example.ae/hook", true],
    ["HTTPS://pharmacy.example.ae/hook", true],
    ["ftp://127.0.0.1/hook", false],
    ["file:///etc/passwd", false],
    ["javascript:alert(1)", false],
    ["ws://127.0.0.1/hook", false],
    ["not a url", false],
  ])("pushableScheme(%s) → %s", (url, ok) => {
    expect(pushableScheme(url)).toBe(ok);
  });
});

describe("--push-allow at subscribe time (CONTRACT §8)", () => {
  it("accepts a subscription to http://127.0.0.1:port with --push-allow 127.0.0.1, and pushes to it", async () => {
    const r = await receiver();
    const s = sandbox({ pushAllow: ["127.0.0.1"] });

    const reply = await subscribe(s.app, "PH-A", r.url);

    expect(reply.status).toBe(200);
    expect(focusOf(reply.body)[0]).toMatchObject({ resourceType: "Subscription", status: "active" });
    expect((await pharmacies(s.app)).map((p) => [p.licence, p.endpoint])).toEqual([["PH-A", r.url]]);
    const created = await admin(s.app, "POST", "/orders", { body: {} });
    expect(created.status).toBe(201);
    await within(r.next(), "push to PH-A");
  });

  it("refuses http://127.0.0.1:port with --push-allow *.example.ae: 400 naming the allowed hosts at channel.endpoint", async () => {
    const r = await receiver();
    const s = sandbox({ pushAllow: ["*.example.ae"] });

    const diagnostics = expectEndpointRefused(await subscribe(s.app, "PH-A", r.url));

    expect(diagnostics).toContain("*.example.ae");
    expect(diagnostics).toContain("127.0.0.1");
    expect(await pharmacies(s.app)).toEqual([]);
    // The same sandbox accepts a host the pattern allows.
    expect((await subscribe(s.app, "PH-B", "https://pharmacy.example.ae/hook")).status).toBe(200);
  });

  it.each([
    ["ftp://127.0.0.1/hook", []],
    ["file:///tmp/hook", []],
    ["ftp://127.0.0.1/hook", ["*"]],
    ["file:///tmp/hook", ["127.0.0.1"]],
    ["ws://127.0.0.1/hook", []],
  ] as const)("always refuses %s (--push-allow %j) with a 400", async (endpoint, pushAllow) => {
    const s = sandbox({ pushAllow: [...pushAllow] });

    const diagnostics = expectEndpointRefused(await subscribe(s.app, "PH-A", endpoint));

    expect(diagnostics).toMatch(/http:\/\/ or https:\/\//);
    expect(await pharmacies(s.app)).toEqual([]);
  });
});

describe("--push-allow at delivery time", () => {
  it("refuses a push to a fixture pharmacy outside --push-allow (recorded as an outbound call), others still delivered", async () => {
    const r = await receiver();
    const s = sandbox({ pushAllow: ["127.0.0.1"] });
    const outside = "http://pharmacy.blocked.example/hook";
    const broken = "http://[bad/hook";
    const fixtures = {
      fixtures: {
        pharmacies: [
          { licence: "PH-OUT", name: "Outside", endpoint: outside, headers: { "X-Api-Key": "k" } },
          { licence: "PH-BROKEN", name: "Broken URL", endpoint: broken },
        ],
      },
    };
    expect((await admin(s.app, "POST", "/scenarios", { body: JSON.stringify(fixtures) })).status).toBe(201);
    expect((await subscribe(s.app, "PH-IN", r.url)).status).toBe(200);

    const created = await admin(s.app, "POST", "/orders", { body: {} });
    expect(created.status).toBe(201);
    const ended = await deliveriesEnded(s.sandbox, (created.body as OrderView).id);

    const states = Object.fromEntries(ended.pharmacies.map((p) => [p.licence, [p.state, p.delivery.error]]));
    expect(states).toEqual({
      "PH-OUT": ["delivery-failed", expect.stringContaining("not allowed")],
      "PH-BROKEN": ["delivery-failed", expect.stringContaining("not allowed")],
      "PH-IN": ["delivered", null],
    });
    expect(r.received).toHaveLength(1);
    expect(s.fetched).toEqual([r.url]);
    const outbound = await listCalls(s.app, "direction=outbound");
    const refused = outbound.filter((c) => c.target !== r.url);
    expect(refused.map((c) => c.target).sort()).toEqual([outside, broken].sort());
    for (const call of refused) {
      expect(call).toMatchObject({ operation: "order-fulfillment-request", attempt: 1, response: null });
      expect(call.error).toContain("not allowed");
    }
    expect(refused.find((c) => c.target === outside)?.request.headers["x-api-key"]).toBe("[redacted]");
  });

  it.each([
    ["a host outside the allow list", "http://127.0.0.1:9/hook", ["*.example.ae"]],
    ["ftp", "ftp://127.0.0.1/hook", []],
    ["file", "file:///tmp/hook", []],
    ["an unparseable URL", "http://exa mple.ae/hook", []],
  ] as const)("the dispatcher refuses %s without fetching, and says why", async (_, target, allow) => {
    const events = new SandboxEvents();
    const calls: CallDraft[] = [];
    events.on("call:completed", (c) => calls.push(c));
    const fetched: string[] = [];
    const d = new PushDispatcher(
      { timeoutMs: 1_000, attempts: 3, concurrency: 4, backoffMs: 1, allow },
      {
        events,
        now: () => new Date(),
        monotonic: () => performance.now(),
        random: () => 0,
        fetch: async (input) => {
          fetched.push(String(input));
          return new Response(null, { status: 200 });
        },
      },
    );

    const result = await d.deliver({ target, headers: {}, body: "{}", event: "order-allocation", messageId: "m-1" });

    expect(result).toMatchObject({ delivered: false, status: null, error: expect.stringContaining("not allowed") });
    expect(fetched).toEqual([]);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ target, attempt: 1, response: null, error: result.error });
  });
});
