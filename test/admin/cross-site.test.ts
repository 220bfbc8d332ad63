import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { quietLogger } from "../orders/pharmacy-client.js";

// Issue 21 defect 8, CONTRACT §15: with no --admin-token (the default local set-up) a page of another site added a
// rule and created an order with fetch(…, { mode: "no-cors" }) and Content-Type text/plain. The admin API's writes
// are for real clients and the sandbox's own dashboard only.

const RULE_YAML = `rules:
  - name: planted
    when: { operation: add-allergy }
    respond: { status: 503, outcome: { diagnostics: "planted by another site" } }
`;

/** The shipped scenarios: their subscribed pharmacies make an order possible. */
const start = (options: Parameters<typeof createApp>[0] = {}) =>
  createApp({ scenarios: "./scenarios", watch: false, ...options }, { logger: quietLogger });

/** What a write could have changed: the runtime rules and the orders of the default workspace. */
async function state(app: ReturnType<typeof start>["app"]) {
  const scenarios = (await (await app.request("/__admin/scenarios")).json()) as { rules: Array<{ name: string }> };
  const orders = (await (await app.request("/__admin/orders")).json()) as { orders: unknown[] };
  return { rules: scenarios.rules.map((r) => r.name), orders: orders.orders.length };
}

const issueText = async (res: Response) =>
  ((await res.json()) as { issue: Array<{ diagnostics: string }> }).issue.map((i) => i.diagnostics).join(" ");

describe("admin writes need a JSON (or YAML) body (CONTRACT §15)", () => {
  // What a no-cors fetch or a form can send: the CORS-safelisted types (Fetch standard), and none at all.
  const refused = ["text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"];

  it.each(refused)("POST /__admin/scenarios with %s: 415, no rule added", async (type) => {
    const { app } = start();
    const before = await state(app);
    const res = await app.request("/__admin/scenarios", {
      method: "POST",
      headers: { "content-type": type },
      body: RULE_YAML,
    });
    expect(res.status).toBe(415);
    const said = await issueText(res);
    expect(said).toContain("application/yaml");
    expect(said).toContain(type.split(";")[0]);
    expect(await state(app)).toEqual(before);
  });

  it.each(refused)("POST /__admin/orders with %s: 415, no order made", async (type) => {
    const { app } = start();
    const res = await app.request("/__admin/orders", { method: "POST", headers: { "content-type": type }, body: "{}" });
    expect(res.status).toBe(415);
    expect(await issueText(res)).toContain("application/json");
    expect((await state(app)).orders).toBe(0);
  });

  it("a body without any Content-Type (a Blob in a no-cors fetch): 415", async () => {
    const { app } = start();
    const res = await app.request("/__admin/orders", { method: "POST", body: new Blob(["{}"]) });
    expect(res.status).toBe(415);
    expect(await issueText(res)).toContain("missing");
    expect((await state(app)).orders).toBe(0);
  });

  it("JSON and YAML as documented are taken; an empty POST needs no type (curl -X POST …/reset)", async () => {
    const { app } = start();
    const yaml = await app.request("/__admin/scenarios", {
      method: "POST",
      headers: { "content-type": "application/yaml" },
      body: RULE_YAML,
    });
    expect(yaml.status).toBe(201);
    const json = await app.request("/__admin/orders", {
      method: "POST",
      headers: { "content-type": "application/json; charset=utf-8" },
      body: "{}",
    });
    expect(json.status).toBe(201);
    const after = await state(app);
    expect(after.rules).toContain("planted");
    expect(after.orders).toBe(1);
    // As curl -X POST sends it: no body, no Content-Type.
    expect((await app.request("/__admin/reset", { method: "POST" })).status).toBe(200);
    expect((await app.request("/__admin/orders", { method: "POST" })).status).toBe(201);
    // As curl -X POST -d '' sends it: a form type, but nothing in it.
    const form = await app.request("/__admin/reset", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", "content-length": "0" },
    });
    expect(form.status).toBe(200);
  });
});

