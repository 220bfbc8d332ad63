import type { AllergyIntolerance } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type SandboxApp } from "../../src/app.js";
import { runCli } from "../../src/cli/main.js";
import type { SandboxOptions } from "../../src/config/options.js";
import { ALTERNATE, envelope, example, messageBundle, STANDARD } from "../support/messages.js";

// Issue: "--cors <origins> (a list, or *; off by default) answers preflight requests on the message paths and adds
// the headers to answers; the admin API never gets CORS headers unless --cors-admin is also given, and then only
// with --admin-token." Preflight and headers as the Fetch standard's CORS protocol defines them.

const EHR = "http://localhost:3000";
const OTHER = "https://evil.example";
const TOKEN = "admin-secret";
const quiet = { logger: { info: () => undefined, error: () => undefined } };

/** Paths a browser client calls: the two message paths and the capability reads. */
const FHIR_PATHS: ReadonlyArray<[path: string, method: "POST" | "GET"]> = [
  [STANDARD, "POST"],
  [ALTERNATE, "POST"],
  ["/uae-fhir/r4/metadata", "GET"],
  ["/fhir/metadata", "GET"],
  ["/uae-fhir/r4/MessageDefinition", "GET"],
  ["/uae-fhir/r4/StructureDefinition", "GET"],
];

/** The headers a browser script must be able to read (the list). */
const EXPOSED = ["X-Sandbox-Call-Id", "X-Sandbox-Rule", "X-Sandbox-Duplicate", "WWW-Authenticate"];

const apps: SandboxApp[] = [];
afterEach(() => {
  for (const app of apps.splice(0)) app.close();
});

function sandbox(options: Partial<SandboxOptions> = {}) {
  const s = createApp(options, quiet);
  apps.push(s);
  return s.app;
}

const preflight = (origin: string, method: string, requestHeaders?: string) => ({
  method: "OPTIONS",
  headers: {
    origin,
    "access-control-request-method": method,
    ...(requestHeaders ? { "access-control-request-headers": requestHeaders } : {}),
  },
});

