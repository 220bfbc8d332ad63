import { errors, jwtVerify, SignJWT } from "jose";
import type { SigningKey } from "./signing-key.js";

/** Who a verified access token speaks for: the client, the workspace it acts in, and what it may do. */
export interface Principal {
  clientId: string;
  workspace: string;
  scopes: readonly string[];
  /** RFC 8705 §3.1: the token is bound to the client certificate of this `x5t#S256` thumbprint (its `cnf`). */
  certificateThumbprint?: string;
}

/** RFC 9068's media type of JWT access tokens: a client assertion or another JWT is not taken for one. */
const ACCESS_TOKEN_TYPE = "at+jwt";

export interface TokenRequest {
  principal: Principal;
  /** The sandbox as the client found it (iss) — and as the resource server the token is for (aud). */
  issuer: string;
  now: Date;
  /** Lifetime in seconds (JWT times are whole seconds); 0 or less gives a token already expired. */
  lifetimeSeconds: number;
  jti: string;
  /** Binds the token to a client certificate: `cnf: {"x5t#S256": …}` (RFC 8705 §3.1). */
  certificateThumbprint?: string;
}

/**
 * Signs an access token in the shape of RFC 9068: iss, sub = client_id, aud,
 * exp, iat, jti, client_id, scope (space-separated), and the workspace.
 */
export function issueAccessToken(key: SigningKey, request: TokenRequest): Promise<string> {
  const { principal } = request;
  const iat = Math.floor(request.now.getTime() / 1000);
  return new SignJWT({
    client_id: principal.clientId,
    scope: principal.scopes.join(" "),
    workspace: principal.workspace,
    ...(request.certificateThumbprint ? { cnf: { "x5t#S256": request.certificateThumbprint } } : {}),
  })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: ACCESS_TOKEN_TYPE })
    .setIssuer(request.issuer)
    .setSubject(principal.clientId)
    .setAudience(request.issuer)
    .setIssuedAt(iat)
    .setExpirationTime(iat + request.lifetimeSeconds)
    .setJti(request.jti)
    .sign(key.privateKey);
}

export type TokenCheck =
  | { ok: true; principal: Principal /** exp, in epoch milliseconds */; expiresAt: number }
  | { ok: false; description: string };

/**
 * Verifies an access token the sandbox issued: its signature by the
 * sandbox's key, its type and its expiry. The issuer and audience are not
 * compared, since they follow the URL the token was asked at (localhost or
 * 127.0.0.1 are the same sandbox).
 */
export async function verifyAccessToken(key: SigningKey, token: string, now: Date): Promise<TokenCheck> {
  try {
    const { payload } = await jwtVerify(token, key.publicKey, {
      algorithms: [key.alg],
      typ: ACCESS_TOKEN_TYPE,
      currentDate: now,
      requiredClaims: ["exp", "client_id", "scope", "workspace"],
    });
    const { client_id: clientId, scope, workspace, cnf } = payload;
    if (typeof clientId !== "string" || typeof scope !== "string" || typeof workspace !== "string") {
      return { ok: false, description: "The access token's client_id, scope or workspace is not a string." };
    }
    const thumbprint = (cnf as { "x5t#S256"?: unknown } | undefined)?.["x5t#S256"];
    if (cnf !== undefined && typeof thumbprint !== "string") {
      return { ok: false, description: 'The access token\'s cnf is not {"x5t#S256": "<thumbprint>"}.' };
    }
    return {
      ok: true,
      principal: {
        clientId,
        workspace,
        scopes: scope.split(" ").filter(Boolean),
        ...(typeof thumbprint === "string" ? { certificateThumbprint: thumbprint } : {}),
      },
      expiresAt: (payload.exp as number) * 1000,
    };
  } catch (error) {
    return { ok: false, description: tokenFailure(error) };
  }
}

function tokenFailure(error: unknown): string {
  const renew = "get a new one from POST /oauth2/token";
  if (error instanceof errors.JWTExpired) {
    const exp = Number(error.payload.exp);
    const when = Number.isFinite(exp) ? ` at ${new Date(exp * 1000).toISOString()}` : "";
    return `The access token expired${when}: ${renew} (tokens live --token-ttl, 5 minutes by default).`;
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return `The access token's signature does not verify with the sandbox's key (published at /oauth2/jwks); it was altered, or issued by another sandbox run: ${renew}.`;
  }
  if (error instanceof errors.JOSEAlgNotAllowed || error instanceof errors.JOSENotSupported) {
    return `The access token is not signed with the sandbox's algorithm: ${renew}.`;
  }
  if (error instanceof errors.JWTClaimValidationFailed) {
    return `The access token is not one the sandbox issued (${error.message}): ${renew}.`;
  }
  return `The bearer token is not a JWT access token of this sandbox (header.payload.signature, base64url): ${renew}.`;
}

/** Most verified tokens remembered: a client sends the same token with every message until it expires. */
const VERIFIED_LIMIT = 1_000;

/**
 * verifyAccessToken with a memory of the tokens that verified: a signature
 * check costs about 0.1 ms (ES256), a lookup nothing. A remembered token is
 * still refused from its exp on (the full check then says when it expired).
 */
export function rememberingVerifier(key: SigningKey): (token: string, now: Date) => Promise<TokenCheck> {
  const verified = new Map<string, TokenCheck & { ok: true }>();
  return async (token, now) => {
    const known = verified.get(token);
    if (known && now.getTime() < known.expiresAt) return known;
    const checked = await verifyAccessToken(key, token, now);
    verified.delete(token);
    if (checked.ok) {
      // Oldest first out: a Map iterates in insertion order.
      if (verified.size >= VERIFIED_LIMIT) verified.delete(verified.keys().next().value as string);
      verified.set(token, checked);
    }
    return checked;
  };
}
