import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Bundle, Patient, Subscription } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type SandboxApp } from "../../src/app.js";
import { runCli } from "../../src/cli/main.js";
import type { SandboxOptions } from "../../src/config/options.js";
import { createSandbox } from "../../src/sandbox.js";
import { admin, listCalls } from "../admin/admin-client.js";
import { http, killStray, startCli } from "../cli/cli-process.js";
import { pharmacyOrganization, subscribe } from "../orders/pharmacy-client.js";
import { envelope, focusOf, messageBundle, post, STANDARD } from "../support/messages.js";
import { type Answer, startReceiver } from "../support/receiver.js";
import { within } from "../support/within.js";

/**
 * Redaction by rule (issue 10, defect 4), written from the README and the
 * pharmacy guide: every Subscription channel.header value, every header on
 * the redaction list (defaults plus --redact-header), and every value that
 * reads like a credential are `[redacted]` wherever a call or a subscription
 * is shown or written; the push itself still carries the real values.
 */

const REDACTED = "[redacted]";
/** The cases, and one harmless-looking value that only the Subscription rule redacts. */
const SUBSCRIPTION_HEADERS = [
  "X-Pharmacy-Auth: s3cr3t-value",
  "X-Hook-Signature: sig-abc",
  "X-Pharmacy-Branch: branch-marina-7",
];
const SUBSCRIPTION_SECRETS = ["s3cr3t-value", "sig-abc", "branch-marina-7"];
const REDACTED_LINES = ["X-Pharmacy-Auth: [redacted]", "X-Hook-Signature: [redacted]", "X-Pharmacy-Branch: [redacted]"];

const closers: Array<() => unknown> = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await killStray();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "redaction-"));
  dirs.push(dir);
  return dir;
}

function sandbox(options: Partial<SandboxOptions> = {}): SandboxApp {
  const s = createApp({ pushBackoffMs: 2, ...options });
  closers.push(s.close);
  return s;
}

async function receiver(answer?: Answer) {
  const r = await startReceiver(answer);
  closers.push(r.close);
  return r;
}

const subscriptionOf = (bundle: unknown): Subscription | undefined =>
  ((bundle as Bundle | null)?.entry ?? []).map((e) => e.resource).find((r) => r?.resourceType === "Subscription") as
    | Subscription
    | undefined;

/** The Bundle of a recorded body: the envelope's content, or the body itself. */
function bundleOf(body: unknown): unknown {
  if (body && typeof body === "object" && typeof (body as { content?: unknown }).content === "string") {
    return JSON.parse((body as { content: string }).content);
  }
  return body;
}

const profileMessage = () =>
  messageBundle("view-patient-profile", [
    { resourceType: "Patient", identifier: [{ system: "urn:ae:emirates-id", value: "784-1990-1234567-6" }] } as Patient,
  ]);

function expectNoSecret(surface: string, text: string, secrets: readonly string[]) {
  for (const secret of secrets) expect(text, `${surface} shows ${secret}`).not.toContain(secret);
}

/** Waits until the journal holds `count` outbound calls of `operation`. */
async function outboundRecorded(app: SandboxApp["app"], operation: string, count = 1) {
  const reply = await admin(app, "POST", "/calls/wait", {
    body: { operation, direction: "outbound", atLeast: count, timeoutMs: 4_000 },
  });
  expect(reply.body.ok, JSON.stringify(reply.body)).toBe(true);
}

