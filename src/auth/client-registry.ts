import { createLocalJWKSet, createRemoteJWKSet, customFetch, type JSONWebKeySet, type JWTVerifyGetKey } from "jose";
import { DEFAULT_WORKSPACE } from "../workspace/workspace-name.js";
import type { ClientsFile, TOKEN_ENDPOINT_AUTH_METHODS } from "./clients-file.js";
import { type Attribute, parseDistinguishedName } from "./distinguished-name.js";
import { MAGIC_CLIENTS, MAGIC_SECRET, type MagicBehaviour } from "./magic-clients.js";

/** A client that may ask for tokens, ready for the token endpoint. */
export interface RegisteredClient {
  id: string;
  /** For client_secret_basic and client_secret_post. */
  secret: string | undefined;
  /** Finds the key a client assertion is signed with (private_key_jwt); undefined: the client has no keys. */
  keys: JWTVerifyGetKey | undefined;
  /** Where the keys come from, for diagnostics: "its jwks" or its jwksUrl. */
  keySource: string;
  scopes: readonly string[];
  workspace: string;
  disabled: boolean;
  magic: MagicBehaviour | undefined;
  /** The one method it may authenticate with (token_endpoint_auth_method); undefined: any it has credentials for. */
  authMethod: (typeof TOKEN_ENDPOINT_AUTH_METHODS)[number] | undefined;
  /** tls_client_auth: the subject its certificate must have; undefined: a subject whose CN is its id. */
  tlsSubject: Attribute[] | undefined;
  /** Its tokens are bound to the certificate they were asked with (tls_client_certificate_bound_access_tokens). */
  certificateBound: boolean;
}

export interface ClientRegistry {
  get(id: string): RegisteredClient | undefined;
  /** The admin token the clients file gives a workspace, if any. */
  adminToken(workspace: string): string | undefined;
  /** The seed the clients file gives a workspace, if any. */
  seed(workspace: string): string | undefined;
  /** The workspaces the file names: its clients' and those of its `workspaces` section. */
  workspaces: readonly string[];
  /** Whether any workspace has an admin token of its own. */
  anyAdminToken: boolean;
  /** How many clients the file has (the magic ones not counted). */
  size: number;
}

export interface RegistryDeps {
  /** Outbound HTTP, for keys published at a jwksUrl. */
  fetch: typeof fetch;
  /** How long a jwksUrl may take to answer. */
  jwksTimeoutMs: number;
}

/**
 * The clients of a clients file plus the magic ones. A jwksUrl is fetched at
 * every private_key_jwt token request (no cache), so a client's rotated keys
 * count at once; jose does not follow redirects, so keys come only from the
 * local URL the file names.
 */
export function clientRegistry(file: ClientsFile, scopes: readonly string[], deps: RegistryDeps): ClientRegistry {
  const clients = new Map<string, RegisteredClient>();
  for (const entry of file.clients) {
    const remote = entry.jwksUrl
      ? createRemoteJWKSet(new URL(entry.jwksUrl), {
          timeoutDuration: deps.jwksTimeoutMs,
          cacheMaxAge: 0,
          // No second fetch for an unknown kid: the one fetch per request is already fresh.
          cooldownDuration: Number.POSITIVE_INFINITY,
          [customFetch]: (url, init) => deps.fetch(url, init),
        })
      : undefined;
    clients.set(entry.id, {
      id: entry.id,
      secret: entry.secret,
      keys: entry.jwks ? createLocalJWKSet(entry.jwks as JSONWebKeySet) : remote,
      keySource: entry.jwksUrl ? `its jwksUrl ${entry.jwksUrl}` : "its jwks",
      scopes: entry.scopes ?? scopes,
      workspace: entry.workspace ?? DEFAULT_WORKSPACE,
      disabled: entry.disabled ?? false,
      magic: undefined,
      authMethod: entry.token_endpoint_auth_method,
      // Checked by the file's schema: a subject given parses.
      tlsSubject: entry.tls_client_auth_subject_dn
        ? (parseDistinguishedName(entry.tls_client_auth_subject_dn) ?? undefined)
        : undefined,
      certificateBound: entry.tls_client_certificate_bound_access_tokens ?? false,
    });
  }
  for (const magic of MAGIC_CLIENTS) {
    clients.set(magic.id, {
      id: magic.id,
      secret: MAGIC_SECRET,
      keys: undefined,
      keySource: "",
      scopes,
      workspace: DEFAULT_WORKSPACE,
      disabled: magic.behaviour === "disabled",
      magic: magic.behaviour,
      authMethod: undefined,
      tlsSubject: undefined,
      certificateBound: false,
    });
  }
  const adminTokens = new Map(
    Object.entries(file.workspaces ?? {}).flatMap(([name, settings]) =>
      settings.adminToken ? [[name, settings.adminToken] as const] : [],
    ),
  );
  const sections = file.workspaces ?? {};
  return {
    get: (id) => clients.get(id),
    adminToken: (workspace) => adminTokens.get(workspace),
    seed: (workspace) => sections[workspace]?.seed,
    workspaces: [...new Set([...file.clients.map((c) => c.workspace ?? DEFAULT_WORKSPACE), ...Object.keys(sections)])],
    anyAdminToken: adminTokens.size > 0,
    size: file.clients.length,
  };
}
