import type { Context, MiddlewareHandler } from "hono";
import { sameSecret } from "../auth/same-secret.js";
import { issue } from "../fhir/outcome.js";
import { outcomeOnly } from "../http/fhir-response.js";
import { DEFAULT_WORKSPACE } from "../workspace/workspace-name.js";

/** The bearer tokens the admin API accepts. */
export interface AdminTokens {
  /** --admin-token: accepted on the whole admin API. */
  global: string | undefined;
  /** A workspace's own admin token (the clients file's `workspaces`), accepted on that workspace's admin API. */
  workspace?(name: string): string | undefined;
  /** Whether any workspace has a token of its own: then the sandbox-wide endpoints are never open. */
  anyWorkspaceToken?: boolean;
}

/** What an admin request acts on: one workspace's state, or the whole sandbox (the workspaces, the shared scenario files). */
export type AdminScope = { workspace: string } | "sandbox";

const unauthorized = (diagnostics: string) =>
  outcomeOnly(401, [issue("login", diagnostics)], { "www-authenticate": 'Bearer realm="uae-fhir-sandbox"' });

/**
 * Bearer-token check for the admin API; `/health` stays open for container
 * health checks. On one workspace's endpoints the global token or that
 * workspace's own is accepted, and the API is open when neither is set. The
 * sandbox-wide endpoints take the global token only: without one they are
 * open only while no workspace has a token of its own (403 otherwise, as a
 * workspace's token must not manage the others).
 */
export function adminAuth(
  tokens: AdminTokens,
  scopeOf: (c: Context) => AdminScope = () => ({ workspace: DEFAULT_WORKSPACE }),
): MiddlewareHandler {
  return async (c, next) => {
    // Exact path: a suffix test would let any unknown path ending in /__admin/health past the token.
    if (c.req.path === "/__admin/health") return next();
    const scope = scopeOf(c);
    const own = scope === "sandbox" ? undefined : tokens.workspace?.(scope.workspace);
    const accepted = [tokens.global, own].filter((t): t is string => t !== undefined);
    if (accepted.length === 0) {
      if (scope !== "sandbox" || !tokens.anyWorkspaceToken) return next();
      return outcomeOnly(403, [
        issue(
          "forbidden",
          `${c.req.method} ${c.req.path} acts on the whole sandbox, not one workspace: it needs the global admin token, and this sandbox was started without one while workspaces have their own. Start it with --admin-token (ADMIN_TOKEN).`,
        ),
      ]);
    }
    const header = c.req.header("authorization") ?? "";
    const given = /^Bearer\s+(.+)$/i.exec(header)?.[1]?.trim();
    if (given !== undefined && accepted.some((token) => sameSecret(given, token))) return next();
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
  };
}