describe("Subscription channel.header values are redacted, whatever their names (defect 4a)", () => {
  // Budget: 7.4 s in a serial run at a load average of 12 (2026-11-27).
  it("in /__admin/calls, /calls/{id}, verify, wait, export, /pharmacies, orders and the journal file; the push still carries them", async () => {
    const file = join(tempDir(), "calls.ndjson");
    const r = await receiver();
    const s = sandbox({ journalFile: file });
    const subscribed = await subscribe(s.app, "PH-SECRET", r.url, { headers: SUBSCRIPTION_HEADERS });
    expect(subscribed.status, JSON.stringify(subscribed.body)).toBe(200);
    const order = await admin(s.app, "POST", "/orders", { body: {} });
    expect(order.status).toBe(201);

    // The pharmacy gets the real values.
    const push = await within(r.next(), "the push");
    expect(push.headers).toMatchObject({
      "x-pharmacy-auth": "s3cr3t-value",
      "x-hook-signature": "sig-abc",
      "x-pharmacy-branch": "branch-marina-7",
    });
    await outboundRecorded(s.app, "order-fulfillment-request");

    const calls = await listCalls(s.app);
    const subscribeCall = calls.find((c) => c.operation === "subscribe-order-notifications");
    expect(subscriptionOf(bundleOf(subscribeCall.request.body))?.channel.header).toEqual(REDACTED_LINES);
    expect(subscriptionOf(bundleOf(subscribeCall.response.body))?.channel.header).toEqual(REDACTED_LINES);
    const pushCall = calls.find((c) => c.direction === "outbound");
    expect(pushCall.request.headers).toMatchObject({
      "x-pharmacy-auth": REDACTED,
      "x-hook-signature": REDACTED,
      "x-pharmacy-branch": REDACTED,
    });
    expect(pushCall.request.headers["content-type"]).toBe("application/json; charset=utf-8");

    const pharmacies = await admin(s.app, "GET", "/pharmacies");
    expect(pharmacies.body.pharmacies[0].headers).toEqual({
      "x-pharmacy-auth": REDACTED,
      "x-hook-signature": REDACTED,
      "x-pharmacy-branch": REDACTED,
    });

    // verify and wait read the same redacted records (a FHIRPath over the request sees [redacted]) …
    const where = "Bundle.entry.resource.ofType(Subscription).channel.header contains 'X-Pharmacy-Auth: [redacted]'";
    const seen = await admin(s.app, "POST", "/calls/verify", {
      body: { operation: "subscribe-order-notifications", where },
    });
    expect(seen.body).toMatchObject({ ok: true, matched: 1 });
    // … and their near misses show nothing of the secrets.
    const missed = {
      operation: "subscribe-order-notifications",
      where: "Bundle.entry.resource.ofType(Subscription).channel.header.count() = 7",
    };
    const verify = await admin(s.app, "POST", "/calls/verify", { body: missed });
    const wait = await admin(s.app, "POST", "/calls/wait", { body: { ...missed, timeoutMs: 0 } });
    expect(verify.body.nearMisses.length).toBeGreaterThan(0);
    expect(wait.body.nearMisses.length).toBeGreaterThan(0);

    const surfaces: Record<string, string> = {
      "GET /__admin/calls": JSON.stringify(calls),
      "GET /__admin/pharmacies": JSON.stringify(pharmacies.body),
      "POST /__admin/calls/verify": JSON.stringify(verify.body),
      "POST /__admin/calls/wait": JSON.stringify(wait.body),
      "GET /__admin/orders": JSON.stringify((await admin(s.app, "GET", "/orders")).body),
      "GET /__admin/calls/export": await (await s.app.request("/__admin/calls/export")).text(),
      "GET /__admin/calls/export?format=scenario": await (
        await s.app.request("/__admin/calls/export?format=scenario")
      ).text(),
      "--journal-file": readFileSync(file, "utf8"),
    };
    for (const call of calls) {
      surfaces[`GET /__admin/calls/${call.id}`] = JSON.stringify((await admin(s.app, "GET", `/calls/${call.id}`)).body);
    }
    for (const [surface, text] of Object.entries(surfaces)) expectNoSecret(surface, text, SUBSCRIPTION_SECRETS);
    const written = readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(written.map((c) => c.operation)).toEqual(calls.map((c) => c.operation));
    expect(subscriptionOf(bundleOf(written[0].request.body))?.channel.header).toEqual(REDACTED_LINES);
  }, 20_000);

  it("the live answer to the subscribing pharmacy is the Subscription as stored, real values included", async () => {
    const s = sandbox();
    const reply = await subscribe(s.app, "PH-SECRET", "http://127.0.0.1:9/hook", { headers: SUBSCRIPTION_HEADERS });
    expect((focusOf(reply.body)[0] as Subscription).channel.header).toEqual(SUBSCRIPTION_HEADERS);
  });

  it.each([
    ["an unknown event code", "no-such-event", {}],
    [
      "a subscription answered inside the response envelope",
      "subscribe-order-notifications",
      { responseEnvelope: true },
    ],
    [
      "a subscription refused for a bad endpoint",
      "subscribe-order-notifications",
      { pushAllow: ["pharmacy.example.ae"] },
    ],
  ] as Array<[string, string, Partial<SandboxOptions>]>)("also in %s", async (_, event, options) => {
    const s = sandbox(options);
    const subscription: Subscription = {
      resourceType: "Subscription",
      status: "requested",
      reason: "orders",
      criteria: "Task?code=fulfill",
      channel: { type: "rest-hook", endpoint: "http://127.0.0.1:9/hook", header: SUBSCRIPTION_HEADERS },
    };
    await post(s.app, messageBundle(event, [subscription, pharmacyOrganization("PH-X")]));
    const [call] = await listCalls(s.app);
    expect(subscriptionOf(bundleOf(call.request.body))?.channel.header).toEqual(REDACTED_LINES);
    expectNoSecret("GET /__admin/calls", JSON.stringify(call), SUBSCRIPTION_SECRETS);
  });

  it("fixture pharmacies' headers are shown redacted, and pushed with their real values", async () => {
    const r = await receiver();
    const s = sandbox();
    const added = await admin(s.app, "POST", "/scenarios", {
      body: {
        fixtures: {
          pharmacies: [{ licence: "PH-FX", endpoint: r.url, headers: { "X-Region": "region-secret-9" } }],
        },
      },
    });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    expect((await admin(s.app, "POST", "/orders", { body: {} })).status).toBe(201);
    expect((await within(r.next(), "the push")).headers["x-region"]).toBe("region-secret-9");
    await outboundRecorded(s.app, "order-fulfillment-request");
    const pharmacies = await admin(s.app, "GET", "/pharmacies");
    expect(pharmacies.body.pharmacies[0].headers).toEqual({ "x-region": REDACTED });
    const [push] = await listCalls(s.app, "direction=outbound");
    expect(push.request.headers["x-region"]).toBe(REDACTED);
  });
});

