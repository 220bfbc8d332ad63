import type { Bundle, OperationOutcome } from "fhir/r4.js";
import type { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type SandboxApp } from "../../src/app.js";
import type { SandboxOptions } from "../../src/config/options.js";
import { SandboxEvents } from "../../src/events.js";
import type { CallDraft } from "../../src/journal/call-record.js";
import type { Order } from "../../src/orders/order.js";
import { type Push, type PushDeps, PushDispatcher } from "../../src/push/dispatcher.js";
import { outboundFetch } from "../../src/push/outbound-fetch.js";
import { admin, listCalls } from "../admin/admin-client.js";
import { authSandbox } from "../auth/oauth-support.js";
import { post, type Reply, responseHeader } from "../support/messages.js";
import { startReceiver } from "../support/receiver.js";
import { quietLogger, subscriptionMessage, untilOrder } from "./pharmacy-client.js";

// Issue 21, defect 4 (CONTRACT §15): with --auth oauth2 a push never reaches an internal address of the
// sandbox's host unless --push-allow names it, checked on the address connected to; the journal keeps at most
// the first 4 KiB of a receiver's answer. Receivers are real, on 127.0.0.1 — the very "internal" address a
// hostile tenant would aim at.

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function receiver(...args: Parameters<typeof startReceiver>) {
  const r = await startReceiver(...args);
  closers.push(r.close);
  return r;
}

const portOf = (url: string) => new URL(url).port;

/** The first 4 KiB, then "…[cut: …]": what the journal keeps of a long answer (docs/pharmacy-guide.md). */
const KEPT_BYTES = 4 * 1024;
const CUT_MARKER = /…\[cut: the answer was (\d+|more than 4096) bytes; the journal keeps the first 4096\]$/;

const CLIENTS = "clients:\n  - { id: pharmacy, secret: pharmacy-secret, scopes: [drug-orders] }\n";

/** A shared-style sandbox (--auth oauth2) and a pharmacy client's token-bearing `send`. */
async function oauthSandbox(options: Partial<SandboxOptions> = {}) {
  const s = authSandbox(CLIENTS, { pushBackoffMs: 2, ...options });
  const res = await s.app.request("/oauth2/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: "grant_type=client_credentials&client_id=pharmacy&client_secret=pharmacy-secret",
  });
  expect(res.status).toBe(200);
  const { access_token: token } = (await res.json()) as { access_token: string };
  const send = (bundle: Bundle) => post(s.app, bundle, { headers: { authorization: `Bearer ${token}` } });
  return { s, send };
}

/** The local default: no OAuth2. */
function localSandbox(options: Partial<SandboxOptions> = {}) {
  const s = createApp({ pushBackoffMs: 2, ...options }, { logger: quietLogger });
  closers.push(s.close);
  return { s, send: (bundle: Bundle) => post(s.app, bundle) };
}

/** The subscription was taken: a 200 ok response message. */
function expectSubscribed(reply: Reply): void {
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  expect(responseHeader(reply.body).response?.code, JSON.stringify(reply.body)).toBe("ok");
}

/** Processed and refused (CONTRACT §5): 200, fatal-error, a business-rule issue at channel.endpoint; its text. */
function expectRefusedEndpoint(reply: Reply): string {
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  const bundle = reply.body as Bundle;
  expect(responseHeader(bundle).response?.code).toBe("fatal-error");
  const outcome = bundle.entry?.find((e) => e.resource?.resourceType === "OperationOutcome")
    ?.resource as OperationOutcome;
  const issue = outcome.issue[0];
  expect(issue?.code).toBe("business-rule");
  expect(issue?.expression?.[0]).toMatch(/^Bundle\.entry\[\d+\]\.resource\.channel\.endpoint$/);
  return issue?.diagnostics ?? "";
}

/** Creates an order for every subscribed pharmacy and waits until none of its deliveries is still under way. */
async function orderDelivered(s: SandboxApp): Promise<Order> {
  const created = await admin(s.app, "POST", "/orders", { body: {} });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const id = (created.body as { id: string }).id;
  return untilOrder(s, id, (o) => o.pharmacies.every((p) => p.state !== "sent"), "every delivery ended", 20_000);
}

async function pharmacyList(app: Hono): Promise<string[]> {
  return ((await admin(app, "GET", "/pharmacies")).body.pharmacies as Array<{ licence: string }>).map((p) => p.licence);
}

