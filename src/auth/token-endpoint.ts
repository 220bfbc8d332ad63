import type { Context } from "hono";
import { callState } from "../http/call-context.js";
import type { EdgeEnv } from "../http/edge-env.js";
import { incompleteBody, readBody } from "../http/read-body.js";
import { REDACTED, secretParam } from "../journal/redact.js";
import { jsonText } from "../text/json-text.js";
import { peerCertificate } from "../tls/peer-certificate.js";
import { issueAccessToken } from "./access-token.js";
import type { AssertionCheck } from "./client-assertion.js";
import { authenticatePresented, presented } from "./client-authentication.js";
import type { ClientRegistry, RegisteredClient } from "./client-registry.js";
import type { Endpoints } from "./discovery.js";
import { type FailureLimit, retryAfterSeconds } from "./failure-limit.js";
import { NO_STORE, type OAuthError, oauthError } from "./oauth-error.js";
import type { SigningKey } from "./signing-key.js";
import { readTokenForm } from "./token-form.js";

export interface TokenEndpointDeps {
  /** The clients as the clients file says now (it may be reloaded). */
  registry(): ClientRegistry;
  key: SigningKey;
  /** The scopes of the operations catalogue. */
  scopes: readonly string[];
  tokenTtlMs: number;
  maxBody: number;
  jwksTimeoutMs: number;
  /** Assertion ids already used. */
  jtis: AssertionCheck["jtis"];
  endpoints(c: Context): Endpoints;
  /** The audiences a client assertion may name (never from the Host header). */
  audiences(): readonly string[];
  /** Failed client authentications, per client and address, and per address. */
  failures: { client: FailureLimit; address: FailureLimit };
  /** Where a request came from (the socket's peer). */
  address(c: Context): string;
  now(): Date;
  newId(): string;
  /** A client authenticated: its token request belongs to its workspace (and is journaled there). */
  clientIn?(c: Context<EdgeEnv>, workspace: string): void;
}

const FORM = "application/x-www-form-urlencoded";

/** A JSON answer of the token endpoint, never cached, its text kept for the journal (an access token redacted). */
function tokenJson(
  c: Context<EdgeEnv>,
  status: number,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
) {
  const text = jsonText(body);
  callState(c).responseText = "access_token" in body ? jsonText({ ...body, access_token: REDACTED }) : text;
  return new Response(text, {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...NO_STORE, ...headers },
  });
}

/** An RFC 6749 error as JSON, never cached; journaled as sent. */
export const errorAnswer = (c: Context<EdgeEnv>, e: OAuthError): Response =>
  tokenJson(c, e.status, { error: e.error, error_description: e.description }, e.headers);

/**
 * 429 with Retry-After (RFC 6585 §4) once a client, or an address, has failed to authenticate too often: the
 * credentials are not even checked. temporarily_unavailable, as the rate-limited magic client says it: RFC 6749
 * has no rate-limit code, and RFC 8628's slow_down is for polling a device code.
 */
function tooManyFailures(waitMs: number, limits: TokenEndpointDeps["failures"]): OAuthError {
  const seconds = retryAfterSeconds(waitMs);
  const { client, address } = limits;
  return oauthError(
    "temporarily_unavailable",
    `Too many failed client authentications from this address (it may fail ${client.settings.max} times per client and ${address.settings.max} in all in ${client.settings.windowMs / 1000} s): retry after ${seconds} s (Retry-After), with the client's right credentials.`,
    429,
    { "retry-after": seconds },
  );
}

/** The query's parameters (none when the URL has no query). */
function queryParams(url: string): Array<[string, string]> {
  const q = url.indexOf("?");
  return q < 0 ? [] : [...new URLSearchParams(url.slice(q + 1))];
}

/** The scopes a token gets: those asked for (all of them, or an invalid_scope error), else all the client's. */
function grantedScopes(
  asked: string | null,
  client: RegisteredClient,
  scopes: readonly string[],
): string[] | OAuthError {
  if (asked === null) return [...client.scopes];
  const wanted = [...new Set(asked.split(" ").filter(Boolean))];
  if (wanted.length === 0) {
    return oauthError(
      "invalid_scope",
      `scope is empty: leave it out for all of ${client.id}'s scopes, or name some of: ${client.scopes.join(" ")}.`,
    );
  }
  const unknown = wanted.filter((s) => !scopes.includes(s));
  if (unknown.length > 0) {
    return oauthError(
      "invalid_scope",
      `Unknown scope ${unknown.join(" ")}; the sandbox's scopes are: ${scopes.join(" ")}.`,
    );
  }
  const refused = wanted.filter((s) => !client.scopes.includes(s));
  if (refused.length > 0) {
    return oauthError(
      "invalid_scope",
      `Client ${client.id} may not have ${refused.join(" ")}; it may have: ${client.scopes.join(" ")} (scopes in the clients file).`,
    );
  }
  return wanted;
}

/**
 * POST /oauth2/token: the client-credentials grant (RFC 6749 §4.4) with
 * client_secret_basic, client_secret_post, private_key_jwt or tls_client_auth
 * (RFC 8705); a certificate-bound client's token carries its certificate's
 * thumbprint (cnf x5t#S256); errors as RFC 6749 §5.2.
 */