describe("headers on the redaction list are redacted by name (defect 4b)", () => {
  const HEADERS = {
    Authorization: "Bearer very-secret-token",
    "Proxy-Authorization": "proxy-secret-1",
    Cookie: "session=cookie-secret-2",
    "X-Api-Key": "api-key-secret-3",
    "X-Clinic-Pass": "clinic-pass-4",
    "X-Request-Id": "req-42",
  };

  it("Authorization, Proxy-Authorization, Cookie and X-Api-Key by default; an ordinary header is kept", async () => {
    const s = sandbox();
    await post(s.app, profileMessage(), { headers: HEADERS });
    const [call] = await listCalls(s.app);
    expect(call.request.headers).toMatchObject({
      authorization: REDACTED,
      "proxy-authorization": REDACTED,
      cookie: REDACTED,
      "x-api-key": REDACTED,
      "x-clinic-pass": "clinic-pass-4",
      "x-request-id": "req-42",
    });
  });

  it("redactHeaders (--redact-header) adds names, case-insensitively, to the defaults", async () => {
    const s = sandbox({ redactHeaders: ["x-CLINIC-pass"] });
    await post(s.app, profileMessage(), { headers: HEADERS });
    const [call] = await listCalls(s.app);
    expect(call.request.headers).toMatchObject({ "x-clinic-pass": REDACTED, authorization: REDACTED });
    expect(call.request.headers["x-request-id"]).toBe("req-42");
  });

  it("response headers too: Set-Cookie from a scripted answer, and from a pharmacy's answer to a push", async () => {
    const r = await receiver(() => ({ status: 200, headers: { "set-cookie": "sid=receiver-cookie-5" } }));
    const s = sandbox();
    const rule = await admin(s.app, "POST", "/scenarios", {
      body: {
        rules: [
          {
            name: "cookie",
            when: { operation: "view-patient-profile" },
            respond: { builtIn: true, headers: { "set-cookie": "sid=scripted-cookie-6" } },
          },
        ],
      },
    });
    expect(rule.status, JSON.stringify(rule.body)).toBe(201);
    const answer = await post(s.app, profileMessage());
    expect(answer.headers.get("set-cookie")).toBe("sid=scripted-cookie-6");
    await subscribe(s.app, "PH-C", r.url);
    expect((await admin(s.app, "POST", "/orders", { body: {} })).status).toBe(201);
    await outboundRecorded(s.app, "order-fulfillment-request");

    const calls = await listCalls(s.app);
    const inbound = calls.find((c) => c.operation === "view-patient-profile");
    const outbound = calls.find((c) => c.direction === "outbound");
    expect(inbound.response.headers["set-cookie"]).toBe(REDACTED);
    expect(outbound.response.headers["set-cookie"]).toBe(REDACTED);
    expectNoSecret("GET /__admin/calls", JSON.stringify(calls), ["scripted-cookie-6", "receiver-cookie-5"]);
  });
});

