import { once } from "node:events";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TLSSocket } from "node:tls";
import type { Bundle, OperationOutcome, Subscription } from "fhir/r4.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createApp, type SandboxApp } from "../../src/app.js";
import type { SandboxOptions } from "../../src/config/options.js";
import {
  type CertificateAuthority,
  type IssuedCertificate,
  makeCertificateAuthority,
  makeClientCertificate,
  makeServerCertificate,
} from "../../src/tls/make-certificates.js";
import { authSandbox } from "../auth/oauth-support.js";
import { post } from "../support/messages.js";
import { newOrder, pushesSettled, quietLogger, subscriptionMessage } from "./pharmacy-client.js";

// Pushes over HTTPS (docs/pharmacy-guide.md, "Pushes over HTTPS"): the receivers are real node:https servers on
// 127.0.0.1 that ask for a client certificate and refuse a connection without one (requestCert,
// rejectUnauthorized), as a pharmacy's mutual-TLS endpoint does.

/** The extension a Subscription names its push certificate with: written out, as a pharmacy would. */
const CERTIFICATE_EXTENSION = "https://uae-fhir-sandbox.example/fhir/StructureDefinition/push-client-certificate";

let dir: string;
let receiverCa: CertificateAuthority;
let receiverCert: IssuedCertificate;
let strangerCert: IssuedCertificate;
const files: Record<string, string> = {};

const write = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "push-tls-"));
  // The pharmacy's side: its server certificate, from a CA the sandbox is given with --push-ca.
  receiverCa = await makeCertificateAuthority("Pharmacy Receiver CA");
  receiverCert = await makeServerCertificate(receiverCa, ["localhost", "127.0.0.1"]);
  // A receiver whose certificate comes from a CA nobody gave the sandbox.
  strangerCert = await makeServerCertificate(await makeCertificateAuthority("Unknown CA"), ["localhost", "127.0.0.1"]);
  // The exchange's side: the client certificates pushes present, from a CA the receivers trust.
  const exchangeCa = await makeCertificateAuthority("Exchange Client CA");
  const exchange = await makeClientCertificate(exchangeCa, "sandbox-exchange");
  const alnoor = await makeClientCertificate(exchangeCa, "exchange-for-alnoor");
  const rogue = await makeClientCertificate(await makeCertificateAuthority("Rogue CA"), "rogue");
  files.exchangeCa = write("exchange-ca.crt", exchangeCa.certPem);
  files.receiverCa = write("receiver-ca.crt", receiverCa.certPem);
  files.clientCert = write("exchange.crt", exchange.certPem);
  files.clientKey = write("exchange.key", exchange.keyPem);
  files.otherKey = write("alnoor-alone.key", alnoor.keyPem);
  mkdirSync(join(dir, "certs"));
  files.folder = join(dir, "certs");
  write("certs/alnoor.crt", alnoor.certPem);
  write("certs/alnoor.key", alnoor.keyPem);
  write("certs/rogue.crt", rogue.certPem);
  write("certs/rogue.key", rogue.keyPem);
  // Names as `certs --client` takes them, dots included; a CA beside them (the certs command's ca.crt) is not one.
  write("certs/pharmacy.example.crt", alnoor.certPem);
  write("certs/pharmacy.example.key", alnoor.keyPem);
  write("certs/ca.crt", exchangeCa.certPem);
  write("certs/ca.key", exchangeCa.keyPem);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

interface Receiver {
  url: string;
  /** The subject CN of the client certificate of each request that got through. */
  seen: string[];
}

/** A pharmacy's HTTPS receiver that requires a client certificate signed by the exchange's CA. */
async function mutualTlsReceiver(cert: IssuedCertificate = receiverCert, host = "127.0.0.1"): Promise<Receiver> {
  const seen: string[] = [];
  const server: Server = createServer(
    {
      cert: cert.certPem,
      key: cert.keyPem,
      ca: readFileSync(files.exchangeCa as string, "utf8"),
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req, res) => {
      seen.push(String((req.socket as TLSSocket).getPeerCertificate().subject?.CN));
      req.resume().on("end", () => res.writeHead(200).end());
    },
  );
  // A refused handshake is the test's point, not a failure of the receiver.
  server.on("tlsClientError", () => undefined);
  server.listen(0, host);
  await once(server, "listening");
  closers.push(() => new Promise((resolve) => server.close(resolve)));
  const { port } = server.address() as { port: number };
  return { url: `https://${host}:${port}/fhir-hook`, seen };
}

