import type { Resource } from "fhir/r4.js";
import type { Context, Hono } from "hono";
import { isEnteredInError } from "../fhir/entered-in-error.js";
import { FHIR_ID } from "../fhir/ids.js";
import { issue } from "../fhir/outcome.js";
import { currentResource, resourceVersion } from "../fhir/resource-lookup.js";
import { FHIR_BASES } from "../routing/default-operations.js";
import type { EdgeEnv } from "./edge-env.js";
import { fhirResponse, outcomeResponse } from "./fhir-response.js";

/** A token may read when it holds a scope of this ending (the catalogue's own `patient-profile.read`, by default). */
export const READ_SCOPE_SUFFIX = ".read";

const TYPE = /^[A-Z][A-Za-z]{1,63}$/;

/** Whether a routed path is a read, `{base}/{type}/{id}` or its `_history/{vid}` (the token is read there too). */
export function isReadPath(basePath: string, path: string): boolean {
  for (const base of FHIR_BASES) {
    const root = `${basePath}${base}/`;
    if (!path.startsWith(root)) continue;
    const parts = path.slice(root.length).split("/");
    const [type, id, history, vid] = parts;
    const named = type !== undefined && TYPE.test(type) && id !== undefined && FHIR_ID.test(id);
    if (named && parts.length === 2) return true;
    if (named && parts.length === 4 && history === "_history" && vid !== undefined && FHIR_ID.test(vid)) return true;
  }
  return false;
}

/**
 * `GET [base]/{type}/{id}` and `GET [base]/{type}/{id}/_history/{vid}` (R4 http.html read and vread): what the
 * caller's workspace holds or answered with, so that every RESTful fullUrl of an answer or push can be followed.
 * Read-only; other methods fall through to the 404 they always had. Under --auth oauth2 a token with a read scope.
 */
export function mountReadRoutes(app: Hono<EdgeEnv>, options: { basePath: string; oauth2: boolean }): void {
  for (const base of FHIR_BASES) {
    const root = `${options.basePath}${base}`;
    app.get(`${root}/:type/:id`, (c, next) => read(c, next, options.oauth2));
    app.get(`${root}/:type/:id/_history/:vid`, (c, next) => read(c, next, options.oauth2));
  }
}

async function read(c: Context<EdgeEnv>, next: () => Promise<void>, oauth2: boolean): Promise<Response | undefined> {
  const type = c.req.param("type") ?? "";
  const id = c.req.param("id") ?? "";
  const vid = c.req.param("vid");
  // Not a read's shape (a message path's GET, say): what was answered before answers still.
  if (!TYPE.test(type) || !FHIR_ID.test(id) || (vid !== undefined && !FHIR_ID.test(vid))) {
    await next();
    return undefined;
  }
  if (oauth2) {
    const refused = readRefusal(c);
    if (refused) return refused;
  }
  const sources = c.get("workspace");
  const found = vid === undefined ? currentResource(sources, type, id) : resourceVersion(sources, type, id, vid);
  const named = vid === undefined ? `${type}/${id}` : `${type}/${id}/_history/${vid}`;
  if (!found) {
    return outcomeResponse(c, 404, [
      issue(
        "not-found",
        `This workspace holds no ${named}: it reads what it holds (patients, records, tasks, orders, subscriptions) and what its journal's answers and pushes carried.`,
      ),
    ]);
  }
  // A removed record is gone for a read; the version a vread names is still that version.
  if (vid === undefined && isEnteredInError(found)) {
    return outcomeResponse(c, 410, [
      issue(
        "deleted",
        `${type}/${id} was removed (entered-in-error, version ${found.meta?.versionId ?? "1"}); GET ${type}/${id}/_history/{versionId} reads a version.`,
      ),
    ]);
  }
  return fhirResponse(c, 200, found, versionHeaders(found));
}

/** ETag and Last-Modified from meta (R4 http.html: W/"{versionId}"). */
function versionHeaders(resource: Resource): Record<string, string> {
  const headers: Record<string, string> = {};
  const version = resource.meta?.versionId;
  if (version !== undefined) headers.etag = `W/"${version}"`;
  const updated = resource.meta?.lastUpdated ? new Date(resource.meta.lastUpdated) : undefined;
  if (updated && !Number.isNaN(updated.getTime())) headers["last-modified"] = updated.toUTCString();
  return headers;
}

/** Under --auth oauth2: a 401 without a valid token, a 403 without a read scope. */
function readRefusal(c: Context<EdgeEnv>): Response | undefined {
  const access = c.get("access");
  if (!access) return outcomeResponse(c, 401, [issue("login", "Send Authorization: Bearer <access token>.")]);
  if (!access.ok) return outcomeResponse(c, access.refusal.status, access.refusal.issues, access.refusal.headers);
  const { scopes, clientId } = access.principal;
  if (scopes.some((s) => s.endsWith(READ_SCOPE_SUFFIX))) return undefined;
  const description = `A read needs a scope ending in ${READ_SCOPE_SUFFIX} (patient-profile.read, say); this token (client ${clientId}) has: ${scopes.join(" ") || "none"}.`;
  return outcomeResponse(c, 403, [issue("forbidden", description)], {
    "www-authenticate": `Bearer realm="uae-fhir-sandbox", error="insufficient_scope", scope="patient-profile.read"`,
  });
}