describe("values that read like credentials are redacted whatever the header is called (defect 4c)", () => {
  it.each([
    ["Bearer", "Bearer abc.def.ghi"],
    ["Basic", "Basic dXNlcjpwYXNzd29yZA=="],
    ["Digest", 'Digest username="u", response="6629fae49393a05397450978507c4ef1"'],
    ["lower-case bearer", "bearer lower-case-token"],
    ["a JSON Web Token", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"],
  ])("%s", async (_, value) => {
    const s = sandbox();
    await post(s.app, profileMessage(), {
      headers: { "X-Upstream-Forward": value, "X-Plain": "plain-value" },
    });
    const [call] = await listCalls(s.app);
    expect(call.request.headers["x-upstream-forward"]).toBe(REDACTED);
    expect(call.request.headers["x-plain"]).toBe("plain-value");
  });
});

describe("--redact-header through the real CLI, into --journal-file", { timeout: 30_000 }, () => {
  it.each([
    ["the flag", ["--redact-header", "X-Clinic-Pass, X-Tenant-Secret"], {}],
    ["the environment variable", [], { REDACT_HEADER: "X-Clinic-Pass,X-Tenant-Secret" }],
  ] as const)("given as %s", async (_, flags, env) => {
    const dir = tempDir();
    const file = join(dir, "calls.ndjson");
    const { url } = await startCli(["--journal-file", file, "--scenarios", dir, "--no-watch", ...flags], env);
    const reply = await http(`${url}${STANDARD}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-clinic-pass": "clinic-pass-4",
        "x-tenant-secret": "tenant-7",
        "x-request-id": "req-42",
      },
      body: envelope(profileMessage()),
    });
    expect(reply.status).toBe(200);
    const [line] = readFileSync(file, "utf8").trim().split("\n");
    const call = JSON.parse(line as string);
    expect(call.request.headers).toMatchObject({
      "x-clinic-pass": REDACTED,
      "x-tenant-secret": REDACTED,
      "x-request-id": "req-42",
    });
  });
});

describe("export and replay of a journal file redact what an older file holds in clear", () => {
  /** A subscribe call as a journal file of an earlier version wrote it: Subscription headers and Authorization in clear. */
  function oldJournal(dir: string): string {
    const bundle = messageBundle("subscribe-order-notifications", [
      {
        resourceType: "Subscription",
        status: "requested",
        reason: "orders",
        criteria: "Task?code=fulfill",
        channel: { type: "rest-hook", endpoint: "http://127.0.0.1:9/hook", header: SUBSCRIPTION_HEADERS },
      } as Subscription,
      pharmacyOrganization("PH-OLD"),
    ]);
    const answer = {
      ...bundle,
      entry: [
        bundle.entry?.[0],
        { fullUrl: "urn:uuid:3c1e0a52-07c9-4a59-bd4c-6c4b4d0e3e11", resource: bundle.entry?.[1]?.resource },
      ],
    };
    const file = join(dir, "old.ndjson");
    const call = {
      id: "1",
      direction: "inbound",
      at: "2026-01-31T10:00:00.000Z",
      durationMs: 3,
      operation: "subscribe-order-notifications",
      messageId: bundle.entry?.[0]?.resource?.id,
      rule: null,
      request: {
        method: "POST",
        url: `http://localhost${STANDARD}`,
        path: STANDARD,
        headers: { "content-type": "application/json", authorization: "Bearer old-token-8" },
        body: JSON.parse(envelope(bundle)),
      },
      response: { status: 200, headers: { "set-cookie": "sid=old-cookie-9" }, body: answer },
    };
    writeFileSync(file, `${JSON.stringify(call)}\n`);
    return file;
  }
  const OLD_SECRETS = [...SUBSCRIPTION_SECRETS, "old-token-8", "old-cookie-9"];

  it("export writes a scenario without them", async () => {
    const dir = tempDir();
    const from = oldJournal(dir);
    const to = join(dir, "recorded.yaml");
    const io = { out: () => undefined, err: () => undefined, env: {} };
    expect(await runCli(["export", "--from", from, "--to", to], io)).toBe(0);
    const yaml = readFileSync(to, "utf8");
    expect(yaml).toContain("X-Pharmacy-Auth: [redacted]");
    expectNoSecret("export", yaml, OLD_SECRETS);
  });

  it("replay sends, compares and reports without them", async () => {
    const dir = tempDir();
    const from = oldJournal(dir);
    const junit = join(dir, "replay.xml");
    const target = await createSandbox({ scenarios: dir, watch: false });
    closers.push(target.close);
    const out: string[] = [];
    const io = { out: (l: string) => out.push(l), err: (l: string) => out.push(l), env: {} };
    await runCli(["replay", from, "--target", target.url, "--junit", junit], io);
    const [sent] = target.calls();
    expect(subscriptionOf(bundleOf(sent?.request.body))?.channel.header).toEqual(REDACTED_LINES);
    expectNoSecret("replay output", out.join("\n"), OLD_SECRETS);
    expectNoSecret("replay JUnit", readFileSync(junit, "utf8"), OLD_SECRETS);
    expectNoSecret("the target's journal", JSON.stringify(target.calls()), OLD_SECRETS);
  });

  it("replay does not report the secrets of a target that answers with them", async () => {
    const dir = tempDir();
    const from = oldJournal(dir);
    const junit = join(dir, "replay.xml");
    const target = await createSandbox({ watch: false });
    closers.push(target.close);
    // A target that answers every subscription with a stored Subscription, credentials in clear.
    target.addRules({
      rules: [
        {
          name: "echo credentials",
          when: { operation: "subscribe-order-notifications" },
          respond: {
            status: 200,
            body: {
              resourceType: "Subscription",
              status: "active",
              reason: "orders",
              criteria: "Task?code=fulfill",
              channel: { type: "rest-hook", endpoint: "http://127.0.0.1:9/hook", header: SUBSCRIPTION_HEADERS },
            },
          },
        },
      ],
    });
    const out: string[] = [];
    const io = { out: (l: string) => out.push(l), err: (l: string) => out.push(l), env: {} };
    expect(await runCli(["replay", from, "--target", target.url, "--junit", junit], io)).toBe(1);
    expect(out.join("\n")).toContain("[redacted]");
    expectNoSecret("replay output", out.join("\n"), OLD_SECRETS);
    expectNoSecret("replay JUnit", readFileSync(junit, "utf8"), OLD_SECRETS);
  });
});