describe("admin writes from another site are refused (CONTRACT §15)", () => {
  const crossSite: Array<{ name: string; headers: Record<string, string> }> = [
    { name: "Origin of another site", headers: { origin: "https://evil.example" } },
    { name: "Origin null (a sandboxed frame, a file)", headers: { origin: "null" } },
    { name: "Sec-Fetch-Site cross-site", headers: { "sec-fetch-site": "cross-site" } },
    {
      name: "Sec-Fetch-Site same-site (another port of localhost)",
      headers: { "sec-fetch-site": "same-site", origin: "http://localhost:3000" },
    },
  ];

  it.each(crossSite)("$name: 403 saying why and what to do, nothing added", async ({ headers }) => {
    const { app } = start();
    const before = await state(app);
    for (const [path, type, body] of [
      ["/__admin/scenarios", "application/yaml", RULE_YAML],
      ["/__admin/orders", "application/json", "{}"],
      ["/__admin/reset", undefined, undefined],
    ] as const) {
      const res = await app.request(`http://localhost${path}`, {
        method: "POST",
        headers: { ...headers, ...(type ? { "content-type": type } : {}) },
        ...(body ? { body } : {}),
      });
      expect(res.status, path).toBe(403);
      const said = await issueText(res);
      expect(said).toMatch(/another site|the page at/);
      expect(said).toContain("curl");
      expect(said).toContain("--cors-admin");
    }
    expect(await state(app)).toEqual(before);
  });

  it("under a workspace prefix too, and no workspace is made", async () => {
    const { app, workspaces } = start();
    const res = await app.request("http://localhost/w/team-x/__admin/orders", {
      method: "POST",
      headers: { origin: "https://evil.example", "content-type": "application/json" },
      body: "{}",
    });
    expect(res.status).toBe(403);
    expect(workspaces.list().map((w) => w.id)).toEqual(["default"]);
  });

  it("the dashboard's own requests (same origin, as src/ui/client/api.ts sends them) are served", async () => {
    const { app } = start();
    const res = await app.request("http://localhost:8080/__admin/orders", {
      method: "POST",
      headers: {
        origin: "http://localhost:8080",
        "sec-fetch-site": "same-origin",
        "sec-fetch-mode": "cors",
        "content-type": "application/json",
        "user-agent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/140.0",
      },
      body: "{}",
    });
    expect(res.status).toBe(201);
    // The dashboard's reload button: a POST without a body.
    const reload = await app.request("http://localhost:8080/__admin/scenarios/reload", {
      method: "POST",
      headers: { origin: "http://localhost:8080", "sec-fetch-site": "same-origin" },
    });
    expect(reload.status).toBe(200);
  });

  it("behind a TLS proxy: an Origin of --public-url, or of the Host with another scheme, is the sandbox's own", async () => {
    const { app } = start({ publicUrl: "https://sandbox.example.ae" });
    for (const [host, origin] of [
      ["sandbox.example.ae", "https://sandbox.example.ae"],
      ["127.0.0.1:8080", "https://sandbox.example.ae"],
    ]) {
      const res = await app.request(`http://${host}/__admin/orders`, {
        method: "POST",
        headers: { host: host as string, origin: origin as string, "content-type": "application/json" },
        body: "{}",
      });
      expect(res.status, `${host} ${origin}`).toBe(201);
    }
  });

  it("curl and test code (no Origin, no Sec-Fetch-*) are served; so is Node's fetch (Sec-Fetch-Mode: cors)", async () => {
    const { app } = start();
    const curl = await app.request("/__admin/orders", {
      method: "POST",
      headers: { "content-type": "application/json", "user-agent": "curl/8.5.0" },
      body: "{}",
    });
    expect(curl.status).toBe(201);
    const node = await app.request("/__admin/orders", {
      method: "POST",
      headers: { "content-type": "application/json", "sec-fetch-mode": "cors", "user-agent": "node" },
      body: "{}",
    });
    expect(node.status).toBe(201);
  });

  it("an origin --cors-admin opens (with the admin token) is served", async () => {
    const { app } = start({ cors: ["http://localhost:3000"], corsAdmin: true, adminToken: "t" });
    const res = await app.request("http://localhost:8080/__admin/orders", {
      method: "POST",
      headers: {
        origin: "http://localhost:3000",
        "sec-fetch-site": "same-site",
        "content-type": "application/json",
        authorization: "Bearer t",
      },
      body: "{}",
    });
    expect(res.status).toBe(201);
    const other = await app.request("http://localhost:8080/__admin/orders", {
      method: "POST",
      headers: { origin: "http://localhost:4000", "content-type": "application/json", authorization: "Bearer t" },
      body: "{}",
    });
    expect(other.status).toBe(403);
  });

  it("reads are not guarded: a link to the dashboard from another site opens it", async () => {
    const { app } = start();
    const res = await app.request("http://localhost/__admin/ui/", {
      headers: { "sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate", "user-agent": "Mozilla/5.0" },
    });
    expect(res.status).toBe(200);
  });
});