const message = () =>
  envelope(messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")]));

/** Every access-control-* header of an answer. */
const corsHeaders = (res: Response) => [...res.headers.keys()].filter((name) => name.startsWith("access-control-"));

const list = (value: string | null) => (value ?? "").split(",").map((v) => v.trim().toLowerCase());

describe("without --cors (the default)", () => {
  it("an OPTIONS preflight on a message path is a 405 with Allow: POST, and no CORS header", async () => {
    const app = sandbox();
    for (const path of [STANDARD, ALTERNATE]) {
      const res = await app.request(path, preflight(EHR, "POST"));
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toBe("POST");
      expect(corsHeaders(res)).toEqual([]);
    }
    const answer = await app.request(STANDARD, {
      method: "POST",
      headers: { origin: EHR, "content-type": "application/json" },
      body: message(),
    });
    expect(answer.status).toBe(200);
    expect(corsHeaders(answer)).toEqual([]);
  });
});

describe("--cors with a list of origins", () => {
  it.each(FHIR_PATHS)("answers the preflight of an allowed origin on %s (%s)", async (path, method) => {
    const app = sandbox({ cors: [EHR, "https://ehr.example.ae"] });
    const res = await app.request(path, preflight(EHR, method, "Content-Type, Authorization, X-Sandbox-Scenario"));
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe(EHR);
    expect(list(res.headers.get("access-control-allow-methods"))).toContain(method.toLowerCase());
    expect(list(res.headers.get("access-control-allow-headers"))).toEqual(
      expect.arrayContaining(["content-type", "authorization", "x-sandbox-scenario"]),
    );
    expect(list(res.headers.get("vary"))).toContain("origin");
  });

  it("adds Allow-Origin, Vary: Origin and the exposed headers to answers of an allowed origin", async () => {
    const app = sandbox({ cors: [EHR] });
    const answer = await app.request(STANDARD, {
      method: "POST",
      headers: { origin: EHR, "content-type": "application/json" },
      body: message(),
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("access-control-allow-origin")).toBe(EHR);
    expect(list(answer.headers.get("vary"))).toContain("origin");
    expect(list(answer.headers.get("access-control-expose-headers"))).toEqual(
      expect.arrayContaining(EXPOSED.map((h) => h.toLowerCase())),
    );
    expect(answer.headers.get("x-sandbox-call-id")).toBe("1");

    const metadata = await app.request("/uae-fhir/r4/metadata", { headers: { origin: EHR } });
    expect(metadata.status).toBe(200);
    expect(metadata.headers.get("access-control-allow-origin")).toBe(EHR);
  });

  it("gives an origin not on the list no CORS header: its preflight meets the 405, its answers are bare", async () => {
    const app = sandbox({ cors: [EHR] });
    const refused = await app.request(STANDARD, preflight(OTHER, "POST"));
    expect(refused.status).toBe(405);
    expect(corsHeaders(refused)).toEqual([]);
    const answer = await app.request(STANDARD, {
      method: "POST",
      headers: { origin: OTHER, "content-type": "application/json" },
      body: message(),
    });
    expect(answer.status).toBe(200);
    expect(corsHeaders(answer)).toEqual([]);
    // The answer still depends on the Origin: a shared cache must not hand it to an allowed origin.
    expect(list(answer.headers.get("vary"))).toContain("origin");
  });

  it("an OPTIONS that is not a preflight (no Access-Control-Request-Method) keeps the 405", async () => {
    const app = sandbox({ cors: [EHR] });
    const res = await app.request(STANDARD, { method: "OPTIONS", headers: { origin: EHR } });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
  });

  it("with --auth oauth2, the token endpoint answers a browser's preflight too", async () => {
    const app = sandbox({ cors: [EHR], auth: "oauth2", clientsFile: "docs/clients.example.yaml" });
    const res = await app.request("/oauth2/token", preflight(EHR, "POST", "Authorization, Content-Type"));
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe(EHR);
  });

  it("* allows any origin", async () => {
    const app = sandbox({ cors: ["*"] });
    const res = await app.request(STANDARD, preflight(OTHER, "POST"));
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe(OTHER);
  });
});

describe("the admin API and CORS", () => {
  it("gets no CORS header from --cors alone, even for an allowed origin", async () => {
    const app = sandbox({ cors: [EHR], adminToken: TOKEN });
    const health = await app.request("/__admin/health", { headers: { origin: EHR } });
    expect(health.status).toBe(200);
    expect(corsHeaders(health)).toEqual([]);
    const pre = await app.request("/__admin/calls", preflight(EHR, "GET", "Authorization"));
    expect(pre.status).not.toBe(204);
    expect(corsHeaders(pre)).toEqual([]);
  });

  it("with --cors-admin and --admin-token: preflight without the token, answers with the headers", async () => {
    const app = sandbox({ cors: [EHR], corsAdmin: true, adminToken: TOKEN });
    const pre = await app.request("/__admin/calls", preflight(EHR, "GET", "Authorization"));
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe(EHR);
    expect(list(pre.headers.get("access-control-allow-headers"))).toContain("authorization");

    const calls = await app.request("/__admin/calls", { headers: { origin: EHR, authorization: `Bearer ${TOKEN}` } });
    expect(calls.status).toBe(200);
    expect(calls.headers.get("access-control-allow-origin")).toBe(EHR);
    // A missing token is still refused, and the browser script can read why.
    const unauthorised = await app.request("/__admin/calls", { headers: { origin: EHR } });
    expect(unauthorised.status).toBe(401);
    expect(unauthorised.headers.get("access-control-allow-origin")).toBe(EHR);
    expect(list(unauthorised.headers.get("access-control-expose-headers"))).toContain("www-authenticate");
    // Another origin still gets nothing.
    const other = await app.request("/__admin/calls", { headers: { origin: OTHER, authorization: `Bearer ${TOKEN}` } });
    expect(corsHeaders(other)).toEqual([]);
  });

  it("--cors-admin without --admin-token refuses to start: exit 2, naming both flags; createApp throws", async () => {
    const err: string[] = [];
    const out: string[] = [];
    const code = await runCli(["serve", "--port", "0", "--host", "127.0.0.1", "--cors", EHR, "--cors-admin"], {
      out: (l) => out.push(l),
      err: (l) => err.push(l),
      env: {},
    });
    expect(code).toBe(2);
    expect(err.join("\n")).toMatch(/--cors-admin needs --admin-token/);
    expect(out).toEqual([]);
    // Also from the environment (CORS_ADMIN=yes).
    const fromEnv = await runCli(["serve", "--port", "0"], {
      out: (l) => out.push(l),
      err: (l) => err.push(l),
      env: { CORS: EHR, CORS_ADMIN: "yes" },
    });
    expect(fromEnv).toBe(2);
    expect(() => createApp({ cors: [EHR], corsAdmin: true }, quiet)).toThrow(/adminToken/);
  });

  it("--cors takes origins as browsers send them, or *; anything else is exit 2 naming the flag", async () => {
    for (const bad of ["localhost:3000", "http://localhost:3000/app", "ftp://host", "*,http://a.example"]) {
      const err: string[] = [];
      const code = await runCli(["serve", "--port", "0", "--cors", bad], {
        out: () => undefined,
        err: (l) => err.push(l),
        env: {},
      });
      expect(code, bad).toBe(2);
      expect(err.join("\n")).toContain(`--cors ${JSON.stringify(bad)}`);
    }
  });
});
