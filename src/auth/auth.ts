import type { watch } from "node:fs";
import type { Context, Hono } from "hono";
import type { EdgeEnv } from "../http/edge-env.js";
import { jsonResponse } from "../http/fhir-response.js";
import { remoteAddress } from "../http/remote-address.js";
import { FHIR_BASES } from "../routing/default-operations.js";
import { watchPath } from "../scenarios/watch-path.js";
import type { PeerCertificate } from "../tls/peer-certificate.js";
import { DEFAULT_WORKSPACE } from "../workspace/workspace-name.js";
import { rememberingVerifier, type TokenCheck } from "./access-token.js";
import { assertionAudiences } from "./assertion-audience.js";
import { type Access, authenticate } from "./bearer.js";
import { JtiMemory } from "./client-assertion.js";
import { type ClientRegistry, clientRegistry } from "./client-registry.js";
import { type ClientsFile, loadClientsFile } from "./clients-file.js";
import {
  AUTHORIZE_PATH,
  authorizationServerMetadata,
  type Endpoints,
  endpointsAt,
  JWKS_PATH,
  type MutualTlsAt,
  openIdConfiguration,
  smartConfiguration,
  TOKEN_PATH,
} from "./discovery.js";
import { DEFAULT_FAILURE_LIMIT, FailureLimit } from "./failure-limit.js";
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
  /**
   * Mutual TLS is on (--tls-client-ca): discovery offers tls_client_auth and certificate-bound tokens (RFC 8705
   * §2.3, §3.3). Clients may use them either way; without it no request ever has a certificate.
   */
  mutualTls?: boolean;
}

export interface AuthDeps {
  now(): Date;
  /** Monotonic milliseconds: the windows of the failure limits. */
  monotonic(): number;
  newId(): string;
  /** The URL the sandbox listens on (http://localhost in-process): whose token endpoint assertions may name. */
  listeningUrl(): string;
  /** fs.watch, for the clients file. */
  fsWatch?: typeof watch;
  /** A problem a reloaded clients file would cause the workspaces (e.g. a new one under --workspaces fixed). */
  workspacesProblem?(names: readonly string[]): string | undefined;
  /** Where reloads of the clients file are told. */
  log?: {
    info(message: string, fields?: Record<string, unknown>): void;
    warn(message: string, fields?: Record<string, unknown>): void;
  };
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
  /**
   * Reads `Authorization: Bearer …` of a message-path request: a principal, or a 401 refusal. A certificate-bound
   * token (RFC 8705) is accepted only with the client certificate it is bound to (`certificate`: the request's).
   */
  authenticate(authorization: string | undefined, certificate?: PeerCertificate): Promise<Access>;
  /** The admin token the clients file gives a workspace (accepted on its admin API), if any. */
  workspaceAdminToken(workspace: string): string | undefined;
  /** The seed the clients file gives a workspace, if any. */
  workspaceSeed(workspace: string): string | undefined;
  /** The workspaces the clients file named at start (its clients' and its `workspaces` section's). */
  namedWorkspaces: readonly string[];
  /** Whether a workspace has an admin token of its own (in the clients file as it is now). */
  anyWorkspaceAdminToken(): boolean;
  /**
   * Reads the clients file again: on success its clients, secrets, keys, scopes, workspaces and admin tokens count
   * from the next request on, and every token already issued is judged by them; an invalid file is refused and
   * the previous one keeps serving (logged as a warning).
   */
  reloadClients(): ClientsReload;
  /** Reloads the clients file whenever it changes; returns the function that stops watching. */
  watchClients(): () => void;
  /** Issuer and endpoint URLs as a request to `requestUrl` should be told them. */
  endpoints(requestUrl: string): Endpoints;
  /** Serves POST /oauth2/token, GET /oauth2/jwks and the discovery documents. */
  mount(app: Hono<EdgeEnv>): void;
}

const JWKS_TIMEOUT_MS = 5_000;

export type ClientsReload = { ok: true; clients: number } | { ok: false; problem: string };

/** Failed client authentications allowed per address, whatever the clients: three clients' worth (a shared NAT). */
const ADDRESS_FAILURE_LIMIT = { ...DEFAULT_FAILURE_LIMIT, max: 3 * DEFAULT_FAILURE_LIMIT.max };

/**
 * A verified token judged by the clients file as it is now: its client must still be there, enabled, in the same
 * workspace, and its scopes are those it was granted that the client may still have. So a removed or disabled
 * client's token is refused at once, not when it expires.
 */
function stillValid(checked: TokenCheck, registry: ClientRegistry): TokenCheck {
  if (!checked.ok) return checked;
  const { clientId, workspace, scopes } = checked.principal;
  const client = registry.get(clientId);
  const renew = "the clients file changed since the token was issued";
  if (client === undefined) {
    return {
      ok: false,
      description: `Client ${clientId} is no longer in the clients file: its tokens are refused (${renew}).`,
    };
  }
  if (client.disabled) {
    return {
      ok: false,
      description: `Client ${clientId} is disabled in the clients file: its tokens are refused (${renew}).`,
    };
  }
  if (client.workspace !== workspace) {
    return {
      ok: false,
      description: `Client ${clientId} now acts in workspace ${client.workspace}, not ${workspace} as this token says (${renew}): get a new token from POST /oauth2/token.`,
    };
  }
  const kept = scopes.filter((s) => client.scopes.includes(s));
  return kept.length === scopes.length ? checked : { ...checked, principal: { ...checked.principal, scopes: kept } };
}

