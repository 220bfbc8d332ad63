import { execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { once } from "node:events";
import { connect, createServer, type TLSSocket } from "node:tls";
import { describe, expect, it } from "vitest";
import {
  makeCertificateAuthority,
  makeClientCertificate,
  makeServerCertificate,
} from "../../src/tls/make-certificates.js";
import { type PeerCertificate, peerCertificateOf, thumbprintS256 } from "../../src/tls/peer-certificate.js";

describe("a connection's verified client certificate", () => {
  it("x5t#S256 is the base64url SHA-256 of the DER, as openssl computes it", async () => {
    const ca = await makeCertificateAuthority("Thumbprint CA");
    const client = await makeClientCertificate(ca, "team-a");
    // openssl: PEM → DER → SHA-256 → base64, then base64url without padding by hand (RFC 4648 §5).
    const der = execFileSync("openssl", ["x509", "-outform", "DER"], { input: client.certPem });
    const digest = execFileSync("openssl", ["dgst", "-sha256", "-binary"], { input: der });
    const expected = digest.toString("base64").replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
    expect(thumbprintS256(new X509Certificate(client.certPem).raw)).toBe(expected);
    expect(expected).toHaveLength(43);
  });

  it("is read from a verified TLS socket only: CN unescaped, thumbprint; none without a certificate", async () => {
    const ca = await makeCertificateAuthority("Peer CA");
    const server = await makeServerCertificate(ca, ["localhost", "127.0.0.1"]);
    const client = await makeClientCertificate(ca, 'clinic, "north"');
    const seen: (PeerCertificate | undefined)[] = [];
    const tls = createServer(
      { cert: server.certPem, key: server.keyPem, ca: ca.certPem, requestCert: true, rejectUnauthorized: false },
      (socket) => {
        seen.push(peerCertificateOf(socket));
        socket.end("done");
      },
    );
    tls.listen(0, "127.0.0.1");
    await once(tls, "listening");
    const { port } = tls.address() as { port: number };
    const talk = async (options: { cert?: string; key?: string }) => {
      const socket: TLSSocket = connect({
        host: "127.0.0.1",
        port,
        servername: "localhost",
        ca: ca.certPem,
        ...options,
      });
      socket.resume();
      await once(socket, "end");
    };
    try {
      await talk({ cert: client.certPem, key: client.keyPem });
      await talk({});
    } finally {
      tls.close();
    }
    expect(seen[0]).toMatchObject({
      commonName: 'clinic, "north"',
      issuer: "CN=Peer CA",
      thumbprintS256: thumbprintS256(new X509Certificate(client.certPem).raw),
    });
    expect(seen[1]).toBeUndefined();
    expect(peerCertificateOf(undefined)).toBeUndefined();
    expect(peerCertificateOf({ encrypted: false })).toBeUndefined();
  });
});
