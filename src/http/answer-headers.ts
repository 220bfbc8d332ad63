import type { MiddlewareHandler } from "hono";
import type { EdgeEnv } from "./edge-env.js";

/**
 * Headers on every answer but the dashboard's pages (CONTRACT §15): a browser never sniffs an answer into HTML, and
 * were one ever shown as a document, it may run, load and frame nothing. A scenario rule cannot replace them.
 */
export const ANSWER_HEADERS: Readonly<Record<string, string>> = {
  "x-content-type-options": "nosniff",
  "content-security-policy": "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
};

/** The dashboard (its pages carry their own CSP, which lets them load their scripts) and the landing page. */
const isDashboard = (path: string) => path === "/" || path === "/__admin/ui" || path.startsWith("/__admin/ui/");

/**
 * Puts ANSWER_HEADERS on every answer, once, at the edge: the outermost middleware, so that refusals made before
 * any route (workspace choice, CORS preflights, the host check), 404s, errors and answers built outside Hono's
 * helpers get them too. The dashboard's answers keep a CSP of their own and get the default only where they have
 * none (redirects, assets). fhirResponse writes them into the answers it builds (the hot path): those are left
 * alone, without building a `Headers`.
 *
 * @example
 *   app.use("*", answerHeaders()); // first
 */
export function answerHeaders(): MiddlewareHandler<EdgeEnv> {
  return async (c, next) => {
    await next();
    if (c.get("call")?.answered?.response === c.res) return;
    const dashboard = isDashboard(c.req.path);
    const put = (headers: Headers) => putAnswerHeaders(headers, dashboard);
    try {
      put(c.res.headers);
    } catch {
      // Headers that cannot change (an answer as fetch returned it): the same answer, with headers that can.
      const res = new Response(c.res.body, c.res);
      put(res.headers);
      c.res = undefined;
      c.res = res;
    }
  };
}

/** ANSWER_HEADERS put on an answer's headers; the dashboard's keep their own where they have them. */
export function putAnswerHeaders(headers: Headers, dashboard = false): void {
  for (const [name, value] of Object.entries(ANSWER_HEADERS)) {
    if (!dashboard || !headers.has(name)) headers.set(name, value);
  }
}
