import { isIP } from "node:net";
import type { MiddlewareHandler } from "hono";
import { issue } from "../fhir/outcome.js";
import type { EdgeEnv } from "./edge-env.js";
import { outcomeOnly } from "./fhir-response.js";
import { requestHeader } from "./request-headers.js";

// Who may drive the admin API (CONTRACT §15, docs/security.md "Browsers"): real clients (curl, test code, CI
// scripts) and the sandbox's own dashboard. A page of another site must not, even when the admin API has no token
// (the default local set-up): a `fetch(…, { mode: "no-cors" })` cannot read the answer, but it can still POST.

const isAdmin = (path: string) => path === "/__admin" || path.startsWith("/__admin/");

/** The host of a Host header or URL authority, lower-cased, without its port (IPv6 keeps its brackets). */
export function hostName(authority: string): string {
  const lower = authority.trim().toLowerCase();
  if (lower.startsWith("[")) return lower.slice(0, lower.indexOf("]") + 1);
  const colon = lower.lastIndexOf(":");
  return (colon === -1 ? lower : lower.slice(0, colon)).replace(/\.$/, "");
}

/** Loopback names (RFC 6761) and addresses: this machine, whatever DNS says. */
function loopback(host: string): boolean {
  if (host === "localhost" || host.endsWith(".localhost") || host === "[::1]") return true;
  return isIP(host) === 4 && host.startsWith("127.");
}

/** Names no DNS answer can point elsewhere: loopback names and IP literals. */
function rebindProof(host: string): boolean {
  return loopback(host) || isIP(host.startsWith("[") ? host.slice(1, -1) : host) !== 0;
}

/**
 * Whether a request comes from a browser: browsers send Origin (every POST, every cross-origin request),
 * Sec-Fetch-Site (to https and localhost), and a User-Agent that starts with "Mozilla/" that a page's script cannot
 * change in most of them. Sec-Fetch-Mode alone is no sign: Node's fetch sends it (`cors`) on every request.
 */
function fromBrowser(header: (name: string) => string | undefined): boolean {
  return (
    header("origin") !== undefined ||
    header("sec-fetch-site") !== undefined ||
    (header("user-agent") ?? "").startsWith("Mozilla/")
  );
}

export interface HostGuardOptions {
  /** --allowed-hosts: the Host names served (exact, case-insensitive); undefined when not given. */
  allowedHosts: readonly string[] | undefined;
  /** --public-url: its host is always served. */
  publicUrl: string | undefined;
}

/**
 * The Host header check, against DNS rebinding (a name of the attacker's that resolves to 127.0.0.1 makes his page
 * same-origin with the sandbox). With --allowed-hosts, a request for another host is refused 421 (RFC 9110
 * §15.5.20), whoever sends it; loopback names and addresses stay served (the container's health check, curl on the
 * machine itself), as no DNS answer can make them another site's. Without it, names are not known in advance (docker-compose service names, a LAN
 * name): only a browser's request to the admin API or the dashboard is refused, when its Host is neither a
 * loopback name, an IP literal nor --public-url's host. Real clients (curl, CI scripts) are not browsers and are
 * served under any name.
 */
export function hostGuard(options: HostGuardOptions): MiddlewareHandler<EdgeEnv> {
  const check = hostCheck(options);
  return async (c, next) => {
    const problem = check(
      c.req.path,
      (name) => requestHeader(c, name),
      () => c.req.url,
    );
    return problem === undefined ? next() : misdirected(problem);
  };
}

export type HostCheck = (
  path: string,
  header: (name: string) => string | undefined,
  url: () => string,
) => string | undefined;

/**
 * hostGuard's decision without a framework (the Node message path asks it too): undefined when the request is
 * served, else why it is refused (421). `path`: the routed path; `url`: the request URL, read only when it has no
 * Host header.
 */
export function hostCheck(options: HostGuardOptions): HostCheck {
  const publicHost = options.publicUrl ? hostName(new URL(options.publicUrl).host) : undefined;
  const allowed = options.allowedHosts ? new Set(options.allowedHosts.map(hostName)) : undefined;
  if (allowed && publicHost) allowed.add(publicHost);
  return (path, header, url) => {
    // Message paths without --allowed-hosts: nothing to read (the hot path builds no web Headers).
    if (!allowed && !isAdmin(path)) return undefined;
    const host = hostName(header("host") ?? new URL(url()).host);
    if (allowed) {
      if (allowed.has(host) || loopback(host)) return undefined;
      return `This sandbox serves only the hosts ${[...allowed].join(", ")} (--allowed-hosts${publicHost ? ", --public-url" : ""}); the request's Host is ${host}. Use one of those names, or add this one to --allowed-hosts (ALLOWED_HOSTS).`;
    }
    if (host === publicHost || rebindProof(host) || !fromBrowser(header)) return undefined;
    return `A browser asked for the admin API or the dashboard by the name ${host}, which is neither a loopback name, an IP address nor --public-url's host: a page of another site can make its own name point at this machine (DNS rebinding), so browsers are served only under names the sandbox is told of. Start the sandbox with --allowed-hosts ${host} (ALLOWED_HOSTS) or --public-url, or open it as http://localhost or by its IP address. Clients that are not browsers (curl, test code) are served under any name.`;
  };
}

