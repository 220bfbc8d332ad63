import { createHmac, generateKeyPairSync, type KeyObject, sign } from "node:crypto";

// JWTs made by hand with node:crypto, not with jose (the product's library) nor oauth4webapi: base64url of the
// header and the payload, then the signature over "header.payload" (RFC 7515 §5.1). A refusal that these tests see
// is then not a library agreeing with itself.

const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

/** A compact JWS: `sign` gets the signing input and gives the signature's bytes (empty for alg none). */
export function handJwt(
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  signature: (input: string) => Buffer,
): string {
  const input = `${part(header)}.${part(payload)}`;
  return `${input}.${signature(input).toString("base64url")}`;
}

/** alg none: no signature at all (RFC 7519 §6.1). */
export const unsigned = (): Buffer => Buffer.alloc(0);

/** ES256: ECDSA P-256 with SHA-256, the signature as r‖s (RFC 7518 §3.4), not DER. */
export const es256 =
  (key: KeyObject) =>
  (input: string): Buffer =>
    sign("sha256", Buffer.from(input), { key, dsaEncoding: "ieee-p1363" });

/** HS256: HMAC SHA-256 with `secret` as the key, whatever it is (the algorithm-confusion attack uses a public key). */
export const hs256 =
  (secret: string | Buffer) =>
  (input: string): Buffer =>
    createHmac("sha256", secret).update(input).digest();

/** A P-256 key pair, and its public JWK with a kid (for a clients file's `jwks`). */
export function ecKeyPair(kid: string): { privateKey: KeyObject; publicJwk: Record<string, unknown> } {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  return { privateKey, publicJwk: { ...publicKey.export({ format: "jwk" }), kid, alg: "ES256" } };
}

/** A PEM of a P-256 private key (--token-key), with the key itself, so that a test can sign as the sandbox does. */
export function ecSigningKey(): { privateKey: KeyObject; pem: string } {
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  return { privateKey, pem: privateKey.export({ format: "pem", type: "pkcs8" }) as string };
}

/** The claims of a JWT (the middle part), read without checking anything. */
export const claimsOf = (jwt: string): Record<string, unknown> =>
  JSON.parse(Buffer.from(jwt.split(".")[1] ?? "", "base64url").toString("utf8")) as Record<string, unknown>;

/** A client assertion (private_key_jwt, RFC 7523) of `clientId` for `aud`, signed ES256 by hand. */
export function handAssertion(
  clientId: string,
  kid: string,
  key: KeyObject,
  aud: string,
  claims: Record<string, unknown> = {},
  nowSeconds = Math.floor(Date.now() / 1000),
): string {
  return handJwt(
    { alg: "ES256", kid, typ: "JWT" },
    { iss: clientId, sub: clientId, aud, exp: nowSeconds + 60, jti: crypto.randomUUID(), ...claims },
    es256(key),
  );
}