function sandbox(options: Partial<SandboxOptions>): SandboxApp {
  const s = createApp({ pushBackoffMs: 2, scenarios: undefined, ...options }, { logger: quietLogger });
  closers.push(s.close);
  return s;
}

/** subscribe-order-notifications to `endpoint`, naming a push certificate when `certificate` is given. */
function subscription(licence: string, endpoint: string, certificate?: unknown): Bundle {
  const bundle = subscriptionMessage(licence, endpoint);
  const sub = bundle.entry?.[1]?.resource as Subscription;
  if (certificate !== undefined) sub.channel.extension = [{ url: CERTIFICATE_EXTENSION, ...(certificate as object) }];
  return bundle;
}

async function subscribed(s: SandboxApp, licence: string, endpoint: string, certificate?: string) {
  const reply = await post(
    s.app,
    subscription(licence, endpoint, certificate === undefined ? undefined : { valueString: certificate }),
  );
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
}

/** Creates an order for `licence` and waits for its push to end: the request's delivery. */
async function pushTo(s: SandboxApp, licence: string) {
  const order = await newOrder(s.app, { pharmacies: [licence] });
  const settled = await pushesSettled(s, order.id);
  const request = settled.pharmacies.find((p) => p.licence === licence);
  return { state: request?.state, delivery: request?.delivery };
}

/**
 * A receiver refusing the client certificate: its TLS alert, or (TLS 1.3: the request may be sent before the alert
 * comes) a reset that says what it may be.
 */
