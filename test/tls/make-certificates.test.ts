import { createPrivateKey, X509Certificate } from "node:crypto";
import { once } from "node:events";
import { connect, createServer, type TLSSocket } from "node:tls";
import { describe, expect, it } from "vitest";
import {
  loadCertificateAuthority,
  makeCertificateAuthority,
  makeClientCertificate,
  makeServerCertificate,
} from "../../src/tls/make-certificates.js";

// Checked with Node's own X.509 parser and OpenSSL's TLS handshake, not with the library that made them.
describe("local test certificates", () => {
  it("makes a CA that signs a server certificate for the named hosts and a client certificate", async () => {
    const ca = await makeCertificateAuthority("Sandbox Test CA");
    const server = await makeServerCertificate(ca, ["localhost", "127.0.0.1", "::1"]);
    const client = await makeClientCertificate(ca, "pharmacy-one");

    const caCert = new X509Certificate(ca.certPem);
    expect(caCert.ca).toBe(true);
    expect(caCert.subject).toBe("CN=Sandbox Test CA");
    expect(caCert.verify(caCert.publicKey)).toBe(true);

    const serverCert = new X509Certificate(server.certPem);
    expect(serverCert.ca).toBe(false);
    expect(serverCert.verify(caCert.publicKey)).toBe(true);
    expect(serverCert.checkIssued(caCert)).toBe(true);
    expect(serverCert.checkHost("localhost")).toBe("localhost");
    expect(serverCert.checkIP("127.0.0.1")).toBe("127.0.0.1");
    expect(serverCert.checkIP("::1")).toBe("::1");
    expect(serverCert.checkHost("example.org")).toBeUndefined();
    expect(serverCert.checkPrivateKey(createPrivateKey(server.keyPem))).toBe(true);
    expect(serverCert.keyUsage).toContain("1.3.6.1.5.5.7.3.1");

    const clientCert = new X509Certificate(client.certPem);
    expect(clientCert.subject).toBe("CN=pharmacy-one");
    expect(clientCert.checkIssued(caCert)).toBe(true);
    expect(clientCert.keyUsage).toContain("1.3.6.1.5.5.7.3.2");
    const days = (Date.parse(clientCert.validTo) - Date.parse(clientCert.validFrom)) / 86_400_000;
    expect(Math.round(days)).toBe(365);
  });

  it("passes a mutual-TLS handshake on 127.0.0.1, and a CA read back from its PEMs signs more", async () => {
    const ca = await loadCertificateAuthority(...pems(await makeCertificateAuthority("Round Trip CA")));
    const server = await makeServerCertificate(ca, ["localhost", "127.0.0.1"]);
    const client = await makeClientCertificate(ca, 'clinic, "north"');
    const tls = createServer(
      { cert: server.certPem, key: server.keyPem, ca: ca.certPem, requestCert: true, rejectUnauthorized: true },
      (socket) => socket.end(String(socket.getPeerCertificate().subject.CN)),
    );
    tls.listen(0, "127.0.0.1");
    await once(tls, "listening");
    const { port } = tls.address() as { port: number };
    try {
      const socket: TLSSocket = connect({
        host: "127.0.0.1",
        port,
        servername: "localhost",
        ca: ca.certPem,
        cert: client.certPem,
        key: client.keyPem,
      });
      const chunks: Buffer[] = [];
      socket.on("data", (c: Buffer) => chunks.push(c));
      await once(socket, "end");
      expect(socket.authorized).toBe(true);
      expect(Buffer.concat(chunks).toString()).toBe('clinic, "north"');
    } finally {
      tls.close();
    }
  });

  it("keeps the validity it is given, so an expired certificate can be made for tests", async () => {
    const ca = await makeCertificateAuthority("Old CA");
    const old = await makeServerCertificate(ca, ["localhost"], {
      notBefore: new Date("2020-01-01T00:00:00Z"),
      notAfter: new Date("2021-01-01T00:00:00Z"),
    });
    expect(new Date(new X509Certificate(old.certPem).validTo).toISOString()).toBe("2021-01-01T00:00:00.000Z");
  });
});

function pems(ca: { certPem: string; keyPem: string }): [string, string] {
  return [ca.certPem, ca.keyPem];
}
