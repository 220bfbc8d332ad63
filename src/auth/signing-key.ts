import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import type { JWK } from "jose";

/** The algorithms access tokens are signed with (CONTRACT §13). */
export type TokenAlg = "RS256" | "ES256";

/** The sandbox's key for signing access tokens, with its public half as published at /oauth2/jwks. */
export interface SigningKey {
  alg: TokenAlg;
  /** RFC 7638 thumbprint of the public key: the `kid` of every token it signs. */
  kid: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
  /** The public JWK, with kid, alg and use. */
  jwk: JWK;
}

/** RFC 7638: SHA-256 over the required members of the public JWK, in lexicographic order, base64url. */
function thumbprint(jwk: JWK): string {
  const required =
    jwk.kty === "EC" ? { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y } : { e: jwk.e, kty: jwk.kty, n: jwk.n };
  return createHash("sha256").update(JSON.stringify(required)).digest("base64url");
}

function signingKey(privateKey: KeyObject, alg: TokenAlg): SigningKey {
  const publicKey = createPublicKey(privateKey);
  const exported = publicKey.export({ format: "jwk" }) as JWK;
  const kid = thumbprint(exported);
  return { alg, kid, privateKey, publicKey, jwk: { ...exported, kid, alg, use: "sig" } };
}

/**
 * A fresh key pair, made at start (synchronously: createApp is). ES256 by
 * default: a P-256 key takes well under a millisecond, an RSA key hundreds.
 * Tokens signed with it are valid until the sandbox stops; give --token-key
 * to keep them valid across restarts (or to sign RS256).
 */
export function generateSigningKey(alg: TokenAlg = "ES256"): SigningKey {
  const { privateKey } =
    alg === "RS256"
      ? generateKeyPairSync("rsa", { modulusLength: 2048 })
      : generateKeyPairSync("ec", { namedCurve: "P-256" });
  return signingKey(privateKey, alg);
}

/**
 * The key of a PEM file (--token-key): an RSA key (2048 bits or more) signs
 * RS256, a P-256 EC key ES256.
 *
 * @example
 *   openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out token-key.pem
 */
export function loadSigningKey(file: string): SigningKey {
  let key: KeyObject;
  try {
    key = createPrivateKey(readFileSync(file));
  } catch (error) {
    throw new Error(`--token-key ${file}: not a PEM private key (${(error as Error).message})`);
  }
  const details = key.asymmetricKeyDetails;
  if (key.asymmetricKeyType === "rsa" && (details?.modulusLength ?? 0) >= 2048) return signingKey(key, "RS256");
  if (key.asymmetricKeyType === "ec" && details?.namedCurve === "prime256v1") return signingKey(key, "ES256");
  throw new Error(
    `--token-key ${file}: a ${key.asymmetricKeyType} key${details?.namedCurve ? ` on ${details.namedCurve}` : ""}${details?.modulusLength ? ` of ${details.modulusLength} bits` : ""}; give an RSA key of 2048 bits or more (RS256) or a P-256 EC key (ES256)`,
  );
}