describe("the Host header (DNS rebinding; CONTRACT §15)", () => {
  const browser = { origin: "http://evil.example:8080", "user-agent": "Mozilla/5.0 Chrome/140.0" };

  it("--allowed-hosts: another Host is a 421 on every path; the listed ones, --public-url's and loopback are served", async () => {
    const { app } = start({ allowedHosts: ["sandbox"], publicUrl: "https://sandbox.example.ae" });
    for (const path of ["/__admin/health", "/uae-fhir/r4/metadata"]) {
      const res = await app.request(`http://other.example${path}`, { headers: { host: "other.example:8080" } });
      expect(res.status, path).toBe(421);
      const said = await issueText(res);
      expect(said).toContain("other.example");
      expect(said).toContain("--allowed-hosts");
    }
    for (const host of ["sandbox:8080", "SANDBOX", "sandbox.example.ae", "localhost:8080", "127.0.0.1:8080", "[::1]"]) {
      const res = await app.request(`http://x/__admin/health`, { headers: { host } });
      expect(res.status, host).toBe(200);
    }
  });

  it("without it, a browser's request to the admin API by a name that is not loopback, an IP or --public-url's: 421", async () => {
    const { app } = start();
    const before = await state(app);
    // What a page of evil.example sees once its name resolves to 127.0.0.1: same-origin requests.
    const write = await app.request("http://evil.example:8080/__admin/orders", {
      method: "POST",
      headers: {
        host: "evil.example:8080",
        ...browser,
        "sec-fetch-site": "same-origin",
        "content-type": "application/json",
      },
      body: "{}",
    });
    expect(write.status).toBe(421);
    expect(await issueText(write)).toContain("--allowed-hosts evil.example");
    // A same-origin GET carries no Origin, but a browser's User-Agent.
    const read = await app.request("http://evil.example:8080/__admin/calls", {
      headers: { host: "evil.example:8080", "user-agent": browser["user-agent"] },
    });
    expect(read.status).toBe(421);
    const page = await app.request("http://evil.example:8080/__admin/ui/", {
      headers: { host: "evil.example:8080", "sec-fetch-site": "none", "user-agent": browser["user-agent"] },
    });
    expect(page.status).toBe(421);
    expect(await state(app)).toEqual(before);
  });

  it("without it, real clients are served under any name (docker-compose's http://sandbox:8080)", async () => {
    const { app } = start();
    const clients: Array<Record<string, string>> = [
      { "user-agent": "curl/8.5.0" },
      { "user-agent": "node", "sec-fetch-mode": "cors" },
      {},
    ];
    for (const headers of clients) {
      const res = await app.request("http://sandbox:8080/__admin/orders", {
        method: "POST",
        headers: { host: "sandbox:8080", "content-type": "application/json", ...headers },
        body: "{}",
      });
      expect(res.status, JSON.stringify(headers)).toBe(201);
    }
  });

  it("without it, browsers are served by localhost, an IP address and --public-url's host", async () => {
    const { app } = start({ publicUrl: "http://sandbox.lan:8080" });
    for (const host of ["localhost:8080", "127.0.0.1:8080", "192.168.1.20:8080", "[::1]:8080", "sandbox.lan:8080"]) {
      const res = await app.request(`http://${host}/__admin/calls`, { headers: { host, ...browser } });
      expect(res.status, host).toBe(200);
    }
  });
});
