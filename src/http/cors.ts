import type { MiddlewareHandler } from "hono";
import type { EdgeEnv } from "./edge-env.js";

export interface CorsOptions {
  /** Allowed origins, exactly as browsers send them (`http://localhost:3000`); "*" allows any. */
  origins: readonly string[];
  /** The admin API answers them too (the CLI allows it only with an admin token). */
  admin: boolean;
}

/** Headers a browser script may read from an answer: the journal id, the rule, a resend, an auth challenge. */
const EXPOSED = ["X-Sandbox-Call-Id", "X-Sandbox-Rule", "X-Sandbox-Duplicate", "WWW-Authenticate", "Retry-After"].join(
  ", ",
);
/** Always allowed on a request, besides what the preflight asks for (scenario headers such as X-Sandbox-Scenario). */
const ALLOWED_HEADERS = ["Content-Type", "Authorization"];
/** How long a browser may cache a preflight's answer, in seconds. */
const MAX_AGE = "600";

const isAdmin = (path: string) => path === "/__admin" || path.startsWith("/__admin/");

/**
 * CORS for browser clients: a preflight (OPTIONS with Origin and
 * Access-Control-Request-Method) from an allowed origin is answered 204;
 * answers to an allowed origin carry Access-Control-Allow-Origin and the
 * exposed headers. Another origin gets no CORS headers, and an OPTIONS that is
 * not a preflight goes on to the routes (405 on a message path). The admin API
 * takes part only with `admin`.
 *
 * Hand-written rather than hono/cors, which answers every OPTIONS with 204 and
 * sends Access-Control-Expose-Headers to any origin.
 *
 * @example
 *   app.use("*", cors({ origins: ["http://localhost:3000"], admin: false }));
 */
export function cors(options: CorsOptions): MiddlewareHandler<EdgeEnv> {
  const policy = corsPolicy(options);
  return async (c, next) => {
    const admin = isAdmin(c.req.path);
    if (!policy.takesPart(c.req.path)) return next();
    const origin = c.req.header("origin");
    const granted = policy.grants(origin);
    if (granted && c.req.method === "OPTIONS" && c.req.header("access-control-request-method") !== undefined) {
      const asked = (c.req.header("access-control-request-headers") ?? "")
        .split(",")
        .map((h) => h.trim())
        .filter((h) => h !== "" && !ALLOWED_HEADERS.some((a) => a.toLowerCase() === h.toLowerCase()));
      return new Response(null, {
        status: 204,
        headers: {
          "access-control-allow-origin": origin,
          "access-control-allow-methods": admin ? "GET, POST, DELETE, OPTIONS" : "GET, POST, OPTIONS",
          "access-control-allow-headers": [...ALLOWED_HEADERS, ...asked].join(", "),
          "access-control-max-age": MAX_AGE,
          vary: "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
        },
      });
    }
    await next();
    try {
      corsAnswer(c.res.headers, granted ? origin : undefined);
    } catch {
      // A scripted fault has no answer whose headers could change.
    }
  };
}

/** Which requests CORS takes part in, and which origins it grants (the middleware's and the Node message path's). */
export interface CorsPolicy {
  /** The path (routed) is answered with CORS headers: every path but the admin API's without --cors-admin. */
  takesPart(path: string): boolean;
  /** The Origin header names an allowed origin. */
  grants(origin: string | undefined): origin is string;
}

export function corsPolicy(options: CorsOptions): CorsPolicy {
  const any = options.origins.includes("*");
  const allowed = new Set(options.origins);
  return {
    takesPart: (path) => options.admin || !isAdmin(path),
    grants: (origin): origin is string => origin !== undefined && (any || allowed.has(origin)),
  };
}

/** The CORS headers of an answer (not a preflight's): Vary for every origin, the grant for an allowed one. */
export function corsAnswer(headers: Headers, grantedOrigin: string | undefined): void {
  // The answer depends on the Origin header, for every origin: caches must keep them apart.
  headers.append("vary", "Origin");
  if (grantedOrigin !== undefined) {
    headers.set("access-control-allow-origin", grantedOrigin);
    headers.set("access-control-expose-headers", EXPOSED);
  }
}
