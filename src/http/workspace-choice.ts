import type { Context, MiddlewareHandler } from "hono";
import { getPath } from "hono/utils/url";
import type { Access } from "../auth/bearer.js";
import { type Issue, issue } from "../fhir/outcome.js";
import { type PeerCertificate, peerCertificate } from "../tls/peer-certificate.js";
import type { Workspace } from "../workspace/workspace.js";
import { DEFAULT_WORKSPACE, isWorkspaceName, WORKSPACE_NAME_RULE } from "../workspace/workspace-name.js";
import type { Workspaces } from "../workspace/workspaces.js";
import type { EdgeEnv } from "./edge-env.js";
import { outcomeResponse } from "./fhir-response.js";
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
  return unprefixedPath(getPath(request));
}

/** A request path without its `/w/{workspace}` prefix: the path routedPath routes by (the Node message path's too). */
export function unprefixedPath(path: string): string {
  const name = prefixed(path);
  if (name === undefined) return path;
  return path.slice(PREFIX.length + name.length) || "/";
}

export interface WorkspaceChoiceDeps {
  workspaces: Workspaces;
  /** With --auth oauth2: reads the bearer token of a message-path request. */
  authenticate?: (authorization: string | undefined, certificate?: PeerCertificate) => Promise<Access>;
  /** Whether a routed path is a message path (where a token decides the workspace). */
  isMessagePath(path: string): boolean;
  /** Whether a routed path is a REST read (where a token decides the workspace too). */
  isReadPath?: (path: string) => boolean;
  /**
   * --workspace-from-cert, without OAuth2: on a message or read path, a verified client certificate's CN is the
   * workspace, as a token's client is under OAuth2.
   */
  workspaceFromCertificate?: boolean;
  /** Whether a routed path is an OAuth2 endpoint or discovery document (open to callers without a token). */
  isAuthPath?: (path: string) => boolean;
  /**
   * With --auth oauth2, for an admin request naming a workspace not held: the admin API's refusal of its token
   * (401), if it refuses it. Either way the workspace is not made.
   */
  adminRefusal?: (c: Context<EdgeEnv>, workspace: string) => Response | undefined;
}

/**
 * Chooses the workspace a request acts in (CONTRACT §13), in order: the
 * OAuth2 client's (a verified token on a message path; a prefix or header
 * naming another workspace is then refused with 403), the path prefix
 * `/w/{workspace}`, the X-Sandbox-Workspace header, else default. Sets
 * `workspace`, `workspacePrefix` (the prefix the URL came with, for the URLs
 * the answer names), `access`, `namedWorkspace` and `anonymous`; answers
 * itself only when the workspace cannot be used (400, 404, 503).
 *
 * Under --auth oauth2 a caller is anonymous until it proves a client (a valid
 * token here, valid client authentication at the token endpoint), and an
 * anonymous caller makes no workspace (CONTRACT §15): naming one not held, it
 * gets the 401 a message path gives (answered in default, whose journal it
 * does not enter either), the token endpoint's and discovery's answers, the
 * admin API's 401, or else a 404 — and nothing is made.
 */
export function chooseWorkspace(deps: WorkspaceChoiceDeps): MiddlewareHandler<EdgeEnv> {
  return async (c, next) => {
    const decided = decideWorkspace(deps, {
      urlPath: getPath(c.req.raw),
      routedPath: c.req.path,
      header: (name) => requestHeader(c, name),
      certificate: peerCertificate(c),
    });
    const decision = decided instanceof Promise ? await decided : decided;
    c.set("namedWorkspace", decision.namedWorkspace);
    c.set("anonymous", decision.anonymous);
    switch (decision.kind) {
      case "refused":
        return outcomeResponse(c, decision.status, decision.issues, decision.headers);
      case "unknown": {
        const path = c.req.path;
        // Health and the dashboard's pages need no token: they are not the admin API's to refuse.
        const guarded = path.startsWith("/__admin/") && path !== "/__admin/health" && !path.startsWith("/__admin/ui");
        const refused = guarded ? deps.adminRefusal?.(c, decision.named.name) : undefined;
        return refused ?? outcomeResponse(c, 404, unknownWorkspace(decision.named));
      }
      case "chosen":
        c.set("workspace", decision.workspace);
        c.set("workspacePrefix", decision.prefix);
        c.set("access", decision.access);
        return next();
    }
  };
}

/** What the workspace choice decided, with what the recorder needs to know of the caller either way. */
export type WorkspaceDecision = {
  /** The workspace the request named (its prefix or header; default when none), null when no valid name. */
  namedWorkspace: string | null;
  /** Under --auth oauth2, until a caller proves a client (CONTRACT §15). */
  anonymous: boolean;
} & (
  | { kind: "chosen"; workspace: Workspace; prefix: string; access: Access | undefined }
  /** The workspace cannot be used: answered with this OperationOutcome. */
  | { kind: "refused"; status: number; issues: Issue[]; headers: Record<string, string> }
  /** An anonymous caller named a workspace not held (the admin API may refuse its token instead). */
  | { kind: "unknown"; named: { name: string; via: string } }
);

/**
 * What the choice reads of a request: its URL path (prefix included), its routed path, its headers, and its
 * connection's verified client certificate (mutual TLS).
 */
export interface WorkspaceRequest {
  urlPath: string;
  routedPath: string;
  header(name: string): string | undefined;
  certificate?: PeerCertificate | undefined;
}

/**
 * The workspace choice without a framework (chooseWorkspace's and the Node message path's): synchronous unless a
 * bearer token is to be verified.
 */
