import { createPrivateKey, type KeyObject, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { createSecureContext } from "node:tls";

/** Whether the HTTPS server asks for a client certificate, and what it does without a verified one. */
export type ClientAuth = "none" | "optional" | "required";
export const CLIENT_AUTH_MODES: readonly ClientAuth[] = ["none", "optional", "required"];

/** The files the command line names (--tls-cert, --tls-key, --tls-client-ca, --tls-client-auth, --tls-port). */
export interface TlsFiles {
  certFile: string;
  keyFile: string;
  clientCaFile: string | undefined;
  clientAuth: ClientAuth;
  /** HTTPS on this port and plain HTTP on --port; undefined: --port serves HTTPS alone. */
  port: number | undefined;
}

/** What an HTTPS server is given (startServer's `tls`): PEM texts. */
export interface TlsListen {
  /** The server certificate, then any intermediates. */
  cert: string;
  key: string;
  /** The CA client certificates are verified against (--tls-client-ca). */
  clientCa?: string | undefined;
  /** Default: required with a clientCa, else none. */
  clientAuth?: ClientAuth | undefined;
  /** HTTPS on this port and plain HTTP on the listen port; undefined: the listen port serves HTTPS alone. */
  port?: number | undefined;
}

/** The PEMs of the command line's files, read and checked. */
export interface ServerTls extends TlsListen {
  /** The server certificate's end of validity. */
  validTo: Date;
}

/** A TLS file that cannot serve: the start stops (exit 2) with this message, which names the file and the flag. */
export class TlsProblem extends Error {}

const CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * Reads and checks the TLS files before anything listens, so that a wrong one is a clear error at start rather than
 * a handshake every client fails: readable, PEM, the key the certificate's, the certificate valid now.
 */
export function loadServerTls(files: TlsFiles, now: Date = new Date()): ServerTls {
  const cert = readPem(files.certFile, "--tls-cert");
  const key = readPem(files.keyFile, "--tls-key");
  const chain = certificatesOf(cert, files.certFile, "--tls-cert");
  // The first certificate of the file is the server's; any after it are intermediates sent along.
  const leaf = chain[0] as X509Certificate;
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(key);
  } catch (error) {
    const encrypted = /ENCRYPTED/.test(key);
    throw new TlsProblem(
      `--tls-key ${JSON.stringify(files.keyFile)}: ${encrypted ? "the key is encrypted with a passphrase; give it unencrypted (e.g. openssl pkey -in key.pem -out plain.pem)" : `not a PEM private key (${(error as Error).message})`}`,
    );
  }
  if (!leaf.checkPrivateKey(privateKey)) {
    throw new TlsProblem(
      `--tls-key ${JSON.stringify(files.keyFile)} is not the key of the certificate in --tls-cert ${JSON.stringify(files.certFile)} (${leaf.subject.replaceAll("\n", ", ")}): give the key it was made with`,
    );
  }
  checkValidity(leaf, files.certFile, "--tls-cert", now);
  let clientCa: string | undefined;
  if (files.clientCaFile !== undefined) {
    clientCa = readPem(files.clientCaFile, "--tls-client-ca");
    for (const ca of certificatesOf(clientCa, files.clientCaFile, "--tls-client-ca")) {
      checkValidity(ca, files.clientCaFile, "--tls-client-ca", now);
    }
  }
  try {
    // Whatever OpenSSL still refuses (an algorithm it does not take), named here rather than at the first handshake.
    createSecureContext({ cert, key, ...(clientCa !== undefined ? { ca: clientCa } : {}) });
  } catch (error) {
    throw new TlsProblem(
      `--tls-cert ${JSON.stringify(files.certFile)} / --tls-key ${JSON.stringify(files.keyFile)}: ${(error as Error).message}`,
    );
  }
  return {
    cert,
    key,
    clientCa,
    clientAuth: files.clientAuth,
    port: files.port,
    validTo: new Date(leaf.validTo),
  };
}

function readPem(file: string, flag: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === "ENOENT" ? "no such file" : code === "EISDIR" ? "a folder, not a file" : (code ?? "unreadable");
    throw new TlsProblem(
      `${flag} ${JSON.stringify(file)}: cannot read it (${why}); give a PEM file (uae-fhir-sandbox certs makes local ones)`,
    );
  }
}

function certificatesOf(pem: string, file: string, flag: string): X509Certificate[] {
  const blocks = pem.match(CERTIFICATE) ?? [];
  if (blocks.length === 0) {
    const what = /-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem)
      ? "a private key, not a certificate"
      : "no PEM certificate";
    throw new TlsProblem(
      `${flag} ${JSON.stringify(file)}: ${what}; give a PEM certificate (-----BEGIN CERTIFICATE-----)`,
    );
  }
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch (error) {
      throw new TlsProblem(
        `${flag} ${JSON.stringify(file)}: certificate ${i + 1} of the file cannot be read (${(error as Error).message})`,
      );
    }
  });
}

function checkValidity(cert: X509Certificate, file: string, flag: string, now: Date): void {
  const from = new Date(cert.validFrom);
  const to = new Date(cert.validTo);
  const who = cert.subject.replaceAll("\n", ", ");
  if (now < from) {
    throw new TlsProblem(
      `${flag} ${JSON.stringify(file)}: the certificate (${who}) is not valid yet: from ${from.toISOString()}; check this machine's clock, or make one valid now`,
    );
  }
  if (now > to) {
    throw new TlsProblem(
      `${flag} ${JSON.stringify(file)}: the certificate (${who}) expired on ${to.toISOString()}; make a new one (e.g. uae-fhir-sandbox certs --out certs --force)`,
    );
  }
}
