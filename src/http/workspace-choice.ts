import type { MiddlewareHandler } from "hono";
import { getPath } from "hono/utils/url";
import type { Access } from "../auth/bearer.js";
import { issue } from "../fhir/outcome.js";
import { DEFAULT_WORKSPACE } from "../workspace/workspace-name.js";
import type { Workspaces } from "../workspace/workspaces.js";
import { type EdgeEnv, outcomeOnly } from "./fhir-response.js";
import { requestHeader } from "./request-headers.js";

/** The header that names a workspace when the path does not (CONTRACT §13). */
export const WORKSPACE_HEADER = "X-Sandbox-Workspace";

const PREFIX = "/w/";

/** The workspace a path's `/w/{workspace}` prefix names (as written, maybe no valid name), or undefined. */
function prefixed(path: string): string | undefined {
  if (!path.startsWith(PREFIX)) return undefined;
  const end = path.indexOf("/", PREFIX.length);
  return end === -1 ? path.slice(PREFIX.length) : path.slice(PREFIX.length, end);
}

/**
 * The path a request is routed by: without its `/w/{workspace}` prefix, so
 * that every route (messages, capability, admin) serves under the prefix
 * as it does without it. Hono's `getPath` option; `c.req.url` keeps the
 * prefix.
 *
 * @example
 *   new Hono({ getPath: routedPath }); // /w/team-a/__admin/calls is routed as /__admin/calls
 */
export function routedPath(request: Request): string {
  const path = getPath(request);
  const name = prefixed(path);
  if (name === undefined) return path;
  return path.slice(PREFIX.length + name.length) || "/";
}

export interface WorkspaceChoiceDeps {
  workspaces: Workspaces;
  /** With --auth oauth2: reads the bearer token of a message-path request. */
  authenticate?: (authorization: string | undefined) => Promise<Access>;
  /** Whether a routed path is a message path (where a token decides the workspace). */
  isMessagePath(path: string): boolean;
  /** Whether a routed path is an OAuth2 endpoint or discovery document (open to callers without a token). */
  isAuthPath?: (path: string) => boolean;
}

/**
 * Chooses the workspace a request acts in (CONTRACT §13), in order: the
 * OAuth2 client's (a verified token on a message path; a prefix or header
 * naming another workspace is then refused with 403), the path prefix
 * `/w/{workspace}`, the X-Sandbox-Workspace header, else default. A request
 * without a usable token is answered 401 later and journaled in the
 * workspace it names. Sets `workspace`, `workspacePrefix` (the prefix the
 * URL came with, for the URLs the answer names) and `access`; answers
 * itself only when the workspace cannot be used (400, 404, 503).
 */
export function chooseWorkspace(deps: WorkspaceChoiceDeps): MiddlewareHandler<EdgeEnv> {
  return async (c, next) => {
    const inPath = prefixed(getPath(c.req.raw));
    const inHeader = requestHeader(c, WORKSPACE_HEADER);
    const named =
      inPath !== undefined
        ? { name: inPath, via: `The path prefix /w/${inPath}` }
        : inHeader !== undefined
          ? { name: inHeader, via: `The ${WORKSPACE_HEADER} header` }
          : undefined;
    const bad = named && deps.workspaces.nameProblem(named.name, named.via);
    if (bad) return refuse(bad.status, bad.issues, bad.headers);

    let chosen = named ?? { name: DEFAULT_WORKSPACE, via: "The request" };
    let access: Access | undefined;
    if (deps.authenticate && deps.isMessagePath(c.req.path)) {
      access = await deps.authenticate(requestHeader(c, "authorization"));
      if (access.ok) {
        const { clientId, workspace } = access.principal;
        if (named && named.name !== workspace) access = mismatch(clientId, workspace, named);
        chosen = { name: workspace, via: `The access token of client ${clientId}` };
      }
    }
    // Under OAuth2 a caller without a valid token makes no workspace: its 401 (or its token request, its
    // discovery read) is journaled in default, else anonymous requests could fill --max-workspaces.
    if (deps.authenticate && chosen === named && !deps.workspaces.exists(named.name)) {
      const unauthenticated = access ? !access.ok : !!deps.isAuthPath?.(c.req.path);
      if (unauthenticated) chosen = { name: DEFAULT_WORKSPACE, via: "The request" };
    }
    const found = deps.workspaces.use(chosen.name, chosen.via);
    if (!found.ok) return refuse(found.refusal.status, found.refusal.issues, found.refusal.headers);
    c.set("workspace", found.workspace);
    c.set("workspacePrefix", inPath !== undefined ? `${PREFIX}${inPath}` : "");
    c.set("access", access);
    return next();
  };
}

/** A token acts in its client's workspace only: another one named beside it is refused, not silently ignored. */
function mismatch(clientId: string, workspace: string, named: { name: string; via: string }): Access {
  return {
    ok: false,
    refusal: {
      status: 403,
      issues: [
        issue(
          "forbidden",
          `${named.via} names workspace ${named.name}, but the access token of client ${clientId} acts in workspace ${workspace} (the clients file says so). Send the message without the prefix or header, or with a token of a client of workspace ${named.name}.`,
        ),
      ],
      headers: {},
    },
  };
}

function refuse(status: number, issues: ReturnType<typeof issue>[], headers: Record<string, string>): Response {
  return outcomeOnly(status, issues, headers);
}