const misdirected = (diagnostics: string) => outcomeOnly(421, [issue("forbidden", diagnostics)]);

/** Methods that change something: the ones a page must not send from another site. */
const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** JSON, and YAML where the admin API takes YAML: types a page of another site cannot send without CORS. */
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json$/;
const YAML_TYPE = /^(?:application|text)\/(?:x-)?yaml$/;

/** Admin endpoints that take a YAML document (docs/scenarios.md "Adding rules at run time"). */
const takesYaml = (path: string) => path === "/__admin/scenarios";

export interface AdminWriteGuardOptions {
  /** The origins --cors-admin opens the admin API to (the --cors list, "*" for any); empty without --cors-admin. */
  corsAdmin: readonly string[];
  publicUrl: string | undefined;
}

/**
 * The admin API's writes (POST, PUT, PATCH, DELETE) from real clients and the sandbox's own pages only: refused
 * 403 when the browser says the request comes from another site (Sec-Fetch-Site cross-site or same-site) or its
 * Origin is not the sandbox's own, unless --cors-admin allows that origin; refused 415 when a body comes with a
 * content type other than JSON (or YAML where the endpoint takes YAML), the types a cross-site form or no-cors
 * fetch cannot send. A write without a body (`curl -X POST …/reset`) needs no content type. Reads are not
 * guarded: another site cannot read an answer without CORS.
 */
export function adminWriteGuard(options: AdminWriteGuardOptions): MiddlewareHandler<EdgeEnv> {
  const anyOrigin = options.corsAdmin.includes("*");
  const corsOrigins = new Set(options.corsAdmin);
  const publicOrigin = options.publicUrl ? new URL(options.publicUrl).origin : undefined;
  return async (c, next) => {
    if (!WRITES.has(c.req.method) || !isAdmin(c.req.path)) return next();
    const header = (name: string) => requestHeader(c, name);
    const origin = header("origin");
    const site = header("sec-fetch-site");
    const what = `${c.req.method} ${c.req.path}`;
    const granted = origin !== undefined && (anyOrigin || corsOrigins.has(origin));
    if (!granted) {
      const own = origin === undefined || origin === publicOrigin || sameHost(origin, header("host"), c.req.url);
      if (site === "cross-site" || site === "same-site" || !own) {
        const from = !own ? `the page at ${origin}` : `a page of another site (Sec-Fetch-Site: ${site})`;
        return outcomeOnly(403, [
          issue(
            "forbidden",
            `${what} changes the sandbox, and was sent by ${from}: the admin API takes writes only from the sandbox's own dashboard and from clients that are not browsers (curl, test code). Send it with curl or your test code, use the dashboard, or start the sandbox with --cors-admin and that origin in --cors (with --admin-token).`,
          ),
        ]);
      }
    }
    if (hasBody(header, c.env?.incoming !== undefined ? undefined : c.req.raw)) {
      const type = (header("content-type") ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
      const yaml = takesYaml(c.req.path);
      if (!JSON_TYPE.test(type) && !(yaml && YAML_TYPE.test(type))) {
        const wanted = yaml ? "application/yaml (or application/json)" : "application/json";
        return outcomeOnly(415, [
          issue(
            "not-supported",
            `${what} takes a body of Content-Type ${wanted}; the request's is ${type === "" ? "missing" : type}. Send it with -H 'Content-Type: ${yaml ? "application/yaml" : "application/json"}'.`,
          ),
        ]);
      }
    }
    return next();
  };
}

/** Whether an Origin names the host the request was sent to (any scheme: a TLS proxy in front changes it). */
function sameHost(origin: string, host: string | undefined, url: string): boolean {
  if (!URL.canParse(origin)) return false;
  return new URL(origin).host.toLowerCase() === (host ?? new URL(url).host).toLowerCase();
}

/**
 * Whether a request has a body. Over a socket, HTTP/1.1 framing says (RFC 9112 §6.3: no Content-Length and no
 * Transfer-Encoding is no body); in-process (app.request, `inProcess` given) the Request's own body does.
 */
function hasBody(header: (name: string) => string | undefined, inProcess: Request | undefined): boolean {
  if (header("transfer-encoding") !== undefined) return true;
  const length = header("content-length");
  if (length !== undefined) return Number(length) > 0;
  return inProcess !== undefined && inProcess.body !== null;
}
