import type { Context, MiddlewareHandler } from "hono";
import { type FailureLimit, retryAfterSeconds } from "../auth/failure-limit.js";
import { sameSecret } from "../auth/same-secret.js";
import { issue } from "../fhir/outcome.js";
import { outcomeOnly } from "../http/fhir-response.js";
import { fromThisMachine, remoteAddress } from "../http/remote-address.js";
import { DEFAULT_WORKSPACE } from "../workspace/workspace-name.js";

/** The bearer tokens the admin API accepts. */
export interface AdminTokens {
  /** --admin-token: accepted on the whole admin API. */
  global: string | undefined;
  /** A workspace's own admin token (the clients file's `workspaces`), accepted on that workspace's admin API. */
  workspace?(name: string): string | undefined;
  /** Whether any workspace has a token of its own: then the sandbox-wide endpoints are never open. */
  anyWorkspaceToken?(): boolean;
  /**
   * With --auth oauth2: where no admin token applies, the admin API answers callers on this machine only. A
   * sandbox that asks its message callers for tokens is one others reach; without an admin token its admin API
   * would be anyone's (workspaces made by clients have no token of their own).
   */
  openOnlyLocally?: boolean;
}

/** What an admin request acts on: one workspace's state, or the whole sandbox (the workspaces, the shared scenario files). */
export type AdminScope = { workspace: string } | "sandbox";

const unauthorized = (diagnostics: string) =>
  outcomeOnly(401, [issue("login", diagnostics)], { "www-authenticate": 'Bearer realm="uae-fhir-sandbox"' });

/** 429 (RFC 6585 §4) with Retry-After, issue code throttled, once an address has given too many wrong admin tokens. */
function throttled(waitMs: number, failures: FailureLimit): Response {
  const seconds = retryAfterSeconds(waitMs);
  const { max, windowMs } = failures.settings;
  return outcomeOnly(
    429,
    [
      issue(
        "throttled",
        `This address gave ${max} wrong admin tokens in ${windowMs / 1000} s, the most the sandbox allows: retry after ${seconds} s (Retry-After) with the right token.`,
      ),
    ],
    { "retry-after": seconds },
  );
}

/**
 * Why a request may not act on `scope` through the admin API, as the answer
 * to send (401, or 403 for a sandbox-wide endpoint no token can open); undefined
 * when it may. On one workspace's endpoints the global token or that
 * workspace's own is accepted, and the API is open when neither is set. The
 * sandbox-wide endpoints take the global token only: without one they are
 * open only while no workspace has a token of its own (403 otherwise, as a
 * workspace's token must not manage the others).
 */
export function adminRefusal(
  tokens: AdminTokens,
  scope: AdminScope,
  request: { method: string; path: string; authorization: string | undefined; local: boolean },
  /** Counts wrong tokens by address (the admin API's, not health's): past its limit, 429 before any comparison. */
  throttle?: { failures: FailureLimit; address: string },
): Response | undefined {
  const own = scope === "sandbox" ? undefined : tokens.workspace?.(scope.workspace);
  const accepted = [tokens.global, own].filter((t): t is string => t !== undefined);
  if (accepted.length === 0) {
    if (scope === "sandbox" && tokens.anyWorkspaceToken?.()) {
      return outcomeOnly(403, [
        issue(
          "forbidden",
          `${request.method} ${request.path} acts on the whole sandbox, not one workspace: it needs the global admin token, and this sandbox was started without one while workspaces have their own. Start it with --admin-token (ADMIN_TOKEN).`,
        ),
      ]);
    }
    if (tokens.openOnlyLocally && !request.local) {
      return outcomeOnly(403, [
        issue(
          "forbidden",
          `${request.method} ${request.path}: this sandbox runs with --auth oauth2 and no admin token applies here, so its admin API answers callers on its own machine only. Start it with --admin-token-file (or ADMIN_TOKEN) to reach the admin API from elsewhere, or give the workspace an adminToken in the clients file.`,
        ),
      ]);
    }
    return undefined;
  }
  // An address that gave too many wrong tokens is refused before its token is compared: guessing gains nothing.
  const wait = throttle?.failures.retryAfterMs(throttle.address) ?? 0;
  if (wait > 0 && throttle) return throttled(wait, throttle.failures);
  const given = /^Bearer\s+(.+)$/i.exec(request.authorization ?? "")?.[1]?.trim();
  if (given !== undefined && accepted.some((token) => sameSecret(given, token))) return undefined;
  // A wrong token counts; none at all guesses nothing (a dashboard not signed in yet).
  if (given !== undefined) throttle?.failures.fail(throttle.address);
  const which =
    scope === "sandbox"
      ? "the value the sandbox was started with (--admin-token / ADMIN_TOKEN); a workspace's own admin token opens only that workspace's admin API"
      : own === undefined
        ? "the value the sandbox was started with (--admin-token / ADMIN_TOKEN)"
        : `--admin-token, or the adminToken of workspace ${scope.workspace} in the clients file`;
  return unauthorized(
    given === undefined
      ? `The admin API needs a bearer token: send Authorization: Bearer <token>, the token being ${which}.`
      : `The bearer token is wrong: send ${which}.`,
  );
}

/** Whether a request (its Authorization header) may read `scope` through the admin API: what health shows it. */
export const mayRead = (
  tokens: AdminTokens,
  scope: AdminScope,
  request: { authorization: string | undefined; local: boolean },
): boolean => adminRefusal(tokens, scope, { method: "GET", path: "", ...request }) === undefined;

/** Bearer-token check for the admin API (adminRefusal); `/health` stays open for container health checks. */
export function adminAuth(
  tokens: AdminTokens,
  scopeOf: (c: Context) => AdminScope = () => ({ workspace: DEFAULT_WORKSPACE }),
  failures?: FailureLimit,
): MiddlewareHandler {
  return async (c, next) => {
    // Exact path: a suffix test would let any unknown path ending in /__admin/health past the token.
    if (c.req.path === "/__admin/health") return next();
    const refusal = adminRefusal(
      tokens,
      scopeOf(c),
      {
        method: c.req.method,
        path: c.req.path,
        authorization: c.req.header("authorization"),
        local: fromThisMachine(c),
      },
      failures ? { failures, address: remoteAddress(c) } : undefined,
    );
    return refusal ?? next();
  };
}
