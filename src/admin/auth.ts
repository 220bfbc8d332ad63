import { timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import { issue, operationOutcome } from "../fhir/outcome.js";
import { FHIR_JSON } from "../http/fhir-response.js";

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Bearer-token check for the admin API; `/health` stays open for container health checks. */
export function adminAuth(token: string | undefined): MiddlewareHandler {
  return async (c, next) => {
    // Exact path: a suffix test would let any unknown path ending in /__admin/health past the token.
    if (token === undefined || c.req.path === "/__admin/health") return next();
    const header = c.req.header("authorization") ?? "";
    const given = /^Bearer\s+(.+)$/i.exec(header)?.[1]?.trim();
    if (given !== undefined && same(given, token)) return next();
    const body = operationOutcome([
      issue(
        "login",
        given === undefined
          ? "The admin API needs a bearer token: send Authorization: Bearer <the --admin-token value>."
          : "The bearer token is wrong: send the value the sandbox was started with (--admin-token / ADMIN_TOKEN).",
      ),
    ]);
    return new Response(JSON.stringify(body), {
      status: 401,
      headers: { "content-type": FHIR_JSON, "www-authenticate": 'Bearer realm="uae-fhir-sandbox"' },
    });
  };
}
