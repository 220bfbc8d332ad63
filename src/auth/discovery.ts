import { CLIENT_ASSERTION_ALGS } from "./client-assertion.js";
import { CLIENT_AUTH_METHODS } from "./client-authentication.js";

/** Where the sandbox's OAuth2 endpoints are, as a client should call them. */
export interface Endpoints {
  /** The issuer: --public-url, else the origin the request came to (no trailing slash). */
  issuer: string;
  tokenEndpoint: string;
  jwksUri: string;
}

export const TOKEN_PATH = "/oauth2/token";
export const JWKS_PATH = "/oauth2/jwks";

export function endpointsAt(issuer: string): Endpoints {
  return { issuer, tokenEndpoint: `${issuer}${TOKEN_PATH}`, jwksUri: `${issuer}${JWKS_PATH}` };
}

/**
 * Authorization server metadata (RFC 8414), served at
 * /.well-known/oauth-authorization-server and, for clients that discover the
 * OpenID Connect way, /.well-known/openid-configuration. The sandbox is an
 * OAuth2 server for the client-credentials grant only: no authorization
 * endpoint, no ID tokens.
 */
export function authorizationServerMetadata(at: Endpoints, scopes: readonly string[]) {
  return {
    issuer: at.issuer,
    token_endpoint: at.tokenEndpoint,
    jwks_uri: at.jwksUri,
    scopes_supported: [...scopes],
    // Required by RFC 8414; the sandbox has no authorization endpoint, so no response type.
    response_types_supported: [],
    grant_types_supported: ["client_credentials"],
    token_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS],
    token_endpoint_auth_signing_alg_values_supported: [...CLIENT_ASSERTION_ALGS],
  };
}

/**
 * SMART configuration (SMART App Launch 2, "Conformance"), as SMART Backend
 * Services clients read it: token endpoint, client authentication (symmetric
 * and asymmetric), the client-credentials grant and the scopes.
 */
export function smartConfiguration(at: Endpoints, scopes: readonly string[]) {
  return {
    issuer: at.issuer,
    jwks_uri: at.jwksUri,
    token_endpoint: at.tokenEndpoint,
    token_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS],
    token_endpoint_auth_signing_alg_values_supported: [...CLIENT_ASSERTION_ALGS],
    grant_types_supported: ["client_credentials"],
    scopes_supported: [...scopes],
    capabilities: ["client-confidential-asymmetric", "client-confidential-symmetric"],
  };
}
