import type { Context, MiddlewareHandler } from "hono";
import { sameSecret } from "../auth/same-secret.js";
import { DEFAULT_WORKSPACE } from "../auth/workspace-name.js";
import { issue, operationOutcome } from "../fhir/outcome.js";
import { FHIR_JSON } from "../http/fhir-response.js";

/** The bearer tokens the admin API accepts. */
export interface AdminTokens {
  /** --admin-token: accepted on the whole admin API. */
  global: string | undefined;
  /** A workspace's own admin token (the clients file's `workspaces`), accepted on that workspace's admin API. */
  workspace?(name: string): string | undefined;
}

/**
 * Bearer-token check for the admin API; `/health` stays open for container
 * health checks. The API is open when no token applies to the workspace it
 * acts on; otherwise the global token or that workspace's own is needed.
 * `workspaceOf` tells the workspace a request acts on (today always default).
 */
export function adminAuth(
  tokens: AdminTokens,
  workspaceOf: (c: Context) => string = () => DEFAULT_WORKSPACE,
): MiddlewareHandler {
  return async (c, next) => {
    // Exact path: a suffix test would let any unknown path ending in /__admin/health past the token.
    if (c.req.path === "/__admin/health") return next();
    const workspace = workspaceOf(c);
    const own = tokens.workspace?.(workspace);
    const accepted = [tokens.global, own].filter((t): t is string => t !== undefined);
    if (accepted.length === 0) return next();
    const header = c.req.header("authorization") ?? "";
    const given = /^Bearer\s+(.+)$/i.exec(header)?.[1]?.trim();
    if (given !== undefined && accepted.some((token) => sameSecret(given, token))) return next();
    const which =
      own === undefined
        ? "the value the sandbox was started with (--admin-token / ADMIN_TOKEN)"
        : `--admin-token, or the adminToken of workspace ${workspace} in the clients file`;
    const body = operationOutcome([
      issue(
        "login",
        given === undefined
          ? `The admin API needs a bearer token: send Authorization: Bearer <token>, the token being ${which}.`
          : `The bearer token is wrong: send ${which}.`,
      ),
    ]);
    return new Response(JSON.stringify(body), {
      status: 401,
      headers: { "content-type": FHIR_JSON, "www-authenticate": 'Bearer realm="uae-fhir-sandbox"' },
    });
  };
}