const REFUSED_CERTIFICATE =
  /receiver refused the TLS connection with the alert "[^"]*(certificate|unknown ca)[^"]*"|ECONNRESET.*does not accept the client certificate presented, or wants one/;

const base = () => ({ pushCa: files.receiverCa, pushClientCert: files.clientCert, pushClientKey: files.clientKey });

describe("pushes over HTTPS present a client certificate and verify the receiver", () => {
  it("delivers to a receiver that requires a client certificate, presenting --push-client-cert", async () => {
    const receiver = await mutualTlsReceiver();
    const s = sandbox(base());
    await subscribed(s, "PH-TLS-1", receiver.url);
    const { state, delivery } = await pushTo(s, "PH-TLS-1");
    expect(delivery?.error ?? null).toBeNull();
    expect(state).toBe("delivered");
    expect(receiver.seen).toEqual(["sandbox-exchange"]);
  });

  it("fails without a client certificate, saying the receiver refused the connection", async () => {
    const receiver = await mutualTlsReceiver();
    const s = sandbox({ pushCa: files.receiverCa, pushAttempts: 3 });
    await subscribed(s, "PH-TLS-2", receiver.url);
    const { state, delivery } = await pushTo(s, "PH-TLS-2");
    expect(state).toBe("delivery-failed");
    expect(delivery?.error).toMatch(REFUSED_CERTIFICATE);
    // The alert (certificate required) ends the push at once; a reset that hid it is retried as resets are.
    if (/alert/.test(delivery?.error ?? "")) expect(delivery?.attempts).toBe(1);
    expect(receiver.seen).toEqual([]);
  });

  it("fails, once, when the receiver's certificate is from a CA the sandbox was not given", async () => {
    const receiver = await mutualTlsReceiver(strangerCert);
    const s = sandbox({ ...base(), pushAttempts: 3 });
    await subscribed(s, "PH-TLS-3", receiver.url);
    const { state, delivery } = await pushTo(s, "PH-TLS-3");
    expect(state).toBe("delivery-failed");
    expect(delivery?.attempts).toBe(1);
    expect(delivery?.error).toMatch(/receiver's certificate failed verification \([A-Z_]+: .*--push-ca/);
    expect(receiver.seen).toEqual([]);
    // The journal keeps the same reason on the outbound call.
    const res = await s.app.request("/__admin/calls?direction=outbound");
    const { calls } = (await res.json()) as { calls: Array<{ error?: string; attempt: number }> };
    expect(calls.map((c) => [c.attempt, c.error])).toEqual([[1, delivery?.error]]);
    // And the pharmacy's last delivery, which the dashboard's pharmacies page shows.
    const listed = (await (await s.app.request("/__admin/pharmacies")).json()) as {
      pharmacies: Array<{ licence: string; lastDelivery: { error: string | null } | null }>;
    };
    expect(listed.pharmacies.find((p) => p.licence === "PH-TLS-3")?.lastDelivery?.error).toBe(delivery?.error);
  });

  it("without --push-ca the receiver's private CA is not trusted (system CAs only)", async () => {
    const receiver = await mutualTlsReceiver();
    const s = sandbox({ pushClientCert: files.clientCert, pushClientKey: files.clientKey });
    await subscribed(s, "PH-TLS-4", receiver.url);
    const { delivery } = await pushTo(s, "PH-TLS-4");
    expect(delivery?.error).toMatch(/failed verification/);
  });

  it("presents the certificate a subscription names from --push-client-certs, and refuses an unknown name", async () => {
    const receiver = await mutualTlsReceiver();
    const s = sandbox({ ...base(), pushClientCerts: files.folder });
    await subscribed(s, "PH-ALNOOR", receiver.url, "alnoor");
    await subscribed(s, "PH-ROGUE", receiver.url, "rogue");
    expect((await pushTo(s, "PH-ALNOOR")).state).toBe("delivered");
    expect(receiver.seen).toEqual(["exchange-for-alnoor"]);
    // The receiver trusts the exchange's CA only: the rogue certificate is refused.
    const rogue = await pushTo(s, "PH-ROGUE");
    expect(rogue.state).toBe("delivery-failed");
    expect(rogue.delivery?.error).toMatch(REFUSED_CERTIFICATE);
    const listed = (await (await s.app.request("/__admin/pharmacies")).json()) as {
      pharmacies: Array<{ licence: string; clientCertificate?: string }>;
    };
    expect(listed.pharmacies.map((p) => [p.licence, p.clientCertificate])).toEqual([
      ["PH-ALNOOR", "alnoor"],
      ["PH-ROGUE", "rogue"],
    ]);

    const unknown = await post(s.app, subscription("PH-X", receiver.url, { valueString: "nobody" }));
    expect(unknown.status).toBe(400);
    const issue = (unknown.body as OperationOutcome).issue[0];
    expect(issue?.diagnostics).toMatch(
      /no client certificate named "nobody"; it has "alnoor", "pharmacy.example", "rogue"/,
    );
    expect(issue?.expression).toEqual(["Bundle.entry[1].resource.channel.extension[0].valueString"]);

    const plain = await post(s.app, subscription("PH-Y", "http://127.0.0.1:9/hook", { valueString: "alnoor" }));
    expect(plain.status).toBe(400);
    expect((plain.body as OperationOutcome).issue[0]?.diagnostics).toMatch(/only over HTTPS/);
  });

  it("refuses a subscription naming a certificate when the sandbox has none", async () => {
    const s = sandbox({});
    const reply = await post(s.app, subscription("PH-Z", "https://127.0.0.1:9/hook", { valueString: "alnoor" }));
    expect(reply.status).toBe(400);
    expect((reply.body as OperationOutcome).issue[0]?.diagnostics).toMatch(/started without --push-client-certs/);
  });

  it("offers from --push-client-certs only client certificates: not a server's, not a CA's, not --tls-cert's", async () => {
    // What `certs --out certs --client alnoor` writes: ca.crt, server.crt (serverAuth only), alnoor.crt (clientAuth).
    const ca = await makeCertificateAuthority("Mixed folder CA");
    const server = await makeServerCertificate(ca, ["localhost"]);
    const client = await makeClientCertificate(ca, "alnoor");
    const second = await makeClientCertificate(ca, "second");
    mkdirSync(join(dir, "mixed"));
    for (const [name, pair] of [
      ["ca", ca],
      ["server", server],
      ["alnoor", client],
      ["second", second],
    ] as const) {
      write(`mixed/${name}.crt`, pair.certPem);
      write(`mixed/${name}.key`, pair.keyPem);
    }
    // --tls-cert is one of the folder's client certificates (a file of its own): that one is never offered either.
    const tlsCert = write("tls-cert.crt", second.certPem);
    const s = sandbox({ pushClientCerts: join(dir, "mixed"), tlsCertFile: tlsCert });
    await subscribed(s, "PH-OK", "https://127.0.0.1:9/hook", "alnoor");
    for (const [licence, name, why] of [
      ["PH-SERVER", "server", /server\.crt .*not for client authentication/],
      ["PH-CA", "ca", /ca\.crt .*a CA's certificate/],
      ["PH-TLS", "second", /second\.crt .*the --tls-cert certificate/],
    ] as const) {
      const reply = await post(s.app, subscription(licence, "https://127.0.0.1:9/hook", { valueString: name }));
      expect(reply.status, name).toBe(400);
      const diagnostics = (reply.body as OperationOutcome).issue[0]?.diagnostics;
      expect(diagnostics).toMatch(why);
      expect(diagnostics).toMatch(/it has "alnoor"\./);
    }
    // Without --tls-cert the second client is offered.
    const all = sandbox({ pushClientCerts: join(dir, "mixed") });
    await subscribed(all, "PH-2", "https://127.0.0.1:9/hook", "second");
  });

  it("refuses to start with a certificate without its key, or with another certificate's key", () => {
    expect(() => createApp({ pushClientCert: files.clientCert }, { logger: quietLogger })).toThrow(
      /--push-client-cert needs --push-client-key/,
    );
    expect(() =>
      createApp({ pushClientCert: files.clientCert, pushClientKey: files.otherKey }, { logger: quietLogger }),
    ).toThrow(
      /--push-client-cert ".*exchange\.crt" with the key ".*alnoor-alone\.key": the key is not the certificate's/,
    );
    expect(() => createApp({ pushCa: join(dir, "nope.crt") }, { logger: quietLogger })).toThrow(
      /--push-ca ".*nope\.crt": cannot read it \(ENOENT\)/,
    );
  });

  it("under --auth oauth2 connects to the checked address and still verifies the certificate for the host name", async () => {
    // The receiver is on this machine: --push-allow names it, and the address connected to is the one checked.
    const receiver = await mutualTlsReceiver(receiverCert, "localhost");
    const s = authSandbox("clients:\n  - { id: pharmacy, secret: pharmacy-secret, scopes: [drug-orders] }\n", {
      ...base(),
      pushBackoffMs: 2,
      pushAllow: ["localhost"],
      scenarios: undefined,
    });
    const res = await s.app.request("/oauth2/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=client_credentials&client_id=pharmacy&client_secret=pharmacy-secret",
    });
    const { access_token: token } = (await res.json()) as { access_token: string };
    const reply = await post(s.app, subscription("PH-GUARDED", receiver.url), {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const { state, delivery } = await pushTo(s, "PH-GUARDED");
    expect(delivery?.error ?? null).toBeNull();
    expect(state).toBe("delivered");
    expect(receiver.seen).toEqual(["sandbox-exchange"]);
  });

  it("presents the certificate a scenario file's fixture pharmacy names", async () => {
    const receiver = await mutualTlsReceiver();
    const scenarios = write(
      "fixture-pharmacy.yaml",
      `fixtures:\n  pharmacies:\n    - licence: PH-FIXTURE-TLS\n      endpoint: ${receiver.url}\n      clientCertificate: pharmacy.example\n`,
    );
    const s = sandbox({ ...base(), pushClientCerts: files.folder, scenarios });
    expect((await pushTo(s, "PH-FIXTURE-TLS")).state).toBe("delivered");
    expect(receiver.seen).toEqual(["exchange-for-alnoor"]);
  });
});
