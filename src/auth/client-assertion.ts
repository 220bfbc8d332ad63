import {
  decodeJwt,
  decodeProtectedHeader,
  errors,
  type JWTPayload,
  jwtVerify,
  type ProtectedHeaderParameters,
} from "jose";
import type { RegisteredClient } from "./client-registry.js";

/**
 * private_key_jwt (RFC 7523 §2.2 and §3, as SMART Backend Services profiles
 * it): the client proves itself with a JWT signed by a key of its registered
 * JWK Set — iss = sub = client_id, aud = the token endpoint, a short exp and a
 * jti used once.
 */

export const CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/** SMART asks servers for RS384 and ES384; RS256 and ES256 are what most libraries sign with by default. */
export const CLIENT_ASSERTION_ALGS = ["RS384", "ES384", "RS256", "ES256"] as const;

/** SMART Backend Services: an assertion's exp is no more than five minutes in the future. */
const MAX_LIFETIME_SECONDS = 300;

/** Most assertion ids remembered; beyond it the expired ones are dropped first. */
const JTI_LIMIT = 10_000;

/** The jti of every accepted assertion until it expires: a replayed assertion is refused. */
export class JtiMemory {
  readonly #expiry = new Map<string, number>();

  /** Records `jti` of `clientId` until `exp`; false when it is already recorded and not yet expired. */
  remember(clientId: string, jti: string, exp: number, nowSeconds: number): boolean {
    const key = `${clientId}\n${jti}`;
    const known = this.#expiry.get(key);
    if (known !== undefined && known > nowSeconds) return false;
    if (this.#expiry.size >= JTI_LIMIT) {
      for (const [k, until] of this.#expiry) if (until <= nowSeconds) this.#expiry.delete(k);
    }
    this.#expiry.set(key, exp);
    return true;
  }
}

type Checked<T> = { ok: true; value: T } | { ok: false; description: string };

/** The client an assertion claims to come from (its iss), read before any signature check so the client's keys can be found. */
export function assertionIssuer(assertion: string): Checked<string> {
  let header: ProtectedHeaderParameters;
  let claims: JWTPayload;
  try {
    header = decodeProtectedHeader(assertion);
    claims = decodeJwt(assertion);
  } catch {
    return {
      ok: false,
      description:
        "client_assertion is not a signed JWT (three base64url parts: header.payload.signature). Sign one with your private key.",
    };
  }
  if (!CLIENT_ASSERTION_ALGS.includes(header.alg as never)) {
    return {
      ok: false,
      description: `client_assertion is signed with alg ${String(header.alg)}; the sandbox accepts ${CLIENT_ASSERTION_ALGS.join(", ")}.`,
    };
  }
  if (typeof header.kid !== "string" || header.kid === "") {
    return {
      ok: false,
      description: "client_assertion has no kid in its header: name the key of your JWK Set that signed it.",
    };
  }
  if (typeof claims.iss !== "string" || claims.iss === "" || claims.sub !== claims.iss) {
    return {
      ok: false,
      description: `client_assertion needs iss and sub both set to your client_id (got iss ${JSON.stringify(claims.iss)}, sub ${JSON.stringify(claims.sub)}).`,
    };
  }
  return { ok: true, value: claims.iss };
}

export interface AssertionCheck {
  /** The audiences the assertion may name: the token endpoint URL (SMART) and the issuer (RFC 7523). */
  audiences: readonly string[];
  now: Date;
  jtis: JtiMemory;
  jwksTimeoutMs: number;
}

/** Verifies a client's assertion: signature by one of its keys, claims, lifetime, and a jti not seen before. */
export async function verifyClientAssertion(
  assertion: string,
  client: RegisteredClient,
  check: AssertionCheck,
): Promise<Checked<RegisteredClient>> {
  const fail = (description: string): Checked<RegisteredClient> => ({ ok: false, description });
  if (!client.keys) {
    return fail(
      `Client ${client.id} has no public keys (jwks or jwksUrl in the clients file), so it cannot use private_key_jwt: authenticate with its secret, or register its keys.`,
    );
  }
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(assertion, client.keys, {
      algorithms: [...CLIENT_ASSERTION_ALGS],
      issuer: client.id,
      subject: client.id,
      audience: [...check.audiences],
      currentDate: check.now,
      requiredClaims: ["exp", "jti"],
    }));
  } catch (error) {
    return fail(assertionFailure(error, client, check));
  }
  const nowSeconds = Math.floor(check.now.getTime() / 1000);
  const exp = payload.exp as number;
  if (exp - nowSeconds > MAX_LIFETIME_SECONDS) {
    return fail(
      `client_assertion expires ${exp - nowSeconds} s from now; SMART Backend Services allows at most ${MAX_LIFETIME_SECONDS} s: set exp no more than five minutes ahead.`,
    );
  }
  if (typeof payload.jti !== "string" || payload.jti === "")
    return fail("client_assertion needs a jti (a new one per request).");
  if (!check.jtis.remember(client.id, payload.jti, exp, nowSeconds)) {
    return fail(
      `client_assertion jti ${payload.jti} was already used in an assertion that has not expired: make a new jti for every token request.`,
    );
  }
  return { ok: true, value: client };
}

/** What went wrong in jose's terms, said so that the integrator knows what to change. */
function assertionFailure(error: unknown, client: RegisteredClient, check: AssertionCheck): string {
  if (error instanceof errors.JWTExpired) {
    return `client_assertion expired (exp ${String(error.payload.exp)} is not after now, ${Math.floor(check.now.getTime() / 1000)}): sign a fresh one for each request.`;
  }
  if (error instanceof errors.JWTClaimValidationFailed) {
    const got = JSON.stringify(error.payload[error.claim]);
    if (error.claim === "aud") {
      return `client_assertion aud is ${got}; it must be the token endpoint URL, ${check.audiences[0]} (or the issuer, ${check.audiences[1]}).`;
    }
    if (error.reason === "missing")
      return `client_assertion has no ${error.claim} claim; it needs iss, sub, aud, exp and jti.`;
    return `client_assertion claim ${error.claim} is not accepted (${error.message}; got ${got}).`;
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return `client_assertion signature does not verify with the key it names in ${client.keySource}: sign with the private key of that public key.`;
  }
  if (error instanceof errors.JWKSNoMatchingKey) {
    return `No key in ${client.keySource} matches the client_assertion header (kid and alg): register the public key it was signed with, or name its kid.`;
  }
  if (error instanceof errors.JWKSMultipleMatchingKeys) {
    return `More than one key in ${client.keySource} matches the client_assertion header: give each key its own kid.`;
  }
  if (error instanceof errors.JWKSTimeout) {
    return `The sandbox could not read the client's keys: ${client.keySource} did not answer within ${check.jwksTimeoutMs} ms.`;
  }
  // fetch says only "fetch failed"; the cause says why (ECONNREFUSED, …).
  const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : "";
  const reason = error instanceof Error ? `${error.message}${cause}` : String(error);
  return `The sandbox could not check client_assertion with ${client.keySource}: ${reason}.`;
}
