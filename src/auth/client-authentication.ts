import type { PeerCertificate } from "../tls/peer-certificate.js";
import { REALM } from "./bearer.js";
import {
  type AssertionCheck,
  assertionIssuer,
  CLIENT_ASSERTION_TYPE,
  verifyClientAssertion,
} from "./client-assertion.js";
import type { ClientRegistry, RegisteredClient } from "./client-registry.js";
import { nameText, parseDistinguishedName, sameName } from "./distinguished-name.js";
import { RATE_LIMIT_RETRY_AFTER_SECONDS } from "./magic-clients.js";
import { type OAuthError, oauthError } from "./oauth-error.js";
import { sameSecret } from "./same-secret.js";

/** The client authentication methods of the token endpoint (token_endpoint_auth_methods_supported). */
export const CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "private_key_jwt"] as const;

/** What a token request presents to say which client it is. */
export type Presented =
  | { method: "client_secret_basic"; clientId: string; secrets: string[] }
  | { method: "client_secret_post"; clientId: string; secrets: string[] }
  | { method: "private_key_jwt"; clientId: string; assertion: string }
  /** RFC 8705 §2: client_id alone, the client proved by the connection's certificate (undefined: none came). */
  | { method: "tls_client_auth"; clientId: string; certificate: PeerCertificate | undefined };

export type Result<T> = { ok: true; value: T } | { ok: false; error: OAuthError };

const BASIC_CHALLENGE = { "www-authenticate": `Basic realm="${REALM}", charset="UTF-8"` };

/**
 * invalid_client: 401 with a Basic challenge when the client tried HTTP
 * authentication (RFC 6749 §5.2 says MUST) or none at all (the scheme it may
 * use); 400 when it authenticated in the body.
 */
const invalidClient = (description: string, viaHeader: boolean): Result<never> => ({
  ok: false,
  error: viaHeader
    ? oauthError("invalid_client", description, 401, BASIC_CHALLENGE)
    : oauthError("invalid_client", description),
});

const invalidRequest = (description: string): Result<never> => ({
  ok: false,
  error: oauthError("invalid_request", description),
});

/** application/x-www-form-urlencoded decoding of one part of Basic credentials (RFC 6749 §2.3.1). */
function formDecoded(text: string): string | undefined {
  try {
    return decodeURIComponent(text.replace(/\+/g, " "));
  } catch {
    return undefined;
  }
}

/** client_id and client_secret from `Authorization: Basic`; `secrets` holds the form-decoded and the raw secret. */
function basicCredentials(header: string): Result<Presented> {
  const encoded = /^Basic +([A-Za-z0-9+/]+=*)\s*$/i.exec(header)?.[1];
  const decoded = encoded === undefined ? "" : Buffer.from(encoded, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 1) {
    return invalidClient(
      "The Authorization header is not Basic credentials: send Basic base64(client_id:client_secret), each form-urlencoded first.",
      true,
    );
  }
  const rawId = decoded.slice(0, colon);
  const rawSecret = decoded.slice(colon + 1);
  // RFC 6749 asks clients to form-encode both; `curl -u id:secret` does not. Either is accepted.
  const clientId = formDecoded(rawId) ?? rawId;
  const secrets = [...new Set([formDecoded(rawSecret), rawSecret].filter((s): s is string => s !== undefined))];
  return { ok: true, value: { method: "client_secret_basic", clientId, secrets } };
}

/**
 * Which method the request uses, the client it claims to be and the credentials it presents, before anything is
 * checked; more than one method is refused (§5.2).
 */
export function presented(
  params: URLSearchParams,
  authorization: string | undefined,
  certificate?: PeerCertificate,
): Result<Presented> {
  const header = authorization?.trim() ? authorization.trim() : undefined;
  const body = params.has("client_secret");
  const jwt = params.has("client_assertion") || params.has("client_assertion_type");
  const methods = [header !== undefined, body, jwt].filter(Boolean).length;
  if (methods > 1) {
    return invalidRequest(
      "The request uses more than one client authentication method (Authorization header, client_secret, client_assertion): use one.",
    );
  }
  const clientIdParam = params.get("client_id") ?? undefined;
  if (header !== undefined) {
    if (!/^Basic\s/i.test(header)) {
      return invalidClient(
        `The token endpoint authenticates clients with Basic credentials in the Authorization header, not ${header.split(/\s/)[0]}; or send client_secret or client_assertion in the body.`,
        true,
      );
    }
    const basic = basicCredentials(header);
    if (basic.ok && clientIdParam !== undefined && clientIdParam !== basic.value.clientId) {
      return invalidRequest(
        `client_id ${clientIdParam} in the body is not the client of the Authorization header (${basic.value.clientId}).`,
      );
    }
    return basic;
  }
  if (body) {
    if (clientIdParam === undefined) return invalidRequest("client_secret_post needs client_id beside client_secret.");
    return {
      ok: true,
      value: { method: "client_secret_post", clientId: clientIdParam, secrets: [params.get("client_secret") ?? ""] },
    };
  }
  if (jwt) {
    const type = params.get("client_assertion_type");
    const assertion = params.get("client_assertion");
    if (type !== CLIENT_ASSERTION_TYPE) {
      return invalidRequest(
        `client_assertion_type must be ${CLIENT_ASSERTION_TYPE} (private_key_jwt), not ${JSON.stringify(type)}.`,
      );
    }
    if (!assertion)
      return invalidRequest("client_assertion is missing: send the signed JWT beside client_assertion_type.");
    const issuer = assertionIssuer(assertion);
    if (!issuer.ok) return invalidClient(issuer.description, false);
    if (clientIdParam !== undefined && clientIdParam !== issuer.value) {
      return invalidClient(`client_id ${clientIdParam} is not the client_assertion's iss (${issuer.value}).`, false);
    }
    return { ok: true, value: { method: "private_key_jwt", clientId: issuer.value, assertion } };
  }
  // client_id alone: tls_client_auth, if the client is registered for it (else no authentication at all).
  if (clientIdParam !== undefined) {
    return { ok: true, value: { method: "tls_client_auth", clientId: clientIdParam, certificate } };
  }
  return noAuthentication(undefined);
}