/**
 * RFC 8705 §3: a token bound to a certificate (its cnf x5t#S256) is refused, invalid_token, unless the request came
 * with that very certificate over mutual TLS.
 */
function boundToCaller(checked: TokenCheck, certificate: PeerCertificate | undefined): TokenCheck {
  if (!checked.ok) return checked;
  const bound = checked.principal.certificateThumbprint;
  if (bound === undefined || certificate?.thumbprintS256 === bound) return checked;
  const { clientId } = checked.principal;
  return {
    ok: false,
    description:
      certificate === undefined
        ? `The access token of client ${clientId} is bound to a client certificate (cnf x5t#S256 ${bound}, RFC 8705): send it over HTTPS presenting that certificate (mutual TLS).`
        : `The access token of client ${clientId} is bound to another client certificate (cnf x5t#S256 ${bound}; this connection's is ${certificate.thumbprintS256}, subject ${certificate.subject.replaceAll("\n", ", ")}): send it with the certificate it was issued to, or get a new token with this one.`,
  };
}

/** The workspaces a clients file names. */
const workspacesOf = (file: ClientsFile): string[] => [
  ...new Set([...file.clients.map((c) => c.workspace ?? DEFAULT_WORKSPACE), ...Object.keys(file.workspaces ?? {})]),
];

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
  const registryOf = (file: ClientsFile) => clientRegistry(file, config.scopes, { fetch: deps.fetch, jwksTimeoutMs });
  let registry = registryOf(loadClientsFile(config.clientsFile, config.scopes));
  const key = config.tokenKeyFile ? loadSigningKey(config.tokenKeyFile) : generateSigningKey();
  const fixedIssuer = config.publicUrl?.replace(/\/+$/, "");
  const endpoints = (requestUrl: string) => endpointsAt(fixedIssuer ?? new URL(requestUrl).origin);
  const verify = rememberingVerifier(key);
  const failures = {
    client: new FailureLimit(DEFAULT_FAILURE_LIMIT, deps.monotonic),
    address: new FailureLimit(ADDRESS_FAILURE_LIMIT, deps.monotonic),
  };
  const source = { event: "clients", source: config.clientsFile };

  const reloadClients = (): ClientsReload => {
    let next: ClientRegistry;
    try {
      const file = loadClientsFile(config.clientsFile, config.scopes);
      const problem = deps.workspacesProblem?.(workspacesOf(file));
      if (problem !== undefined) throw new Error(`invalid clients file:\n${config.clientsFile}: ${problem}`);
      next = registryOf(file);
    } catch (error) {
      const problem = (error as Error).message;
      deps.log?.warn(`clients file not reloaded, the previous one keeps serving: ${problem}`, {
        ...source,
        refused: true,
      });
      return { ok: false, problem };
    }
    registry = next;
    const clients = next.size;
    deps.log?.info(`clients file reloaded from ${config.clientsFile}: ${clients} clients`, { ...source, clients });
    return { ok: true, clients };
  };

  return {
    authenticate: (authorization, certificate) =>
      authenticate(authorization, async (token) =>
        boundToCaller(stillValid(await verify(token, deps.now()), registry), certificate),
      ),
    workspaceAdminToken: (workspace) => registry.adminToken(workspace),
    workspaceSeed: (workspace) => registry.seed(workspace),
    namedWorkspaces: registry.workspaces,
    anyWorkspaceAdminToken: () => registry.anyAdminToken,
    endpoints,
    reloadClients,
    watchClients: () =>
      deps.fsWatch
        ? watchPath(config.clientsFile, reloadClients, {
            watch: deps.fsWatch,
            onError: (message) => deps.log?.warn(message, { ...source, watch: false }),
            subject: "clients file changes",
            byHand: "POST /__admin/clients/reload (or SIGHUP) reloads it by hand",
          })
        : () => undefined,
    mount(app) {
      app.all(
        TOKEN_PATH,
        tokenEndpoint({
          registry: () => registry,
          audiences: () => assertionAudiences(fixedIssuer, deps.listeningUrl()),
          failures,
          address: remoteAddress,
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
      // Mutual TLS works over HTTPS only: a document served over plain HTTP (--tls-port's other port) names the
      // HTTPS token endpoint as its RFC 8705 §5 alias; without an HTTPS URL to name, it offers no mutual TLS.
      const mtls = (at: Endpoints): MutualTlsAt | undefined => {
        if (!config.mutualTls) return undefined;
        if (at.tokenEndpoint.startsWith("https:")) return { tokenEndpoint: at.tokenEndpoint };
        const secure = deps.listeningUrl();
        return secure.startsWith("https:")
          ? { tokenEndpoint: endpointsAt(new URL(secure).origin).tokenEndpoint }
          : undefined;
      };
      const document = (
        of: (at: Endpoints, scopes: readonly string[], mutualTls?: MutualTlsAt) => object,
        requestUrl: string,
      ) => {
        const at = endpoints(requestUrl);
        return jsonResponse(of(at, config.scopes, mtls(at)));
      };
      app.get("/.well-known/openid-configuration", (c) => document(openIdConfiguration, c.req.url));
      app.get("/.well-known/oauth-authorization-server", (c) => document(authorizationServerMetadata, c.req.url));
      // SMART puts its document under the FHIR base; the contract also names the root.
      const smartPaths = ["", ...FHIR_BASES.map((base) => `${config.basePath}${base}`)];
      for (const prefix of smartPaths) {
        app.get(`${prefix}/.well-known/smart-configuration`, (c) => document(smartConfiguration, c.req.url));
      }
    },
  };
}
