import { X509Certificate } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import * as tls from "node:tls";

/** The push TLS flags as given: file paths, each undefined when not given. */
export interface PushTlsFiles {
  /** --push-client-cert: the certificate every HTTPS push presents (PEM; its chain may follow it). */
  clientCert?: string | undefined;
  /** --push-client-key: its private key (PEM). */
  clientKey?: string | undefined;
  /** --push-client-certs: a folder of NAME.crt + NAME.key pairs a subscription may choose by NAME. */
  clientCerts?: string | undefined;
  /** --push-ca: CA certificates (PEM) receivers are verified against, besides the system's. */
  ca?: string | undefined;
  /** --tls-cert: the sandbox's own server certificate, never offered from --push-client-certs. */
  serverCert?: string | undefined;
}

/** RFC 5280 4.2.1.12's id-kp-clientAuth. */
const CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";
/** anyExtendedKeyUsage: a certificate for any purpose. */
const ANY_PURPOSE = "2.5.29.37.0";

/**
 * Why a certificate of --push-client-certs is not a client's, or null when it is. A CA's (the certs command's ca.crt)
 * is not; neither is one whose extended key usage leaves out clientAuth (the certs command's server.crt: serverAuth
 * only), which a receiver would refuse anyway, nor the sandbox's own server certificate: offering it would let any
 * subscription make pushes prove possession of the HTTPS server's key. Without the extension a certificate is for
 * any purpose (RFC 5280 4.2.1.12), so it is offered.
 */
function notAClient(cert: X509Certificate, serverFingerprint: string | undefined): string | null {
  if (cert.ca) return "a CA's certificate";
  if (serverFingerprint !== undefined && cert.fingerprint256 === serverFingerprint) return "the --tls-cert certificate";
  const usages = cert.keyUsage; // Node's name for the extended key usages
  if (usages !== undefined && !usages.includes(CLIENT_AUTH) && !usages.includes(ANY_PURPOSE)) {
    return "a certificate not for client authentication (no clientAuth extended key usage)";
  }
  return null;
}

/** A client certificate the sandbox can present, ready for a connection. */
interface Identity {
  /** Where it was read from, for messages. */
  file: string;
  context: tls.SecureContext;
}

/** A name a subscription may give: a file name without surprises (no slashes or spaces), as `certs --client` takes. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** Node's trust store as connections use it: the bundled roots, plus NODE_EXTRA_CA_CERTS where Node tells them. */
function systemCertificates(): string[] {
  const get = (tls as { getCACertificates?: (type: string) => string[] }).getCACertificates;
  return get ? get("default") : [...tls.rootCertificates];
}

