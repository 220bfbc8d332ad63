import { createHash } from "node:crypto";
import type { TLSSocket } from "node:tls";
import type { Context } from "hono";

/** What a request's verified client certificate says (mutual TLS): the facts workspace choice and RFC 8705 need. */
export interface PeerCertificate {
  /** The subject's common name (the first CN), or undefined when the subject has none. */
  commonName: string | undefined;
  /** The subject as OpenSSL prints it, one attribute per line ("CN=team-a"). */
  subject: string;
  /** The issuer, printed the same way. */
  issuer: string;
  /** RFC 8705 `x5t#S256`: the SHA-256 of the certificate's DER, base64url without padding. */
  thumbprintS256: string;
  /** The certificate's serial number, hex as OpenSSL prints it. */
  serialNumber: string;
  /** End of validity, ISO 8601. */
  validTo: string;
}

// A keep-alive connection carries many requests: its certificate is read and hashed once.
const known = new WeakMap<object, PeerCertificate | null>();

/**
 * The client certificate of a connection, when the connection is TLS and the certificate was verified against the
 * --tls-client-ca CA (`authorized`); undefined otherwise: plain HTTP, no certificate, in-process (`app.request`).
 * An unverified certificate is never returned: the server closes such a connection before any request.
 */
export function peerCertificateOf(socket: unknown): PeerCertificate | undefined {
  if (typeof socket !== "object" || socket === null || !(socket as { encrypted?: boolean }).encrypted) return undefined;
  const cached = known.get(socket);
  if (cached !== undefined) return cached ?? undefined;
  const tls = socket as TLSSocket;
  const cert = tls.authorized ? tls.getPeerX509Certificate() : undefined;
  const facts = cert
    ? {
        commonName: commonNameOf(tls.getPeerCertificate().subject),
        subject: cert.subject,
        issuer: cert.issuer,
        thumbprintS256: thumbprintS256(cert.raw),
        serialNumber: cert.serialNumber,
        validTo: new Date(cert.validTo).toISOString(),
      }
    : null;
  known.set(socket, facts);
  return facts ?? undefined;
}

/** The verified client certificate of a request the Hono app serves (its Node socket), or undefined. */
export function peerCertificate(c: Context): PeerCertificate | undefined {
  return peerCertificateOf((c.env as { incoming?: { socket?: unknown } } | undefined)?.incoming?.socket);
}

/**
 * RFC 8705 §3.1 `x5t#S256`: base64url (no padding) of the SHA-256 of the DER certificate.
 *
 * @example
 *   thumbprintS256(new X509Certificate(pem).raw) // "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"
 */
export function thumbprintS256(der: Uint8Array): string {
  return createHash("sha256").update(der).digest("base64url");
}

/** The first CN of a subject as Node parses it (unescaped; an array when the subject has several). */
function commonNameOf(subject: { CN?: string | string[] } | undefined): string | undefined {
  const cn = subject?.CN;
  return Array.isArray(cn) ? cn[0] : cn;
}