describe("with --auth oauth2: pushes to internal addresses (CONTRACT §15)", () => {
  it("refuses a push to a host name that resolves to loopback (localhost): one attempt, the journal says why", async () => {
    const r = await receiver(() => ({ status: 200, body: '{"answer":"internal-only"}' }));
    const { s, send } = await oauthSandbox();
    const target = `http://localhost:${portOf(r.url)}/fhir-hook`;
    // A name is not refused at subscribe: only its address, when the push connects, says where it goes.
    expectSubscribed(await send(subscriptionMessage("PH-A", target)));

    const order = await orderDelivered(s);

    const delivery = order.pharmacies[0];
    expect(delivery?.state).toBe("delivery-failed");
    expect(r.received).toHaveLength(0);
    const calls = await listCalls(s.app, "direction=outbound");
    expect(calls).toHaveLength(1);
    const [call] = calls;
    expect(call).toMatchObject({ target, attempt: 1, response: null });
    expect(call.error).toMatch(/localhost resolves to (127\.0\.0\.1|::1), a loopback .*--push-allow/);
    expect(JSON.stringify(calls)).not.toContain("internal-only");
  });

  it("refuses a subscription whose endpoint is a literal loopback address, up front: fatal-error naming --push-allow", async () => {
    const r = await receiver();
    const { s, send } = await oauthSandbox();

    const diagnostics = expectRefusedEndpoint(await send(subscriptionMessage("PH-A", r.url)));

    expect(diagnostics).toContain("127.0.0.1");
    expect(diagnostics).toContain("loopback");
    expect(diagnostics).toContain("--push-allow 127.0.0.1");
    expect(await pharmacyList(s.app)).toEqual([]);
  });

  // The URL parser writes some of these its own way ([::ffff:7f00:1], 127.0.0.1): the check reads the address.
  it.each([
    ["[::1]", "loopback"],
    ["[::ffff:127.0.0.1]", "loopback"],
    ["[::ffff:7f00:1]", "loopback"],
    ["[::127.0.0.1]", "loopback"],
    ["2130706433", "loopback"],
    ["0x7f.1", "loopback"],
    ["169.254.169.254", "link-local"],
    ["10.0.0.1", "private"],
    ["[fd00::1]", "unique-local"],
    ["0.0.0.0", "unspecified"],
  ])("refuses %s at subscribe, and as a fixture pharmacy at delivery (nothing sent)", async (host, kind) => {
    const r = await receiver();
    const { s, send } = await oauthSandbox();
    // On the receiver's port: were the address not refused, [::ffff:127.0.0.1] and its kin would reach it.
    const target = `http://${host}:${portOf(r.url)}/fhir-hook`;

    expect(expectRefusedEndpoint(await send(subscriptionMessage("PH-A", target)))).toContain(kind);
    const fixture = { fixtures: { pharmacies: [{ licence: "PH-F", name: "Fixture", endpoint: target }] } };
    expect((await admin(s.app, "POST", "/scenarios", { body: JSON.stringify(fixture) })).status).toBe(201);
    const order = await orderDelivered(s);

    expect(order.pharmacies.map((p) => [p.licence, p.state])).toEqual([["PH-F", "delivery-failed"]]);
    const calls = await listCalls(s.app, "direction=outbound");
    expect(calls).toHaveLength(1);
    expect(calls[0].error).toContain(kind);
    expect(calls[0].error).toContain("--push-allow");
    expect(r.received).toHaveLength(0);
  });

  it.each([
    ["the address", ["127.0.0.1"]],
    ["a CIDR range", ["127.0.0.0/8"]],
    ["a CIDR range beside *", ["*", "127.0.0.0/8"]],
  ])("delivers to 127.0.0.1 when --push-allow names it (%s)", async (_, pushAllow) => {
    const r = await receiver();
    const { s, send } = await oauthSandbox({ pushAllow });

    expectSubscribed(await send(subscriptionMessage("PH-A", r.url, { headers: ["X-Api-Key: k"] })));
    const order = await orderDelivered(s);

    expect(order.pharmacies.map((p) => p.state)).toEqual(["delivered"]);
    expect(r.received).toHaveLength(1);
    const [got] = r.received;
    expect(got?.headers.host).toBe(`127.0.0.1:${portOf(r.url)}`);
    expect(got?.headers["x-api-key"]).toBe("k");
    expect(got?.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(got?.bundle?.resourceType).toBe("Bundle");
  });

  it("--push-allow * names no internal address: 127.0.0.1 is still refused", async () => {
    const r = await receiver();
    const { send } = await oauthSandbox({ pushAllow: ["*"] });

    expect(expectRefusedEndpoint(await send(subscriptionMessage("PH-A", r.url)))).toContain("--push-allow");
  });
});

describe("a receiver's answer in the journal: its first 4 KiB", () => {
  it.each([
    ["with --auth oauth2 and --push-allow 127.0.0.1", () => oauthSandbox({ pushAllow: ["127.0.0.1"] })],
    ["locally (no OAuth2)", async () => localSandbox()],
  ])("%s: a 1 MiB answer, and one of 1 GiB that never ends, are kept as 4 KiB and a marker", async (_, make) => {
    const { s, send } = await make();
    const big = await receiver(() => ({ status: 200, body: "<", fill: 1024 * 1024 }));
    // Backpressured: the receiver writes only what the sandbox reads, so reading it all would never end.
    const endless = await receiver(() => ({ status: 200, fill: 1024 ** 3, keepOpen: true }));
    expectSubscribed(await send(subscriptionMessage("PH-BIG", big.url)));
    expectSubscribed(await send(subscriptionMessage("PH-ENDLESS", endless.url)));

    const order = await orderDelivered(s);

    expect(order.pharmacies.map((p) => p.state)).toEqual(["delivered", "delivered"]);
    const calls = await listCalls(s.app, "direction=outbound");
    expect(calls).toHaveLength(2);
    for (const call of calls) {
      const body = call.response.body as string;
      expect(body).toMatch(CUT_MARKER);
      const kept = body.replace(CUT_MARKER, "");
      expect(Buffer.byteLength(kept)).toBeLessThanOrEqual(KEPT_BYTES);
      expect(kept).toMatch(/^<?x+$/);
    }
  });

  it("keeps a short answer whole, with no marker", async () => {
    const r = await receiver(() => ({ status: 200, body: '{"ok":true}' }));
    const { s, send } = await oauthSandbox({ pushAllow: ["127.0.0.1"] });
    expectSubscribed(await send(subscriptionMessage("PH-A", r.url)));

    await orderDelivered(s);

    const [call] = await listCalls(s.app, "direction=outbound");
    expect(call.response.body).toEqual({ ok: true });
  });
});

describe("without OAuth2 (the local default): pushes to this machine as before", () => {
  it("delivers to 127.0.0.1 and to localhost with no --push-allow", async () => {
    const r = await receiver();
    const { s, send } = localSandbox();
    expectSubscribed(await send(subscriptionMessage("PH-IP", r.url)));
    expectSubscribed(await send(subscriptionMessage("PH-NAME", `http://localhost:${portOf(r.url)}/fhir-hook`)));

    const order = await orderDelivered(s);

    expect(order.pharmacies.map((p) => [p.licence, p.state])).toEqual([
      ["PH-IP", "delivered"],
      ["PH-NAME", "delivered"],
    ]);
    expect(r.received).toHaveLength(2);
  });
});

describe("the guarded dispatcher: the address checked is the address connected to", () => {
  const ENVELOPE = JSON.stringify({ content: JSON.stringify({ resourceType: "Bundle", type: "message" }) });
  const push = (target: string): Push => ({
    target,
    headers: {},
    body: ENVELOPE,
    event: "order-fulfillment-request",
    messageId: "m-1",
  });

  /** A dispatcher as --auth oauth2 makes it, with the default outbound fetch and the given DNS. */
  function guarded(allow: string[], lookup?: PushDeps["lookup"]) {
    const events = new SandboxEvents();
    const calls: CallDraft[] = [];
    events.on("call:completed", (c) => calls.push(c));
    const d = new PushDispatcher(
      { timeoutMs: 5_000, attempts: 3, concurrency: 4, backoffMs: 1, allow, guardAddresses: true },
      {
        events,
        now: () => new Date(),
        monotonic: () => performance.now(),
        random: () => 0,
        fetch: outboundFetch,
        ...(lookup ? { lookup } : {}),
      },
    );
    return { d, calls };
  }

  it("connects to the address DNS gave, with the URL's host as Host", async () => {
    const r = await receiver();
    const looked: string[] = [];
    const { d } = guarded(["*", "127.0.0.1"], async (host) => {
      looked.push(host);
      return "127.0.0.1";
    });
    // pharmacy.example resolves nowhere in real DNS: only the injected lookup can make this connect.
    const target = `http://pharmacy.example:${portOf(r.url)}/fhir-hook?x=1`;

    const result = await d.deliver(push(target));

    expect(result).toEqual({ delivered: true, attempts: 1, status: 200, error: null });
    expect(looked).toEqual(["pharmacy.example"]);
    expect(r.received[0]).toMatchObject({ path: "/fhir-hook?x=1", body: ENVELOPE });
    expect(r.received[0]?.headers.host).toBe(`pharmacy.example:${portOf(r.url)}`);
  });

  it("checks every attempt's address: a name that re-resolves to the metadata address is refused, not retried", async () => {
    const r = await receiver(() => ({ status: 503 }));
    const answers = ["127.0.0.1", "169.254.169.254"];
    const { d, calls } = guarded(["*", "127.0.0.1"], async () => answers.shift() ?? "169.254.169.254");
    const target = `http://rebinding.example:${portOf(r.url)}/fhir-hook`;

    const result = await d.deliver(push(target));

    expect(result).toMatchObject({ delivered: false, attempts: 2, status: null });
    expect(result.error).toMatch(/rebinding\.example resolves to 169\.254\.169\.254, a link-local .*--push-allow/);
    expect(r.received).toHaveLength(1);
    expect(calls.map((c) => [c.attempt, c.response?.status ?? null])).toEqual([
      [1, 503],
      [2, null],
    ]);
  });

  it("does not follow a redirect from an allowed receiver to a refused address: the hop is never made", async () => {
    const inner = await receiver(() => ({ status: 200, body: '{"answer":"internal-only"}' }));
    const outer = await receiver(() => ({
      status: 307,
      headers: { location: `http://[::ffff:127.0.0.1]:${portOf(inner.url)}/fhir-hook` },
    }));
    const { d, calls } = guarded(["127.0.0.1"]);

    const result = await d.deliver(push(outer.url));

    expect(result).toEqual({ delivered: false, attempts: 1, status: 307, error: "answered 307" });
    expect(outer.received).toHaveLength(1);
    expect(inner.received).toHaveLength(0);
    expect(JSON.stringify(calls)).not.toContain("internal-only");
  });
});
