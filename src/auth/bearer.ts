import { type Issue, issue } from "../fhir/outcome.js";
import type { Principal, TokenCheck } from "./access-token.js";

/**
 * The message paths as an OAuth2 resource server (RFC 6750): who the bearer
 * token speaks for, and whether it may send an operation. Refusals are values
 * (status, OperationOutcome issues, WWW-Authenticate) for the pipeline to
 * answer and journal like any other message it does not process.
 */

export const REALM = "uae-fhir-sandbox";

/** A message the caller may not send: 401 (no usable token) or 403 (a scope missing). */
export interface Refusal {
  status: 401 | 403;
  issues: Issue[];
  headers: Record<string, string>;
}

export type Access = { ok: true; principal: Principal } | { ok: false; refusal: Refusal };

/** A quoted attribute value; RFC 6750 §3 allows no `"`, `\\` or non-ASCII in it, so they become `'`. */
const quoted = (text: string) => `"${text.replace(/[^\x20\x21\x23-\x5B\x5D-\x7E]/g, "'")}"`;

function unauthenticated(description: string): Access {
  return {
    ok: false,
    refusal: {
      status: 401,
      issues: [issue("login", description)],
      // The issue asks for error="invalid_token" on a missing token too, though RFC 6750 §3.1 would leave it out.
      headers: {
        "www-authenticate": `Bearer realm=${quoted(REALM)}, error="invalid_token", error_description=${quoted(description)}`,
      },
    },
  };
}

/** Reads `Authorization: Bearer <token>` and verifies the token. */
export async function authenticate(
  authorization: string | undefined,
  verify: (token: string) => Promise<TokenCheck>,
): Promise<Access> {
  if (authorization === undefined || authorization.trim() === "") {
    return unauthenticated(
      "This sandbox runs with --auth oauth2: send Authorization: Bearer <access token>, a token from POST /oauth2/token (client-credentials grant).",
    );
  }
  const token = /^Bearer +([A-Za-z0-9\-._~+/]+=*)\s*$/i.exec(authorization)?.[1];
  if (token === undefined) {
    return unauthenticated(
      `The Authorization header is not a bearer token (it starts "${authorization.trim().split(/\s/)[0]}"): send Authorization: Bearer <access token from POST /oauth2/token>.`,
    );
  }
  const checked = await verify(token);
  return checked.ok ? { ok: true, principal: checked.principal } : unauthenticated(checked.description);
}

/** A 403 when the token lacks the scope the operation needs (catalogue: Operation.scope); undefined when it may. */
export function authorize(access: Access, operation: { id: string; scope: string }): Refusal | undefined {
  if (!access.ok || access.principal.scopes.includes(operation.scope)) return undefined;
  const held = access.principal.scopes.length > 0 ? access.principal.scopes.join(" ") : "none";
  const description = `${operation.id} needs the scope ${operation.scope}; this token (client ${access.principal.clientId}) has: ${held}. Ask POST /oauth2/token for a token with scope ${operation.scope} (the client must be allowed it in the clients file).`;
  return {
    status: 403,
    issues: [issue("forbidden", description)],
    headers: {
      "www-authenticate": `Bearer realm=${quoted(REALM)}, error="insufficient_scope", error_description=${quoted(description)}, scope=${quoted(operation.scope)}`,
    },
  };
}
