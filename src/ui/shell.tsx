import type { Child, FC } from "hono/jsx";
import { UI_PAGES, type UiPage } from "./pages.js";

export interface ShellProps {
  page: UiPage;
  /** The route parameter (a call id, an order id, a patient key), if the page has one. */
  param: string | undefined;
  /** Relative URL of /__admin/ui/ from this page ("./" or "../"): links and API calls work under any prefix. */
  root: string;
  /** The admin API needs a token: the client asks for it before it fetches anything. */
  tokenRequired: boolean;
  version: string;
  /** The workspace shown, when not the default one (a shared sandbox: the page says whose data it is). */
  workspace?: string | undefined;
}

/** The head of every page the sandbox serves; the empty icon spares a /favicon.ico request, which would be journaled. */
export const Head: FC<{ title: string; css: string; children?: Child }> = ({ title, css, children }) => (
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <link rel="icon" href="data:," />
    <title>{title}</title>
    <link rel="stylesheet" href={css} />
    {children}
  </head>
);

/**
 * A dashboard page as the server sends it: the frame (navigation, heading)
 * and an empty region the client script fills with data it fetches with the
 * token. Nothing here comes from the sandbox's state, so it needs no token.
 */
export const Shell: FC<ShellProps> = ({ page, param, root, tokenRequired, version, workspace }) => {
  const title = page.title.replace("{param}", param ?? "");
  return (
    <html lang="en">
      <Head title={`${title} · uae-fhir-sandbox`} css={`${root}assets/dashboard.css`}>
        <script type="module" src={`${root}assets/dashboard.js`} />
      </Head>
      <body data-page={page.id} data-param={param} data-root={root} data-token={tokenRequired ? "required" : "none"}>
        <a class="skip-link" href="#main">
          Skip to content
        </a>
        <header class="top">
          <p class="brand">
            <a href={root}>uae-fhir-sandbox</a> <span class="version">{version}</span>
            {workspace === undefined ? null : <span class="version"> · workspace {workspace}</span>}
          </p>
          <nav aria-label="Dashboard">
            <ul>
              {UI_PAGES.filter((p) => p.nav).map((p) => (
                <li>
                  <a href={`${root}${p.route}`} aria-current={p.id === page.section ? "page" : undefined}>
                    {p.nav}
                  </a>
                </li>
              ))}
              <li>
                <a href={`${root}docs/`}>Docs</a>
              </li>
            </ul>
          </nav>
          <div id="session" class="session" />
        </header>
        <main id="main" tabindex={-1}>
          <h1>{title}</h1>
          <div id="page" aria-live="off">
            <p>Loading…</p>
            <noscript>
              <p>The dashboard needs JavaScript. The same data is in the admin API: see the README.</p>
            </noscript>
          </div>
        </main>
      </body>
    </html>
  );
};

/** An address under /__admin/ui/ that is no page. */
export const NotFound: FC<{ root: string }> = ({ root }) => (
  <html lang="en">
    <Head title="Not found · uae-fhir-sandbox" css={`${root}assets/dashboard.css`} />
    <body>
      <main id="main">
        <h1>No such dashboard page</h1>
        <p>
          <a href={root}>Go to the dashboard</a>.
        </p>
      </main>
    </body>
  </html>
);