export function tokenEndpoint(deps: TokenEndpointDeps) {
  return async (c: Context<EdgeEnv>): Promise<Response> => {
    // First: whatever else is wrong, the fix starts with taking the credential out of the URL.
    const inQuery = [...new Set(queryParams(c.req.url).flatMap(([k, v]) => (secretParam(k, v) ? [k] : [])))];
    if (inQuery.length > 0) {
      return errorAnswer(
        c,
        oauthError(
          "invalid_request",
          `${inQuery.join(", ")} came in the URL's query; credentials must not be in the request URI (RFC 6749 §2.3.1), where logs and histories keep them. Send ${inQuery.length > 1 ? "them" : "it"} in the form body (or the client secret as Authorization: Basic). The sandbox refused the request and journaled the URL with the value redacted.`,
        ),
      );
    }
    if (c.req.method !== "POST") {
      return errorAnswer(
        c,
        oauthError("invalid_request", `The token endpoint takes POST, not ${c.req.method}.`, 405, { allow: "POST" }),
      );
    }
    const mediaType = c.req.header("content-type")?.split(";")[0]?.trim().toLowerCase();
    if (mediaType !== FORM) {
      return errorAnswer(
        c,
        oauthError(
          "invalid_request",
          `Send the token request as ${FORM} (RFC 6749 §4.4.2), not ${mediaType ?? "without a Content-Type"}.`,
        ),
      );
    }
    const read = await readBody(c.req.raw, deps.maxBody);
    if (!read.ok && !read.tooLarge)
      return errorAnswer(c, oauthError("invalid_request", incompleteBody(read.error), 408));
    if (!read.ok)
      return errorAnswer(c, oauthError("invalid_request", `The body is larger than ${read.limit} bytes.`, 413));
    const form = readTokenForm(read.text);
    callState(c).bodyText = form.journalText;
    if (!form.ok) return errorAnswer(c, form.error);
    const params = form.params;
    const grantType = params.get("grant_type");
    if (!grantType)
      return errorAnswer(
        c,
        oauthError("invalid_request", "grant_type is missing: send grant_type=client_credentials."),
      );
    if (grantType !== "client_credentials") {
      return errorAnswer(
        c,
        oauthError(
          "unsupported_grant_type",
          `grant_type ${grantType} is not supported: the sandbox issues tokens by client_credentials only.`,
        ),
      );
    }

    const at = deps.endpoints(c);
    const now = deps.now();
    // The connection's verified client certificate (mutual TLS), if any: tls_client_auth and certificate binding.
    const certificate = peerCertificate(c);
    const given = presented(params, c.req.header("authorization"), certificate);
    // Keyed by client and address together: nobody elsewhere can lock a team's client out by failing with its id.
    const address = deps.address(c);
    const clientKey = given.ok ? `${given.value.clientId}\n${address}` : undefined;
    const wait = Math.max(
      deps.failures.address.retryAfterMs(address),
      clientKey === undefined ? 0 : deps.failures.client.retryAfterMs(clientKey),
    );
    if (wait > 0) return errorAnswer(c, tooManyFailures(wait, deps.failures));
    const authenticated = given.ok
      ? await authenticatePresented(given.value, deps.registry(), {
          audiences: deps.audiences(),
          now,
          jtis: deps.jtis,
          jwksTimeoutMs: deps.jwksTimeoutMs,
        })
      : given;
    if (!authenticated.ok) {
      // Only failed authentication counts: that is what guessing a secret is. A malformed request guesses nothing.
      if (authenticated.error.error === "invalid_client") {
        deps.failures.address.fail(address);
        if (clientKey !== undefined) deps.failures.client.fail(clientKey);
      }
      return errorAnswer(c, authenticated.error);
    }
    const client = authenticated.value;
    deps.clientIn?.(c, client.workspace);
    if (client.scopes.length === 0) {
      return errorAnswer(
        c,
        oauthError(
          "unauthorized_client",
          `Client ${client.id} is allowed no scope (scopes: [] in the clients file), so no token would let it do anything.`,
        ),
      );
    }
    const scopes = grantedScopes(params.get("scope"), client, deps.scopes);
    if (!Array.isArray(scopes)) return errorAnswer(c, scopes);
    // RFC 8705 §3.4 leaves a bound client's request without a certificate to the server: refused, so that a client
    // never holds an unbound token it did not mean to have.
    if (client.certificateBound && certificate === undefined) {
      return errorAnswer(
        c,
        oauthError(
          "invalid_request",
          `Client ${client.id}'s access tokens are bound to its client certificate (tls_client_certificate_bound_access_tokens): ask for a token over HTTPS presenting the certificate (mutual TLS).`,
        ),
      );
    }

    // The magic expired-token client gets a token whose exp is its iat: expired at once.
    const lifetimeSeconds = client.magic === "expired-token" ? 0 : Math.max(1, Math.ceil(deps.tokenTtlMs / 1000));
    const token = await issueAccessToken(deps.key, {
      principal: { clientId: client.id, workspace: client.workspace, scopes },
      issuer: at.issuer,
      now,
      lifetimeSeconds,
      jti: deps.newId(),
      ...(client.certificateBound && certificate ? { certificateThumbprint: certificate.thumbprintS256 } : {}),
    });
    return tokenJson(c, 200, {
      access_token: token,
      token_type: "Bearer",
      expires_in: lifetimeSeconds,
      scope: scopes.join(" "),
    });
  };
}
