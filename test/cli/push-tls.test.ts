import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TLSSocket } from "node:tls";
import type { Subscription } from "fhir/r4.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  makeCertificateAuthority,
  makeClientCertificate,
  makeServerCertificate,
} from "../../src/tls/make-certificates.js";
import { subscriptionMessage } from "../orders/pharmacy-client.js";
import { envelope } from "../support/messages.js";
import { cli, http, killStray, runToExit, startCli } from "./cli-process.js";

// Pushes over HTTPS through the real CLI: a pharmacy receiver on 127.0.0.1 that requires a client certificate
// from the exchange's CA (requestCert, rejectUnauthorized), the sandbox given that certificate and the receiver's
// CA by flag and environment variable, as a team would start it.

let dir: string;
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const files: Record<string, string> = {};
let receiverPems: { cert: string; key: string; clientCa: string };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cli-push-tls-"));
  const receiverCa = await makeCertificateAuthority("Pharmacy CA");
  const receiver = await makeServerCertificate(receiverCa, ["localhost", "127.0.0.1"]);
  const exchangeCa = await makeCertificateAuthority("Exchange CA");
  const exchange = await makeClientCertificate(exchangeCa, "exchange-sandbox");
  const other = await makeClientCertificate(exchangeCa, "other");
  files.ca = file("pharmacy-ca.crt", receiverCa.certPem);
  files.cert = file("exchange.crt", exchange.certPem);
  files.key = file("exchange.key", exchange.keyPem);
  files.otherKey = file("other.key", other.keyPem);
  receiverPems = { cert: receiver.certPem, key: receiver.keyPem, clientCa: exchangeCa.certPem };
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await killStray();
});

async function receiver() {
  const seen: string[] = [];
  const server = createServer(
    {
      cert: receiverPems.cert,
      key: receiverPems.key,
      ca: receiverPems.clientCa,
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req, res) => {
      seen.push(String((req.socket as TLSSocket).getPeerCertificate().subject?.CN));
      req.resume().on("end", () => res.writeHead(200).end());
    },
  );
  server.on("tlsClientError", () => undefined);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  closers.push(() => new Promise((resolve) => server.close(resolve)));
  return { url: `https://127.0.0.1:${(server.address() as { port: number }).port}/hook`, seen };
}

describe("serve --push-client-cert --push-client-key --push-ca", () => {
  it("pushes to a receiver that requires mutual TLS, presenting the certificate", async () => {
    const hook = await receiver();
    const { url } = await startCli(
      ["--no-watch", "--push-client-cert", files.cert as string, "--push-client-key", files.key as string],
      { PUSH_CA: files.ca as string },
    );
    const subscribed = await http(`${url}/uae-fhir/r4/$process-message`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: envelope(subscriptionMessage("PH-MTLS-1", hook.url)),
    });
    expect(subscribed.status, subscribed.text).toBe(200);
    const order = await http(`${url}/__admin/orders`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ pharmacies: ["PH-MTLS-1"] }),
    });
    expect(order.status, order.text).toBe(201);
    const waited = await http(`${url}/__admin/calls/wait`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ operation: "order-fulfillment-request", direction: "outbound", timeoutMs: 10_000 }),
    });
    expect(waited.json?.ok, waited.text).toBe(true);
    const view = await http(`${url}/__admin/orders/${order.json.id}`);
    expect(view.json.pharmacies[0].delivery).toMatchObject({ delivered: true, status: 200, error: null });
    expect(hook.seen).toEqual(["exchange-sandbox"]);
  });

  it("offers from the certs command's folder only its client certificates, never --tls-cert's", async () => {
    const made = join(dir, "made");
    const written = await runToExit(["certs", "--out", made, "--client", "team-a", "--client", "team-b"]);
    expect(written.code, written.stderr).toBe(0);
    // team-b's pair serves HTTPS here (a certificate of the folder given as --tls-cert); plain HTTP on --port.
    const child = cli([
      "serve",
      "--port",
      "0",
      "--host",
      "127.0.0.1",
      "--no-watch",
      "--tls-port",
      "0",
      "--tls-cert",
      join(made, "team-b.crt"),
      "--tls-key",
      join(made, "team-b.key"),
      "--push-client-certs",
      made,
    ]);
    const [, plain] = await child.waitForOutput(/ and (http:\/\/[^\s"]+)/);
    const naming = (licence: string, name: string) => {
      const bundle = subscriptionMessage(licence, "https://127.0.0.1:9/hook");
      const sub = bundle.entry?.[1]?.resource as Subscription;
      sub.channel.extension = [
        { url: "https://uae-fhir-sandbox.example/fhir/StructureDefinition/push-client-certificate", valueString: name },
      ];
      return http(`${plain}/uae-fhir/r4/$process-message`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: envelope(bundle),
      });
    };
    expect((await naming("PH-A", "team-a")).status).toBe(200);
    for (const name of ["server", "ca", "team-b"]) {
      const refused = await naming(`PH-${name}`, name);
      expect(refused.status, name).toBe(400);
      expect(refused.json.issue[0].diagnostics, name).toMatch(/it has "team-a"\./);
    }
  });

  it("refuses to start when the key is not the certificate's, naming both files", async () => {
    const run = await runToExit([
      "serve",
      "--port",
      "0",
      "--no-watch",
      "--push-client-cert",
      files.cert as string,
      "--push-client-key",
      files.otherKey as string,
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /--push-client-cert ".*exchange\.crt" with the key ".*other\.key": the key is not the certificate's/,
    );
  });
});
