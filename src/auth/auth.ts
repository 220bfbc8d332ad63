import type { Context, Hono } from "hono";
import { type EdgeEnv, jsonResponse } from "../http/fhir-response.js";
import { FHIR_BASES } from "../routing/default-operations.js";
import { rememberingVerifier } from "./access-token.js";
import { type Access, authenticate } from "./bearer.js";
import { JtiMemory } from "./client-assertion.js";
import { clientRegistry } from "./client-registry.js";
import { loadClientsFile } from "./clients-file.js";
import {
  AUTHORIZE_PATH,
  authorizationServerMetadata,
  type Endpoints,
  endpointsAt,
  JWKS_PATH,
  openIdConfiguration,
  smartConfiguration,
  TOKEN_PATH,
} from "./discovery.js";
import { oauthError } from "./oauth-error.js";
import { generateSigningKey, loadSigningKey } from "./signing-key.js";
import { errorAnswer, tokenEndpoint } from "./token-endpoint.js";

export interface AuthConfig {
  /** The clients file (--clients). */
  clientsFile: string;
  /** Access token lifetime (--token-ttl). */
  tokenTtlMs: number;
  /** PEM private key that signs access tokens (--token-key); undefined: a fresh ES256 key per start. */
  tokenKeyFile: string | undefined;
  /** The sandbox's URL as clients see it (--public-url): the issuer; undefined: the URL each request came to. */
  publicUrl: string | undefined;
  /** Prefix of the FHIR paths, under which SMART's own discovery path is served too. */
  basePath: string;
  maxBody: number;
  /** The scopes the operations catalogue uses, in order. */
  scopes: readonly string[];
  /** How long a client's jwksUrl may take to answer. */
  jwksTimeoutMs?: number;
}

export interface AuthDeps {
  now(): Date;
  newId(): string;
  /** Outbound HTTP: a client's jwksUrl. */
  fetch: typeof fetch;
  /** A token request's client authenticated: the request belongs to the client's workspace. */
  clientIn?(c: Context<EdgeEnv>, workspace: string): void;
}

/**
 * Simulated OAuth2 (CONTRACT §13), in one unit: the clients, the signing
 * key, the token endpoint and discovery, and the bearer check of the message
 * paths. A verified token yields a Principal: `{ clientId, workspace, scopes }`.
 */
export interface Auth {
  /** Reads `Authorization: Bearer …` of a message-path request: a principal, or a 401 refusal. */
  authenticate(authorization: string | undefined): Promise<Access>;
  /** The admin token the clients file gives a workspace (accepted on its admin API), if any. */
  workspaceAdminToken(workspace: string): string | undefined;
  /** The seed the clients file gives a workspace, if any. */
  workspaceSeed(workspace: string): string | undefined;
  /** The workspaces the clients file names (its clients' and its `workspaces` section's). */
  namedWorkspaces: readonly string[];
  /** Whether a workspace has an admin token of its own. */
  anyWorkspaceAdminToken: boolean;
  /** Issuer and endpoint URLs as a request to `requestUrl` should be told them. */
  endpoints(requestUrl: string): Endpoints;
  /** Serves POST /oauth2/token, GET /oauth2/jwks and the discovery documents. */
  mount(app: Hono<EdgeEnv>): void;
}

const JWKS_TIMEOUT_MS = 5_000;

/**
 * Loads the clients file and the signing key; throws with every problem of
 * the file as file:line:column: message.
 *
 * @example
 *   const auth = createAuth({ clientsFile: "clients.yaml", tokenTtlMs: 300_000, ... }, deps);
 *   auth.mount(app);
 *   const access = await auth.authenticate(request.headers.get("authorization") ?? undefined);
 */
export function createAuth(config: AuthConfig, deps: AuthDeps): Auth {
  const jwksTimeoutMs = config.jwksTimeoutMs ?? JWKS_TIMEOUT_MS;
  const file = loadClientsFile(config.clientsFile, config.scopes);
  const registry = clientRegistry(file, config.scopes, { fetch: deps.fetch, jwksTimeoutMs });
  const key = config.tokenKeyFile ? loadSigningKey(config.tokenKeyFile) : generateSigningKey();
  const fixedIssuer = config.publicUrl?.replace(/\/+$/, "");
  const endpoints = (requestUrl: string) => endpointsAt(fixedIssuer ?? new URL(requestUrl).origin);
  const verify = rememberingVerifier(key);

  return {
    authenticate: (authorization) => authenticate(authorization, (token) => verify(token, deps.now())),
    workspaceAdminToken: (workspace) => registry.adminToken(workspace),
    workspaceSeed: (workspace) => registry.seed(workspace),
    namedWorkspaces: registry.workspaces,
    anyWorkspaceAdminToken: registry.anyAdminToken,
    endpoints,
    mount(app) {
      app.all(
        TOKEN_PATH,
        tokenEndpoint({
          registry,
          key,
          scopes: config.scopes,
          tokenTtlMs: config.tokenTtlMs,
          maxBody: config.maxBody,
          jwksTimeoutMs,
          jtis: new JtiMemory(),
          endpoints: (c) => endpoints(c.req.url),
          now: deps.now,
          newId: deps.newId,
          ...(deps.clientIn ? { clientIn: deps.clientIn } : {}),
        }),
      );
      app.get(JWKS_PATH, () => jsonResponse({ keys: [key.jwk] }));
      // No client has a redirect URI to send an error to: say it here, never redirect (RFC 6749 §4.1.2.1).
      app.all(AUTHORIZE_PATH, (c) =>
        errorAnswer(
          c,
          oauthError(
            "unsupported_response_type",
            `This sandbox signs in no user: it grants access tokens by the client-credentials grant only, at POST ${endpoints(c.req.url).tokenEndpoint}.`,
          ),
        ),
      );
      app.get("/.well-known/openid-configuration", (c) =>
        jsonResponse(openIdConfiguration(endpoints(c.req.url), config.scopes)),
      );
      app.get("/.well-known/oauth-authorization-server", (c) =>
        jsonResponse(authorizationServerMetadata(endpoints(c.req.url), config.scopes)),
      );
      // SMART puts its document under the FHIR base; the contract also names the root.
      const smartPaths = ["", ...FHIR_BASES.map((base) => `${config.basePath}${base}`)];
      for (const prefix of smartPaths) {
        app.get(`${prefix}/.well-known/smart-configuration`, (c) =>
          jsonResponse(smartConfiguration(endpoints(c.req.url), config.scopes)),
        );
      }
    },
  };
}