export function decideWorkspace(
  deps: WorkspaceChoiceDeps,
  request: WorkspaceRequest,
): WorkspaceDecision | Promise<WorkspaceDecision> {
  const inPath = prefixed(request.urlPath);
  const inHeader = request.header(WORKSPACE_HEADER);
  const named =
    inPath !== undefined
      ? { name: inPath, via: `The path prefix /w/${inPath}` }
      : inHeader !== undefined
        ? { name: inHeader, via: `The ${WORKSPACE_HEADER} header` }
        : undefined;
  const namedWorkspace = named === undefined ? DEFAULT_WORKSPACE : isWorkspaceName(named.name) ? named.name : null;
  // Without OAuth2 the prefix or header says whose call it is; with it, only a proven client's is anyone's.
  const anonymous = deps.authenticate !== undefined;
  const bad = named && deps.workspaces.nameProblem(named.name, named.via);
  if (bad) return { kind: "refused", namedWorkspace, anonymous, ...bad };
  let chosen = named ?? { name: DEFAULT_WORKSPACE, via: "The request" };
  const routed = request.routedPath;
  if (
    deps.workspaceFromCertificate &&
    !deps.authenticate &&
    request.certificate &&
    (deps.isMessagePath(routed) || deps.isReadPath?.(routed))
  ) {
    const byCertificate = certificateWorkspace(request.certificate, named);
    if ("issues" in byCertificate) return { kind: "refused", namedWorkspace, anonymous, ...byCertificate };
    chosen = byCertificate;
  }
  const decide = (access: Access | undefined) =>
    afterToken(deps, request.routedPath, { named, chosen, inPath, namedWorkspace, anonymous }, access);
  if (deps.authenticate && (deps.isMessagePath(request.routedPath) || deps.isReadPath?.(request.routedPath))) {
    // The certificate too: a token bound to one (RFC 8705) is good only with it.
    return deps.authenticate(request.header("authorization"), request.certificate).then(decide);
  }
  return decide(undefined);
}

/** The choice once the bearer token (if any was read) is known. */
function afterToken(
  deps: WorkspaceChoiceDeps,
  routedPath: string,
  start: {
    named: { name: string; via: string } | undefined;
    chosen: { name: string; via: string };
    inPath: string | undefined;
    namedWorkspace: string | null;
    anonymous: boolean;
  },
  token: Access | undefined,
): WorkspaceDecision {
  const { named, inPath, namedWorkspace } = start;
  let { chosen, anonymous } = start;
  let access = token;
  if (access?.ok) {
    const { clientId, workspace } = access.principal;
    anonymous = false;
    if (named && named.name !== workspace) access = mismatch(clientId, workspace, named);
    chosen = { name: workspace, via: `The access token of client ${clientId}` };
  }
  if (deps.authenticate && chosen === named && !deps.workspaces.exists(named.name)) {
    // A message's 401 and the token endpoint's and discovery's answers are the same in any workspace: default
    // stands in (its journal keeps none of it: the call is anonymous). Anything else is refused here.
    if (access === undefined && !deps.isAuthPath?.(routedPath)) {
      return { kind: "unknown", named, namedWorkspace, anonymous };
    }
    chosen = { name: DEFAULT_WORKSPACE, via: "The request" };
  }
  const found = deps.workspaces.use(chosen.name, chosen.via);
  if (!found.ok) return { kind: "refused", namedWorkspace, anonymous, ...found.refusal };
  return {
    kind: "chosen",
    namedWorkspace,
    anonymous,
    workspace: found.workspace,
    prefix: inPath !== undefined ? `${PREFIX}${inPath}` : "",
    access,
  };
}

/**
 * The 404 of a caller without a token that names a workspace not held (under --auth oauth2), where the admin API
 * does not refuse its token first: it names no workspace that exists.
 */
export function unknownWorkspace(named: { name: string; via: string }): Issue[] {
  return [
    issue(
      "not-found",
      `${named.via} names workspace ${named.name}, which this sandbox does not hold. It runs with --auth oauth2: a workspace is made only by a valid access token of one of its clients (POST /oauth2/token, then a message with Authorization: Bearer <token>); the others are those its clients file and --workspaces name.`,
    ),
  ];
}

/**
 * The workspace a client certificate names (--workspace-from-cert): its CN. A prefix or header naming another is
 * refused, as beside a token; so is a CN that is no workspace name.
 */
function certificateWorkspace(
  certificate: PeerCertificate,
  named: { name: string; via: string } | undefined,
): { name: string; via: string } | { status: number; issues: Issue[]; headers: Record<string, string> } {
  const cn = certificate.commonName;
  const forbidden = (text: string) => ({ status: 403, issues: [issue("forbidden", text)], headers: {} });
  if (cn === undefined || !isWorkspaceName(cn)) {
    return forbidden(
      `The client certificate (${certificate.subject.replaceAll("\n", ", ")}) chooses the workspace (--workspace-from-cert), but its CN is not ${WORKSPACE_NAME_RULE}. Use a certificate whose CN is the workspace's name (uae-fhir-sandbox certs --client <workspace>).`,
    );
  }
  if (named && named.name !== cn) {
    return forbidden(
      `${named.via} names workspace ${named.name}, but the client certificate CN=${cn} acts in workspace ${cn} (--workspace-from-cert). Send the request without the prefix or header, or with a certificate whose CN is ${named.name}.`,
    );
  }
  return { name: cn, via: `The client certificate CN=${cn}` };
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
