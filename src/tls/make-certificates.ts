// @peculiar/x509 resolves its ASN.1 classes through tsyringe, which needs the Reflect metadata polyfill loaded first.
import "reflect-metadata";
import { randomBytes, webcrypto } from "node:crypto";

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

import { isIP } from "node:net";
import * as x509 from "@peculiar/x509";

/** A certificate and its private key, both PEM. */
export interface IssuedCertificate {
  certPem: string;
  keyPem: string;
}

/** A certificate authority that can sign others: the PEMs and the parsed forms the signer needs. */
export interface CertificateAuthority extends IssuedCertificate {
  readonly cert: x509.X509Certificate;
  readonly keys: CryptoKeyPair;
}

export interface Validity {
  /** Defaults to a minute ago, so that a peer's clock a little behind still accepts the certificate. */
  notBefore?: Date;
  /** Defaults to notBefore + days. */
  notAfter?: Date;
  /** Days of validity when notAfter is not given; default 365. */
  days?: number;
}

// ECDSA P-256: what TLS 1.3 prefers, accepted by Node, curl, browsers and Java; keys made in milliseconds.
const ALGORITHM = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;
const DEFAULT_DAYS = 365;

// Node's WebCrypto is the provider; the library's type for it is the DOM's, which this project does not load.
const provider = webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0];
x509.cryptoProvider.set(provider);

/** A self-signed CA for local test certificates (path length 0: it signs leaf certificates only). */
export async function makeCertificateAuthority(
  commonName: string,
  validity: Validity = {},
): Promise<CertificateAuthority> {
  const keys = await newKeys();
  const { notBefore, notAfter } = period(validity);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber(),
    name: distinguishedName(commonName),
    notBefore,
    notAfter,
    signingAlgorithm: ALGORITHM,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert, keys, certPem: cert.toString("pem"), keyPem: await privateKeyPem(keys.privateKey) };
}

/**
 * A server certificate for the given host names and IP addresses (each in subjectAltName, which is what TLS
 * clients check; the first is also the common name).
 */
export async function makeServerCertificate(
  ca: CertificateAuthority,
  hosts: readonly string[],
  validity: Validity = {},
): Promise<IssuedCertificate> {
  if (hosts.length === 0) throw new Error("a server certificate needs at least one host name or IP address");
  const names = hosts.map((host) =>
    isIP(host) ? { type: "ip" as const, value: host } : { type: "dns" as const, value: host },
  );
  return issue(ca, hosts[0] as string, validity, [
    new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth], false),
    new x509.SubjectAlternativeNameExtension(names, false),
  ]);
}

/** A client certificate whose subject is CN=<commonName>: what mutual TLS and a certificate-bound client present. */
export async function makeClientCertificate(
  ca: CertificateAuthority,
  commonName: string,
  validity: Validity = {},
): Promise<IssuedCertificate> {
  return issue(ca, commonName, validity, [
    new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth], false),
  ]);
}

async function issue(
  ca: CertificateAuthority,
  commonName: string,
  validity: Validity,
  extensions: x509.Extension[],
): Promise<IssuedCertificate> {
  const keys = await newKeys();
  const { notBefore, notAfter } = period(validity);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: distinguishedName(commonName),
    issuer: ca.cert.subject,
    notBefore,
    notAfter,
    signingAlgorithm: ALGORITHM,
    publicKey: keys.publicKey,
    signingKey: ca.keys.privateKey,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(ca.keys.publicKey),
      ...extensions,
    ],
  });
  return { certPem: cert.toString("pem"), keyPem: await privateKeyPem(keys.privateKey) };
}

/** Reads back a CA written earlier (its certificate and PKCS#8 key PEMs), to sign more certificates with it. */
export async function loadCertificateAuthority(certPem: string, keyPem: string): Promise<CertificateAuthority> {
  const cert = new x509.X509Certificate(certPem);
  const privateKey = await webcrypto.subtle.importKey("pkcs8", pemBody(keyPem), ALGORITHM, true, ["sign"]);
  const publicKey = await cert.publicKey.export(ALGORITHM, ["verify"], provider);
  return { cert, keys: { privateKey, publicKey }, certPem, keyPem };
}

function newKeys(): Promise<CryptoKeyPair> {
  return webcrypto.subtle.generateKey(ALGORITHM, true, ["sign", "verify"]) as Promise<CryptoKeyPair>;
}

function period(validity: Validity): { notBefore: Date; notAfter: Date } {
  const notBefore = validity.notBefore ?? new Date(Date.now() - 60_000);
  const notAfter = validity.notAfter ?? new Date(notBefore.getTime() + (validity.days ?? DEFAULT_DAYS) * 86_400_000);
  return { notBefore, notAfter };
}

// RFC 5280 4.1.2.2: a positive integer of at most 20 octets, unique per CA: 16 random bytes, top bit cleared.
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] as number) & 0x7f;
  return bytes.toString("hex");
}

// The name is put in as one CN value; escaping keeps a comma or plus in it from starting another attribute.
function distinguishedName(commonName: string): string {
  return `CN=${commonName.replace(/[\\,+"<>;=#]/g, (c) => `\\${c}`)}`;
}

async function privateKeyPem(key: CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey("pkcs8", key));
  const lines = der.toString("base64").match(/.{1,64}/g) ?? [];
  return `-----BEGIN PRIVATE KEY-----\n${lines.join("\n")}\n-----END PRIVATE KEY-----\n`;
}

function pemBody(pem: string): Buffer {
  return Buffer.from(pem.replace(/-----(BEGIN|END) [A-Z ]+-----/g, "").replace(/\s+/g, ""), "base64");
}