/** A request that authenticates no client by any method (RFC 8705's included: its client is not registered for it). */
const noAuthentication = (clientId: string | undefined): Result<never> =>
  invalidClient(
    `No client authentication${clientId ? ` for client ${clientId}` : ""}: use client_secret_basic (Authorization: Basic), client_secret_post (client_id and client_secret), private_key_jwt (client_assertion), or tls_client_auth (client_id over mutual TLS, for a client registered with it). Public clients get no tokens.`,
    true,
  );

/** RFC 8705 §2.1: the connection's verified certificate is the client's. */
function tlsClientAuth(client: RegisteredClient, certificate: PeerCertificate | undefined): Result<RegisteredClient> {
  if (certificate === undefined) {
    return invalidClient(
      `Client ${client.id} authenticates with its client certificate (token_endpoint_auth_method tls_client_auth): send the token request over HTTPS presenting that certificate (mutual TLS), with client_id and no secret.`,
      false,
    );
  }
  const subject = parseDistinguishedName(certificate.subject) ?? [];
  const registered = client.tlsSubject;
  // Without a registered subject the CN is the client id, whatever else the subject says.
  const matches = registered ? sameName(subject, registered) : certificate.commonName === client.id;
  if (matches) return { ok: true, value: client };
  const wanted = registered
    ? `the subject ${nameText(registered)} (tls_client_auth_subject_dn)`
    : `the CN ${client.id} (its client id: no tls_client_auth_subject_dn is registered)`;
  return invalidClient(
    `The client certificate (subject ${nameText(subject)}) is not client ${client.id}'s: its certificate must have ${wanted}.`,
    false,
  );
}

/**
 * Authenticates the client of a token request by the one method it uses
 * (what `presented` read); magic clients answer here as their name says
 * (rate-limited: 429, disabled: invalid_client).
 */
export async function authenticatePresented(
  given: Presented,
  registry: ClientRegistry,
  assertionCheck: AssertionCheck,
): Promise<Result<RegisteredClient>> {
  const { method, clientId } = given;
  const viaHeader = method === "client_secret_basic";
  const client = registry.get(clientId);
  // client_id alone is an authentication only for a client registered for tls_client_auth.
  if (method === "tls_client_auth" && client?.authMethod !== "tls_client_auth") return noAuthentication(clientId);
  if (!client)
    return invalidClient(`Unknown client ${clientId}: use a client_id of the clients file (--clients).`, viaHeader);
  if (client.magic === "rate-limited") {
    return {
      ok: false,
      error: oauthError(
        "temporarily_unavailable",
        `Magic client ${client.id}: every token request is answered 429, to rehearse rate limiting. Retry after ${RATE_LIMIT_RETRY_AFTER_SECONDS} seconds (Retry-After), or use another client.`,
        429,
        { "retry-after": String(RATE_LIMIT_RETRY_AFTER_SECONDS) },
      ),
    };
  }
  if (client.disabled) {
    const why = client.magic === "disabled" ? "magic client: always disabled" : "disabled: true in the clients file";
    return invalidClient(`Client ${client.id} is disabled (${why}); it gets no tokens.`, viaHeader);
  }
  if (client.authMethod !== undefined && client.authMethod !== method) {
    return invalidClient(
      `Client ${client.id} is registered with token_endpoint_auth_method ${client.authMethod}: authenticate with it, not ${method}.`,
      viaHeader,
    );
  }
  if (given.method === "tls_client_auth") return tlsClientAuth(client, given.certificate);
  if (given.method === "private_key_jwt") {
    const verified = await verifyClientAssertion(given.assertion, client, assertionCheck);
    if (verified.ok) return verified;
    if (verified.retryAfter !== undefined) {
      return {
        ok: false,
        error: oauthError("temporarily_unavailable", verified.description, 429, {
          "retry-after": String(verified.retryAfter),
        }),
      };
    }
    return invalidClient(verified.description, false);
  }
  if (client.secret === undefined) {
    return invalidClient(
      `Client ${client.id} has no secret, only public keys: authenticate with private_key_jwt (a client_assertion signed by its key).`,
      viaHeader,
    );
  }
  const secret = client.secret;
  if (!given.secrets.some((s) => sameSecret(s, secret))) {
    return invalidClient(`The client secret of ${client.id} is wrong: send the secret of the clients file.`, viaHeader);
  }
  return { ok: true, value: client };
}