function read(file: string, flag: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    throw new Error(
      `${flag} ${JSON.stringify(file)}: cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    );
  }
}

/** The PEM certificates of a file, each checked to be one; throws naming the file. */
function certificates(text: string, file: string, flag: string): string[] {
  const pems = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (pems.length === 0)
    throw new Error(`${flag} ${JSON.stringify(file)} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  for (const pem of pems) {
    try {
      new X509Certificate(pem);
    } catch (error) {
      throw new Error(
        `${flag} ${JSON.stringify(file)}: a certificate in it cannot be read (${(error as Error).message})`,
      );
    }
  }
  return pems;
}

/**
 * How pushes over HTTPS use TLS: the client certificate they present (the default one, or one a subscription names)
 * and the CAs receivers are verified against. Everything is read and checked at start, so a wrong file stops the
 * start with its name rather than failing every push later.
 */
export class PushTls {
  readonly #identities = new Map<string, Identity>();
  /** The folder's certificates not offered, by name: why (for a subscription that names one). */
  readonly #skipped = new Map<string, string>();
  readonly #default: Identity | undefined;
  /** Without a client certificate: only the trust store (or Node's default when no --push-ca). */
  readonly #anonymous: tls.SecureContext | undefined;

  private constructor(files: PushTlsFiles) {
    const ca = files.ca
      ? [...systemCertificates(), ...certificates(read(files.ca, "--push-ca"), files.ca, "--push-ca")]
      : undefined;
    const identity = (certFile: string, keyFile: string, flag: string): Identity => {
      const cert = read(certFile, flag);
      const key = read(keyFile, flag === "--push-client-cert" ? "--push-client-key" : flag);
      certificates(cert, certFile, flag);
      try {
        return { file: certFile, context: tls.createSecureContext({ cert, key, ...(ca ? { ca } : {}) }) };
      } catch (error) {
        const why = /mismatch/i.test((error as Error).message)
          ? "the key is not the certificate's"
          : (error as Error).message;
        throw new Error(`${flag} ${JSON.stringify(certFile)} with the key ${JSON.stringify(keyFile)}: ${why}`);
      }
    };
    if (files.clientCert && files.clientKey) {
      this.#default = identity(files.clientCert, files.clientKey, "--push-client-cert");
      const notAfter = Date.parse(new X509Certificate(read(files.clientCert, "--push-client-cert")).validTo);
      // Every push would present it: an expired one is a mistake, not a rehearsal (the folder's may be expired).
      if (notAfter < Date.now()) {
        throw new Error(
          `--push-client-cert ${JSON.stringify(files.clientCert)} expired on ${new Date(notAfter).toISOString()}: give a valid certificate (to rehearse an expired one, put it in --push-client-certs and name it in a subscription)`,
        );
      }
    }
    if (files.clientCerts) {
      const serverPem = files.serverCert
        ? certificates(read(files.serverCert, "--tls-cert"), files.serverCert, "--tls-cert")[0]
        : undefined;
      const serverFingerprint = serverPem ? new X509Certificate(serverPem).fingerprint256 : undefined;
      let entries: string[];
      try {
        entries = readdirSync(files.clientCerts);
      } catch (error) {
        throw new Error(
          `--push-client-certs ${JSON.stringify(files.clientCerts)}: cannot read the folder (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
        );
      }
      for (const entry of entries.filter((e) => e.endsWith(".crt")).sort()) {
        const name = entry.slice(0, -".crt".length);
        if (!NAME.test(name)) continue;
        const certFile = join(files.clientCerts, entry);
        const pem = certificates(read(certFile, "--push-client-certs"), certFile, "--push-client-certs")[0] ?? "";
        const why = notAClient(new X509Certificate(pem), serverFingerprint);
        if (why !== null) {
          this.#skipped.set(name, why);
          continue;
        }
        const keyFile = join(files.clientCerts, `${name}.key`);
        if (!entries.includes(`${name}.key`)) {
          throw new Error(
            `--push-client-certs ${JSON.stringify(files.clientCerts)}: ${entry} has no ${name}.key beside it (each certificate NAME.crt needs its key NAME.key)`,
          );
        }
        this.#identities.set(name, identity(certFile, keyFile, "--push-client-certs"));
      }
    }
    this.#anonymous = ca ? tls.createSecureContext({ ca }) : undefined;
  }

  /** The push TLS of these files, or undefined when none is given (pushes then go as they always did). */
  static load(files: PushTlsFiles): PushTls | undefined {
    if (Boolean(files.clientCert) !== Boolean(files.clientKey)) {
      throw new Error(
        files.clientCert
          ? "--push-client-cert needs --push-client-key (PUSH_CLIENT_KEY): the certificate's private key"
          : "--push-client-key needs --push-client-cert (PUSH_CLIENT_CERT): the certificate it is the key of",
      );
    }
    if (!files.clientCert && !files.clientCerts && !files.ca) return undefined;
    return new PushTls(files);
  }

  /** The names a subscription may choose (the folder's NAME.crt files). */
  names(): string[] {
    return [...this.#identities.keys()];
  }

  /**
   * Why a subscription may not name `name`, or null when it may.
   *
   * @example
   *   tls.nameProblem("alnoor") // null when alnoor.crt and alnoor.key are in --push-client-certs
   */
  nameProblem(name: string): string | null {
    if (this.#identities.has(name)) return null;
    const known = this.names();
    const skipped = this.#skipped.get(name);
    const has = known.length === 0 ? "it has none" : `it has ${known.map((n) => JSON.stringify(n)).join(", ")}`;
    if (skipped !== undefined) {
      return `the sandbox does not present ${name}.crt of --push-client-certs: ${skipped}, not a client's; ${has}`;
    }
    return known.length === 0
      ? `the sandbox has no client certificate named ${JSON.stringify(name)}: it was started without --push-client-certs (a folder of NAME.crt and NAME.key files)`
      : `the sandbox has no client certificate named ${JSON.stringify(name)}; it has ${known.map((n) => JSON.stringify(n)).join(", ")} (--push-client-certs)`;
  }

  /**
   * The TLS context of a push presenting `name`'s certificate, or the default one (--push-client-cert) when no name;
   * undefined when there is nothing to add to Node's defaults; an Error when the name is unknown.
   */
  contextFor(name: string | undefined): tls.SecureContext | undefined | Error {
    if (name !== undefined) {
      const identity = this.#identities.get(name);
      return identity ? identity.context : new Error(this.nameProblem(name) ?? name);
    }
    return this.#default?.context ?? this.#anonymous;
  }
}

/** TLS errors of Node (OpenSSL's verify codes, Node's own) that say the receiver's certificate is not trusted. */
const UNTRUSTED = new Set([
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "CERT_SIGNATURE_FAILURE",
  "CERT_REVOKED",
  "INVALID_CA",
  "INVALID_PURPOSE",
  "PATH_LENGTH_EXCEEDED",
  "UNABLE_TO_DECRYPT_CERT_SIGNATURE",
  "UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY",
  "CERT_CHAIN_TOO_LONG",
  "HOSTNAME_MISMATCH",
]);

/**
 * What a TLS failure of a push means, said for the journal, or null when the error is not one: the receiver's
 * certificate failed verification (untrusted, expired, another host's), or the receiver refused the sandbox's
 * client certificate (a TLS alert). Neither mends itself between attempts, so such a push is not retried.
 *
 * @example
 *   tlsFailure(Object.assign(new Error("unable to verify the first certificate"), { code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE" }))
 *   // "the receiver's certificate failed verification (UNABLE_TO_VERIFY_LEAF_SIGNATURE: …): …"
 */
export function tlsFailure(error: unknown): string | null {
  // node:https's errors carry their code; fetch's (a push without push TLS) carry it in their cause.
  const own = error as { code?: unknown; message?: string; cause?: { code?: unknown; message?: string } } | null;
  const failure = typeof own?.code === "string" ? own : own?.cause;
  const code = failure?.code;
  if (typeof code !== "string") return null;
  const said = `${code}: ${failure?.message ?? ""}`;
  if (UNTRUSTED.has(code)) {
    return `the receiver's certificate failed verification (${said}): not retried; give the CA that signed it with --push-ca`;
  }
  if (code === "CERT_HAS_EXPIRED" || code === "CERT_NOT_YET_VALID") {
    return `the receiver's certificate is not valid now (${said}): not retried`;
  }
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID") {
    return `the receiver's certificate does not name the host pushed to (${said}): not retried`;
  }
  const alert = /^ERR_SSL_(?:SSLV3|TLSV1|TLSV13)_ALERT_(.+)$/.exec(code)?.[1];
  if (alert && /CERTIFICATE|UNKNOWN_CA|ACCESS_DENIED/.test(alert)) {
    const what = alert.toLowerCase().replaceAll("_", " ");
    return `the receiver refused the TLS connection with the alert "${what}" (${said}): it did not accept the client certificate the sandbox presented, or wants one (--push-client-cert, or a certificate the subscription names); not retried`;
  }
  return null;
}

/**
 * What to add to a connection reset of an https push: under TLS 1.3 the client's request may already be on its way
 * when the receiver rejects the client certificate, and the reset then arrives before the receiver's alert, so the
 * reason is lost. Such an error is retried like any reset; its text says what it may be.
 */
export function resetHint(error: unknown, https: boolean): string {
  const own = error as { code?: unknown; cause?: { code?: unknown } } | null;
  const code = own?.code ?? own?.cause?.code;
  return https && code === "ECONNRESET"
    ? " (the receiver closed the connection during or just after the TLS handshake: a receiver that does not accept the client certificate presented, or wants one, may look like this)"
    : "";
}
