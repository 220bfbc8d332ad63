import {
  decodeJwt,
  decodeProtectedHeader,
  errors,
  type JWTPayload,
  jwtVerify,
  type ProtectedHeaderParameters,
} from "jose";
import type { RegisteredClient } from "./client-registry.js";
import { CLIENT_ASSERTION_ALGS } from "./clients-file.js";

/**
 * private_key_jwt (RFC 7523 §2.2 and §3, as SMART Backend Services profiles
 * it): the client proves itself with a JWT signed by a key of its registered
 * JWK Set — iss = sub = client_id, aud = the token endpoint, a short exp and a
 * jti used once.
 */

export const CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/** SMART Backend Services: an assertion's exp is no more than five minutes in the future. */
const MAX_LIFETIME_SECONDS = 300;

/**
 * Most unexpired assertion ids remembered per client: with assertions of five minutes at most, about three token
 * requests a second, sustained — far beyond what a client needs (a token lives --token-ttl). Per client, so that no
 * client can fill the memory the others need.
 */
export const JTI_PER_CLIENT = 1_000;

/** How often (seconds) the ids of assertions that have expired are dropped, every client's. */
const SWEEP_SECONDS = 30;

export type Remembered = { ok: true } | { ok: false; why: "replayed" } | { ok: false; why: "full"; retryAfter: number };

/**
 * The jti of every accepted assertion until it expires: a replayed assertion
 * is refused. An id is dropped once its assertion's exp has passed (swept
 * every 30 s of the injected clock), and as assertions live five minutes at
 * most, each client holds at most JTI_PER_CLIENT ids: past it its assertions
 * are refused until the earliest expires. Memory: clients × JTI_PER_CLIENT.
 */
export class JtiMemory {
  readonly #byClient = new Map<string, Map<string, number>>();
  #sweptAt = Number.NEGATIVE_INFINITY;

  constructor(readonly perClient = JTI_PER_CLIENT) {}

  /** Records `jti` of `clientId` until `exp` (epoch seconds): refused when already recorded and not expired, or when the client's memory is full. */
  remember(clientId: string, jti: string, exp: number, nowSeconds: number): Remembered {
    if (nowSeconds - this.#sweptAt >= SWEEP_SECONDS) this.#sweep(nowSeconds);
    let ids = this.#byClient.get(clientId);
    const known = ids?.get(jti);
    if (known !== undefined && known > nowSeconds) return { ok: false, why: "replayed" };
    if (ids === undefined) {
      ids = new Map();
      this.#byClient.set(clientId, ids);
    }
    if (ids.size >= this.perClient) {
      dropExpired(ids, nowSeconds);
      if (ids.size >= this.perClient) {
        let earliest = Number.POSITIVE_INFINITY;
        for (const until of ids.values()) earliest = Math.min(earliest, until);
        return { ok: false, why: "full", retryAfter: Math.max(1, earliest - nowSeconds) };
      }
    }
    ids.set(jti, exp);
    return { ok: true };
  }

  /** Ids held, every client's. */
  get size(): number {
    let n = 0;
    for (const ids of this.#byClient.values()) n += ids.size;
    return n;
  }

  #sweep(nowSeconds: number): void {
    this.#sweptAt = nowSeconds;
    for (const [client, ids] of this.#byClient) {
      dropExpired(ids, nowSeconds);
      if (ids.size === 0) this.#byClient.delete(client);
    }
  }
}

function dropExpired(ids: Map<string, number>, nowSeconds: number): void {
  for (const [jti, until] of ids) if (until <= nowSeconds) ids.delete(jti);
}

type Checked<T> = { ok: true; value: T } | { ok: false; description: string; retryAfter?: number };

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
  const remembered = check.jtis.remember(client.id, payload.jti, exp, nowSeconds);
  if (!remembered.ok && remembered.why === "replayed") {
    return fail(
      `client_assertion jti ${payload.jti} was already used in an assertion that has not expired: make a new jti for every token request.`,
    );
  }
  if (!remembered.ok) {
    return {
      ok: false,
      retryAfter: remembered.retryAfter,
      description: `Client ${client.id} has ${check.jtis.perClient} assertions that have not expired yet, the most the sandbox remembers for one client: retry in ${remembered.retryAfter} s (Retry-After), when the earliest expires, and reuse each access token until it expires instead of asking for a new one per message.`,
    };
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
      return `client_assertion aud is ${got}; it must be the token endpoint URL, ${check.audiences[0]} (or the issuer, ${check.audiences[1]}). The sandbox takes these from --public-url, else from the URL it listens on (under localhost, 127.0.0.1 or [::1]), never from the Host header: a sandbox that clients reach under another name (behind a proxy, in a container) needs --public-url set to that URL.`;
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
