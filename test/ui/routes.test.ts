import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { type Child, http, killStray, startCli } from "../cli/cli-process.js";

// The dashboard's pages and assets as the server sends them: no data and no token needed, only relative
// addresses (so they work under any prefix: --base-path, a proxy, workspaces), and nothing from elsewhere.

const QUIET = { info: () => undefined, error: () => undefined };

/** Every href and src of a page, but the empty icon (data:, so that browsers ask for no /favicon.ico). */
const addresses = (html: string) =>
  [...html.matchAll(/\b(?:href|src)="([^"]*)"/g)].map((m) => m[1] as string).filter((a) => a !== "data:,");

const PAGES = [
  "",
  "calls/7",
  "orders",
  "orders/3",
  "pharmacies",
  "patients",
  "patients/urn%3Aae%3Aemirates-id%7C784-1990-1234567-6",
  "scenarios",
  "conformance",
  "conformance/3f2a9c1e",
  "health",
];

describe("the pages under /__admin/ui/", () => {
  it("are served without the admin token, and hold no data", async () => {
    const { app, journal } = createApp({ adminToken: "s3cret" }, { logger: QUIET });
    for (const page of PAGES) {
      const res = await app.request(`/__admin/ui/${page}`);
      expect(res.status, page).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^text\/html/);
      const html = await res.text();
      expect(html).toContain('data-token="required"');
      expect(html, "no table of data").not.toContain("<table");
    }
    expect((await app.request("/__admin/calls")).status).toBe(401);
    expect(journal.size, "pages are not calls to the exchange").toBe(0);
  });

  it("use relative addresses only, which resolve under any prefix", async () => {
    const { app } = createApp({}, { logger: QUIET });
    for (const page of PAGES) {
      const html = await (await app.request(`/__admin/ui/${page}`)).text();
      for (const address of addresses(html)) {
        expect(address, `${page}: ${address}`).not.toMatch(/^(\/|[a-z]+:)/);
        // Where the dashboard is mounted behind a prefix, the address stays under it.
        const base = `http://sandbox.example/w/team-a/__admin/ui/${page}`;
        expect(new URL(address, base).pathname, address).toMatch(/^\/w\/team-a\/__admin\/ui\//);
      }
    }
  });

  it("load their script and styles from the package only, and allow nothing else", async () => {
    const { app } = createApp({}, { logger: QUIET });
    const res = await app.request("/__admin/ui/calls/1");
    const html = await res.text();
    expect(addresses(html).filter((a) => /\.(js|css)$/.test(a))).toEqual([
      "../assets/dashboard.css",
      "../assets/dashboard.js",
    ]);
    const csp = res.headers.get("content-security-policy") ?? "";
    for (const directive of ["default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"])
      expect(csp).toContain(directive);
  });

  it("/__admin/ui leads to /__admin/ui/ (relatively); an unknown page is a 404 that leads back", async () => {
    const { app } = createApp({}, { logger: QUIET });
    const bare = await app.request("/__admin/ui");
    expect(bare.status).toBe(308);
    expect(bare.headers.get("location")).toBe("ui/");
    const unknown = await app.request("/__admin/ui/nothing/here");
    expect(unknown.status).toBe(404);
    const html = await unknown.text();
    expect(html).toContain("No such dashboard page");
    expect(
      new URL(addresses(html).find((a) => !a.endsWith(".css")) ?? "", "http://x/__admin/ui/nothing/here").pathname,
    ).toBe("/__admin/ui/");
  });
});

describe("GET /: the landing page", () => {
  it("links the dashboard, the docs, metadata (under --base-path) and health, and is not journaled", async () => {
    const { app, journal } = createApp({ basePath: "/sandbox" }, { logger: QUIET });
    const res = await app.request("/");
    expect(res.status).toBe(200);
    const html = await res.text();
    const links = addresses(html).filter((a) => !a.endsWith(".css"));
    expect(links).toEqual(["__admin/ui/", "__admin/ui/docs/", "sandbox/uae-fhir/r4/metadata", "__admin/health"]);
    for (const link of ["sandbox/uae-fhir/r4/metadata", "__admin/health", "__admin/ui/"]) {
      const target = await app.request(new URL(link, "http://localhost/").pathname);
      expect(target.status, link).toBe(200);
    }
    expect(journal.list().map((c) => c.request.path)).toEqual(["/sandbox/uae-fhir/r4/metadata"]);
  });
});

describe("the built assets and docs, served by the CLI", () => {
  let sandbox: { child: Child; url: string };
  beforeAll(async () => {
    sandbox = await startCli(["--admin-token", "s3cret"]);
  });
  afterAll(killStray);

  it("serves the script and the stylesheet without the token, revalidated by ETag", async () => {
    for (const [name, type] of [
      ["dashboard.js", "text/javascript; charset=utf-8"],
      ["dashboard.css", "text/css; charset=utf-8"],
    ]) {
      const res = await http(`${sandbox.url}/__admin/ui/assets/${name}`);
      expect(res.status, name).toBe(200);
      expect(res.headers.get("content-type")).toBe(type);
      const etag = res.headers.get("etag") as string;
      const again = await http(`${sandbox.url}/__admin/ui/assets/${name}`, { headers: { "if-none-match": etag } });
      expect(again.status).toBe(304);
    }
    // Nothing but those names: no path out of the assets folder.
    for (const name of ["..%2Fui-routes.js", "app.js", "%2E%2E%2F%2E%2E%2Fpackage.json"])
      expect((await http(`${sandbox.url}/__admin/ui/assets/${name}`)).status, name).toBe(404);
  });

  it("serves the README and the guides as pages, linked to each other", async () => {
    const index = await http(`${sandbox.url}/__admin/ui/docs/`);
    expect(index.status).toBe(200);
    expect(index.text).toContain('<h1 id="uae-fhir-sandbox">uae-fhir-sandbox</h1>');
    const guide = await http(`${sandbox.url}/__admin/ui/docs/pharmacy-guide`);
    expect(guide.status).toBe(200);
    expect(guide.text).toContain('id="state-diagrams"');
    // A link of the README to a section of the guide leads to that page and anchor.
    expect(index.text).toContain('href="pharmacy-guide#2-trigger-an-order"');
    expect(guide.text).toContain('id="2-trigger-an-order"');
    expect((await http(`${sandbox.url}/__admin/ui/docs/no-such-guide`)).status).toBe(404);
  });
});
