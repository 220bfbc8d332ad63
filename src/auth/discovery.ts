import { CLIENT_AUTH_METHODS } from "./client-authentication.js";
import { CLIENT_ASSERTION_ALGS } from "./clients-file.js";

/** Where the sandbox's OAuth2 endpoints are, as a client should call them. */
export interface Endpoints {
  /** The issuer: --public-url, else the origin the request came to (no trailing slash). */
  issuer: string;
  tokenEndpoint: string;
  jwksUri: string;
  /** Named by the OpenID configuration only, which must name one; it refuses every request. */
  authorizationEndpoint: string;
}

export const TOKEN_PATH = "/oauth2/token";
export const JWKS_PATH = "/oauth2/jwks";
export const AUTHORIZE_PATH = "/oauth2/authorize";

/** Whether a routed path is one of the OAuth2 endpoints or discovery documents, which callers reach without a token. */
export function isAuthPath(path: string): boolean {
  return path === TOKEN_PATH || path === JWKS_PATH || path === AUTHORIZE_PATH || path.includes("/.well-known/");
}

export function endpointsAt(issuer: string): Endpoints {
  return {
    issuer,
    tokenEndpoint: `${issuer}${TOKEN_PATH}`,
    jwksUri: `${issuer}${JWKS_PATH}`,
    authorizationEndpoint: `${issuer}${AUTHORIZE_PATH}`,
  };
}

/** Where mutual TLS works: the token endpoint a client presenting its certificate calls (an https: URL). */
export interface MutualTlsAt {
  tokenEndpoint: string;
}

/**
 * What both discovery documents say: where the endpoints are, and how clients authenticate and for what; with
 * mutual TLS, RFC 8705's tls_client_auth (§2.3) and certificate-bound tokens (§3.3) too, and, when the document's
 * own token endpoint cannot take a certificate (the plain-HTTP port of --tls-port), the HTTPS one as an
 * mtls_endpoint_aliases entry (§5), which a client doing mutual TLS uses instead.
 */
const clientCredentials = (at: Endpoints, scopes: readonly string[], mutualTls: MutualTlsAt | undefined) => ({
  issuer: at.issuer,
  token_endpoint: at.tokenEndpoint,
  jwks_uri: at.jwksUri,
  scopes_supported: [...scopes],
  grant_types_supported: ["client_credentials"],
  token_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS, ...(mutualTls ? ["tls_client_auth"] : [])],
  token_endpoint_auth_signing_alg_values_supported: [...CLIENT_ASSERTION_ALGS],
  ...(mutualTls ? { tls_client_certificate_bound_access_tokens: true } : {}),
  ...(mutualTls && mutualTls.tokenEndpoint !== at.tokenEndpoint
    ? { mtls_endpoint_aliases: { token_endpoint: mutualTls.tokenEndpoint } }
    : {}),
});

/**
 * Authorization server metadata (RFC 8414), served at
 * /.well-known/oauth-authorization-server and, for clients that discover the
 * OpenID Connect way, /.well-known/openid-configuration. The sandbox is an
 * OAuth2 server for the client-credentials grant only: no authorization
 * endpoint, no ID tokens.
 */
export function authorizationServerMetadata(at: Endpoints, scopes: readonly string[], mutualTls?: MutualTlsAt) {
  // response_types_supported is required by RFC 8414; with no authorization endpoint there is none.
  return { ...clientCredentials(at, scopes, mutualTls), response_types_supported: [] };
}

/**
 * OpenID Connect Discovery 1.0 §3 metadata, at /.well-known/openid-configuration:
 * the RFC 8414 metadata plus the members that specification makes REQUIRED.
 * The sandbox signs in nobody and issues no ID token, so these promise nothing:
 * the authorization endpoint refuses every request, and RS256 is listed because
 * §3 says the list MUST hold it.
 */
export function openIdConfiguration(at: Endpoints, scopes: readonly string[], mutualTls?: MutualTlsAt) {
  return {
    ...authorizationServerMetadata(at, scopes, mutualTls),
    authorization_endpoint: at.authorizationEndpoint,
    subject_types_supported: ["public"],
    id_token_signing_alg_values_supported: ["RS256"],
  };
}

/**
 * SMART configuration (SMART App Launch 2, "Conformance"), as SMART Backend
 * Services clients read it: token endpoint, client authentication (symmetric
 * and asymmetric), the client-credentials grant and the scopes.
 */
export function smartConfiguration(at: Endpoints, scopes: readonly string[], mutualTls?: MutualTlsAt) {
  // SMART wants no issuer unless the capabilities include sso-openid-connect, which they do not.
  const { issuer: _omitted, ...metadata } = clientCredentials(at, scopes, mutualTls);
  return {
    ...metadata,
    capabilities: ["client-confidential-asymmetric", "client-confidential-symmetric"],
    // REQUIRED by SMART 2 whatever the grants (S256, never plain); with no authorization endpoint nothing uses it.
    code_challenge_methods_supported: ["S256"],
  };
}
