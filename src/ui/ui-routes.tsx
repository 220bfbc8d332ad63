import type { Context } from "hono";
import { Hono } from "hono";
import { asset } from "./assets.js";
import { Landing, type LandingProps } from "./landing.js";
import { UI_PAGES, type UiPage } from "./pages.js";
import { NotFound, Shell } from "./shell.js";

export interface UiOptions {
  /** Whether the admin API asks for a token where this request acts (its workspace). */
  tokenRequired(c: Context): boolean;
  /** The workspace the request acts in, when not the default one. */
  workspace(c: Context): string | undefined;
  version: string;
}

/**
 * Only what the package serves: its own scripts and styles, data from the same origin, no inline script and no
 * framing. The dashboard works without any network beyond the sandbox.
 */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const htmlHeaders = {
  "content-security-policy": CSP,
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
};

/** "./" from a page one segment under /__admin/ui/, "../" from two: every link is relative to where it is served. */
const rootFrom = (route: string) => (route.includes("/") ? "../" : "./");

/**
 * The dashboard under /__admin/ui/ (mounted at /ui of the admin API). The
 * pages and assets carry no data, so they are served without the admin token;
 * the client fetches the data with it.
 */
export function uiRoutes(options: UiOptions): Hono {
  const ui = new Hono();
  // /__admin/ui → /__admin/ui/: relative links resolve against the folder. A relative Location keeps any prefix.
  ui.get("/", (c) => (new URL(c.req.url).pathname.endsWith("/") ? page(c, pageFor("")) : c.redirect("ui/", 308)));

  const serve = (c: Context, name: string) => {
    const found = asset(name);
    if (!found) return c.text("No such dashboard asset (the dashboard is built by npm run build).", 404);
    if (c.req.header("if-none-match") === found.etag) return c.body(null, 304, { etag: found.etag });
    return c.body(found.body, 200, {
      "content-type": found.type,
      etag: found.etag,
      "cache-control": "no-cache",
      "x-content-type-options": "nosniff",
      ...(found.type.startsWith("text/html") ? { "content-security-policy": CSP } : {}),
    });
  };
  ui.get("/assets/:name", (c) => serve(c, c.req.param("name")));
  // The README and guides, rendered at build time (scripts/render-docs.mjs).
  ui.get("/docs", (c) => c.redirect("docs/", 308));
  ui.get("/docs/images/:file", (c) => serve(c, `docs/images/${c.req.param("file")}`));
  ui.get("/docs/:name{.*}", (c) => serve(c, `docs/${c.req.param("name") || "index"}.html`));

  for (const p of UI_PAGES) if (p.route !== "") ui.get(`/${p.route}`, (c) => page(c, p));
  // /__admin/ui/ itself (the calls), and nothing else: an unknown page is a 404 that leads back.
  ui.get("/:rest{.*}", (c) =>
    c.req.param("rest") === ""
      ? page(c, pageFor(""))
      : c.html(<NotFound root={`${"../".repeat(c.req.param("rest").split("/").length - 1)}./`} />, 404, htmlHeaders),
  );

  const page = (c: Context, p: UiPage) =>
    c.html(
      <Shell
        page={p}
        param={c.req.param("param")}
        root={rootFrom(p.route)}
        tokenRequired={options.tokenRequired(c)}
        workspace={options.workspace(c)}
        version={options.version}
      />,
      200,
      htmlHeaders,
    );
  return ui;
}

function pageFor(route: string): UiPage {
  const p = UI_PAGES.find((candidate) => candidate.route === route);
  if (!p) throw new Error(`no dashboard page at ${route}`);
  return p;
}

/** GET / (and the --base-path root): a landing page. */
export function landingPage(c: Context, props: LandingProps): Response | Promise<Response> {
  return c.html(<Landing {...props} />, 200, htmlHeaders);
}
