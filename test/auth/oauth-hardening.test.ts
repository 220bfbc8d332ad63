import { writeFileSync } from "node:fs";
import type { AllergyIntolerance } from "fhir/r4.js";
import type { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { createApp, type Logger } from "../../src/app.js";
import { JtiMemory } from "../../src/auth/client-assertion.js";
import { FailureLimit } from "../../src/auth/failure-limit.js";
import type { SandboxOptions } from "../../src/config/options.js";
import { ipv6Network } from "../../src/http/remote-address.js";
import { Redaction, redactUrl } from "../../src/journal/redact.js";
import { admin } from "../admin/admin-client.js";
import { quietLogger } from "../orders/pharmacy-client.js";
import { ecKeyPair, handAssertion } from "../support/hand-jwt.js";
import { envelope, example, messageBundle, STANDARD } from "../support/messages.js";
import { authSandbox, closeAfterTest, tempFile } from "./oauth-support.js";

// Issue 21's OAuth2 details and secrets, in-process: credentials in a URL, the assertion audience, the clients file
// reloaded and every token judged by it, the jti memory, and the limits on failed authentications.

const FORM = { "content-type": "application/x-www-form-urlencoded" };
const backend = ecKeyPair("backend-1");

const clientsYaml = (overrides: { teamA?: string; teamB?: string } = {}) => `clients:
  - ${overrides.teamA ?? "{ id: team-a-ehr, secret: team-a-secret, workspace: team-a }"}
  - ${overrides.teamB ?? "{ id: team-b-ehr, secret: team-b-secret, workspace: team-b }"}
  - { id: backend, jwks: { keys: [${JSON.stringify(backend.publicJwk)}] }, workspace: team-a }
`;

const tokenRequest = (app: Hono, form: Record<string, string>, url = "/oauth2/token") =>
  app.request(url, { method: "POST", headers: FORM, body: new URLSearchParams(form).toString() });

async function tokenOf(app: Hono, client: string, secret: string, scope?: string): Promise<string> {
  const res = await tokenRequest(app, {
    grant_type: "client_credentials",
    client_id: client,
    client_secret: secret,
    ...(scope ? { scope } : {}),
  });
  const body = (await res.json()) as { access_token: string };
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body.access_token;
}

const allergy = () =>
  envelope(messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")]));

const sendMessage = (app: Hono, token: string) =>
  app.request(STANDARD, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: allergy(),
  });

const assertionRequest = (app: Hono, aud: string, url = "/oauth2/token") =>
  tokenRequest(
    app,
    {
      grant_type: "client_credentials",
      client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
      client_assertion: handAssertion("backend", "backend-1", backend.privateKey, aud),
    },
    url,
  );

/** A call of the refused log (GET /__admin/refused), by its call id. */
async function refusedCall(app: Hono, id: string | null): Promise<{ request: { url: string } }> {
  const reply = await admin(app, "GET", "/refused");
  const call = (reply.body.calls as Array<{ id: string; request: { url: string } }>).find((c) => c.id === id);
  expect(call, `refused call ${id}`).toBeDefined();
  return call as { request: { url: string } };
}

describe("credentials in a URL (issue 21, defect 9)", () => {
  it("a client secret in the token endpoint's query: 400 invalid_request (RFC 6749 §2.3.1), journaled redacted", async () => {
    const { app } = authSandbox(clientsYaml());
    const res = await tokenRequest(
      app,
      { grant_type: "client_credentials" },
      "/oauth2/token?client_id=team-a-ehr&client_secret=team-a-secret",
    );
    const body = (await res.json()) as { error: string; error_description: string };
    expect(res.status).toBe(400);
    expect(body.error).toBe("invalid_request");
    expect(body.error_description).toMatch(/client_secret .*query.*RFC 6749 §2\.3\.1.*form body/);
    // Refused before any client is known: an anonymous call, kept in the refused log (not a journal), redacted.
    const call = await refusedCall(app, res.headers.get("x-sandbox-call-id"));
    expect(call.request.url).toBe("http://localhost/oauth2/token?client_id=team-a-ehr&client_secret=[redacted]");
    expect(JSON.stringify(await admin(app, "GET", "/refused"))).not.toContain("team-a-secret");
  });

  it("an access token as ?access_token= on a message path is journaled redacted", async () => {
    const { app } = authSandbox(clientsYaml());
    const token = await tokenOf(app, "team-a-ehr", "team-a-secret");
    const res = await app.request(`${STANDARD}?access_token=${token}&_format=json`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: allergy(),
    });
    expect(res.status).toBe(401);
    // No token in the Authorization header: an anonymous 401, kept in the refused log, redacted.
    const call = await refusedCall(app, res.headers.get("x-sandbox-call-id"));
    expect(call.request.url).toBe(`http://localhost${STANDARD}?access_token=[redacted]&_format=json`);
    expect(JSON.stringify(await admin(app, "GET", "/refused"))).not.toContain(token);
  });

  it.each([
    ["https://pharmacy.example/in?api_key=k1&x=1", "https://pharmacy.example/in?api_key=[redacted]&x=1"],
    ["https://p.example/in?client_secret=s#frag", "https://p.example/in?client_secret=[redacted]#frag"],
    ["http://[bad/in?password=hunter2", "http://[bad/in?password=[redacted]"],
    ["/oauth2/token?assertion=eyJhbGciOi.eyJ.sig", "/oauth2/token?assertion=[redacted]"],
    ["/x?note=eyJhbGciOi.eyJ.sig", "/x?note=[redacted]"],
    ["/x?grant_type=client_credentials&scope=a+b", "/x?grant_type=client_credentials&scope=a+b"],
  ])("redactUrl(%s)", (url, expected) => {
    expect(redactUrl(url)).toBe(expected);
  });

  it("an outbound call's URL, and one read back from an older journal file, are redacted the same way", () => {
    const redaction = new Redaction();
    const request = { method: "POST", url: "https://p.example/in?token=abc", path: "https://p.example/in?token=abc" };
    const stored = redaction.call({
      direction: "outbound",
      at: new Date(0),
      durationMs: 1,
      operation: null,
      messageId: null,
      rule: null,
      request: { ...request, headers: {}, body: "" },
      response: null,
    });
    expect([stored.request.url, stored.request.path]).toEqual([
      "https://p.example/in?token=[redacted]",
      "https://p.example/in?token=[redacted]",
    ]);
    const read = redaction.recorded({ request: { ...request, headers: {}, body: null }, response: null });
    expect(read.request.url).toBe("https://p.example/in?token=[redacted]");
  });
});

describe("private_key_jwt audience (issue 21, defect 10)", () => {
  it("an assertion minted for another server is refused, even sent with that server's Host", async () => {
    const { app } = authSandbox(clientsYaml());
    const res = await assertionRequest(
      app,
      "http://elsewhere.example/oauth2/token",
      "http://elsewhere.example/oauth2/token",
    );
    const body = (await res.json()) as { error: string; error_description: string };
    expect(res.status).toBe(400);
    expect(body.error).toBe("invalid_client");
    expect(body.error_description).toMatch(/aud .*elsewhere.*never from the Host header.*--public-url/);
  });

  it("without --public-url: the listening URL under localhost, 127.0.0.1 and [::1], same port; nothing else", async () => {
    const sandbox = authSandbox(clientsYaml());
    // In-process the sandbox is at http://localhost (app.request's default); served() moves it.
    expect((await assertionRequest(sandbox.app, "http://127.0.0.1/oauth2/token")).status).toBe(200);
    sandbox.served({ url: "http://127.0.0.1:9412", limits: {} as never });
    for (const aud of [
      "http://127.0.0.1:9412/oauth2/token",
      "http://localhost:9412/oauth2/token",
      "http://[::1]:9412/oauth2/token",
      "http://localhost:9412",
    ]) {
      expect((await assertionRequest(sandbox.app, aud, "http://127.0.0.1:9412/oauth2/token")).status, aud).toBe(200);
    }
    for (const aud of ["http://localhost/oauth2/token", "http://localhost:9413/oauth2/token"]) {
      expect((await assertionRequest(sandbox.app, aud, "http://127.0.0.1:9412/oauth2/token")).status, aud).toBe(400);
    }
  });

  it("with --public-url: its token endpoint and issuer only, not the URL the request came to", async () => {
    const { app } = authSandbox(clientsYaml(), { publicUrl: "https://sandbox.example.ae" });
    expect((await assertionRequest(app, "https://sandbox.example.ae/oauth2/token")).status).toBe(200);
    expect((await assertionRequest(app, "https://sandbox.example.ae")).status).toBe(200);
    expect((await assertionRequest(app, "http://localhost/oauth2/token")).status).toBe(400);
  });
});

describe("tokens judged by the clients file as it is now (issue 21, also seen)", () => {
  function reloadable(options: Partial<SandboxOptions> = {}) {
    const warnings: string[] = [];
    const file = tempFile("clients.yaml", clientsYaml());
    const sandbox = closeAfterTest(
      authSandboxAt(file, options, { ...quietLogger, warn: (m: string) => warnings.push(m) }),
    );
    const rewrite = (overrides: Parameters<typeof clientsYaml>[0]) => writeFileSync(file, clientsYaml(overrides));
    return { app: sandbox.app, sandbox, file, rewrite, warnings };
  }

  it("disabled in the file and reloaded (POST /__admin/clients/reload): the client's token gets 401 at once", async () => {
    const { app, rewrite } = reloadable({ watch: false });
    const token = await tokenOf(app, "team-a-ehr", "team-a-secret");
    expect((await sendMessage(app, token)).status).toBe(200);
    rewrite({ teamA: "{ id: team-a-ehr, secret: team-a-secret, workspace: team-a, disabled: true }" });
    const reloaded = await admin(app, "POST", "/clients/reload");
    expect(reloaded.status).toBe(200);
    expect(reloaded.body).toEqual({ reloaded: true, clients: 3 });
    const refused = await sendMessage(app, token);
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toMatch(/error="invalid_token".*disabled/);
  });

  it("removed, moved to another workspace, or a scope taken away: judged by the current file", async () => {
    const { app, rewrite } = reloadable({ watch: false });
    const a = await tokenOf(app, "team-a-ehr", "team-a-secret");
    const b = await tokenOf(app, "team-b-ehr", "team-b-secret");
    rewrite({
      teamA: "{ id: team-a-renamed, secret: team-a-secret, workspace: team-a }",
      teamB: "{ id: team-b-ehr, secret: team-b-secret, workspace: team-b, scopes: [patient-profile.read] }",
    });
    expect((await admin(app, "POST", "/clients/reload")).status).toBe(200);
    const removed = await sendMessage(app, a);
    expect(removed.status).toBe(401);
    expect(removed.headers.get("www-authenticate")).toMatch(/no longer in the clients file/);
    const narrowed = await sendMessage(app, b);
    expect(narrowed.status).toBe(403);
    expect(narrowed.headers.get("www-authenticate")).toMatch(/insufficient_scope/);

    rewrite({ teamB: "{ id: team-b-ehr, secret: team-b-secret, workspace: team-c }" });
    expect((await admin(app, "POST", "/clients/reload")).status).toBe(200);
    const moved = await sendMessage(app, b);
    expect(moved.status).toBe(401);
    expect(moved.headers.get("www-authenticate")).toMatch(/now acts in workspace team-c/);
  });

  it("an invalid new file is refused (400, logged) and the previous one keeps serving", async () => {
    const { app, file, warnings } = reloadable({ watch: false });
    const token = await tokenOf(app, "team-a-ehr", "team-a-secret");
    writeFileSync(file, "clients:\n  - { id: team-a-ehr, workspace: team-a }\n");
    const refused = await admin(app, "POST", "/clients/reload");
    expect(refused.status).toBe(400);
    expect(refused.body.issue[0].diagnostics).toMatch(/clients\.yaml:2:.*previous clients file keeps serving/);
    expect(warnings.join("\n")).toMatch(/clients file not reloaded, the previous one keeps serving/);
    expect((await sendMessage(app, token)).status).toBe(200);
  });

  it("the reload endpoint is sandbox-wide: a workspace's admin token does not open it", async () => {
    const file = tempFile("clients.yaml", `${clientsYaml()}workspaces:\n  team-a: { adminToken: team-a-admin }\n`);
    const { app } = closeAfterTest(authSandboxAt(file, { adminToken: "global", watch: false }, quietLogger));
    expect((await admin(app, "POST", "/clients/reload", { token: "team-a-admin", prefix: "/w/team-a" })).status).toBe(
      401,
    );
    expect((await admin(app, "POST", "/clients/reload", { token: "global" })).status).toBe(200);
  });

  it("watched (--watch, the CLI's default): a change to the file counts without a reload by hand", {
    timeout: 20_000,
  }, async () => {
    const { app, rewrite } = reloadable({ watch: true });
    const token = await tokenOf(app, "team-a-ehr", "team-a-secret");
    rewrite({ teamA: "{ id: team-a-ehr, secret: team-a-secret, workspace: team-a, disabled: true }" });
    const deadline = Date.now() + 10_000;
    let status = 200;
    while (status === 200 && Date.now() < deadline) {
      status = (await sendMessage(app, token)).status;
      if (status === 200) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(status).toBe(401);
  });
});

describe("the jti memory (issue 21, also seen)", () => {
  it("drops an id once its assertion's exp has passed", () => {
    const memory = new JtiMemory();
    for (let i = 0; i < 5; i++) expect(memory.remember("c", `j${i}`, 1_010, 1_000)).toEqual({ ok: true });
    expect(memory.remember("c", "j0", 1_010, 1_005)).toEqual({ ok: false, why: "replayed" });
    expect(memory.size).toBe(5);
    // 31 s later (past exp and the sweep interval) every one has gone.
    expect(memory.remember("c", "new", 1_100, 1_031)).toEqual({ ok: true });
    expect(memory.size).toBe(1);
  });

  it("holds at most its bound per client: past it, that client waits for the earliest exp; the others do not", () => {
    const memory = new JtiMemory(3);
    expect(memory.remember("c", "a", 1_100, 1_000)).toEqual({ ok: true });
    expect(memory.remember("c", "b", 1_050, 1_000)).toEqual({ ok: true });
    expect(memory.remember("c", "c", 1_200, 1_000)).toEqual({ ok: true });
    expect(memory.remember("c", "d", 1_200, 1_001)).toEqual({ ok: false, why: "full", retryAfter: 49 });
    expect(memory.remember("other", "a", 1_100, 1_001)).toEqual({ ok: true });
    expect(memory.remember("c", "d", 1_200, 1_051)).toEqual({ ok: true });
  });
});

describe("failed authentications are limited (issue 21, also seen)", () => {
  function clocked(options: Parameters<typeof authSandbox>[1] = {}) {
    let ms = 0;
    const sandbox = authSandbox(clientsYaml(), { watch: false, ...options }, { monotonic: () => ms });
    return { app: sandbox.app, advance: (by: number) => (ms += by) };
  }
  const wrong = (app: Hono, client = "team-a-ehr") =>
    tokenRequest(app, { grant_type: "client_credentials", client_id: client, client_secret: "guess" });

  it("10 wrong secrets for a client in a minute: then 429 temporarily_unavailable with Retry-After, right secret or not", async () => {
    const { app, advance } = clocked();
    for (let i = 0; i < 10; i++) {
      expect((await wrong(app)).status).toBe(400);
      advance(1_000);
    }
    const throttled = await tokenRequest(app, {
      grant_type: "client_credentials",
      client_id: "team-a-ehr",
      client_secret: "team-a-secret",
    });
    expect(throttled.status).toBe(429);
    expect(throttled.headers.get("retry-after")).toBe("50");
    expect(await throttled.json()).toMatchObject({ error: "temporarily_unavailable" });
    // Another client from the same address is not held by team-a-ehr's failures.
    expect(await tokenOf(app, "team-b-ehr", "team-b-secret")).toBeTruthy();
    advance(50_000);
    expect(await tokenOf(app, "team-a-ehr", "team-a-secret")).toBeTruthy();
  });

  it("30 failures from one address, whatever the clients: the address waits", async () => {
    const { app, advance } = clocked();
    for (let i = 0; i < 30; i++) expect((await wrong(app, `nobody-${i}`)).status).toBe(400);
    expect((await wrong(app, "team-b-ehr")).status).toBe(429);
    advance(60_000);
    expect(await tokenOf(app, "team-b-ehr", "team-b-secret")).toBeTruthy();
  });

  it("a malformed request is no failed authentication: it counts for nothing", async () => {
    const { app } = clocked();
    for (let i = 0; i < 40; i++) {
      expect((await tokenRequest(app, { grant_type: "password" })).status).toBe(400);
    }
    expect(await tokenOf(app, "team-a-ehr", "team-a-secret")).toBeTruthy();
  });

  it("10 wrong admin tokens from an address: 429 throttled with Retry-After, even with the right one; then open again", async () => {
    const { app, advance } = clocked({ adminToken: "global" });
    for (let i = 0; i < 10; i++) expect((await admin(app, "GET", "/calls", { token: `guess-${i}` })).status).toBe(401);
    // No token at all guesses nothing and is not counted.
    expect((await admin(app, "GET", "/calls")).status).toBe(429);
    const throttled = await admin(app, "GET", "/calls", { token: "global" });
    expect(throttled.status).toBe(429);
    expect(throttled.headers.get("retry-after")).toBe("60");
    expect(throttled.body.issue[0]).toMatchObject({ severity: "error", code: "throttled" });
    advance(60_000);
    expect((await admin(app, "GET", "/calls", { token: "global" })).status).toBe(200);
  });

  it("wrong admin tokens count wherever a right one is told from a wrong one: an unknown workspace's admin API, health", async () => {
    const { app } = clocked({ adminToken: "global" });
    // Under OAuth2 an unknown workspace's admin API answers a wrong token 401 and the global one 404.
    for (let i = 0; i < 10; i++) {
      expect((await admin(app, "GET", "/calls", { prefix: "/w/nosuch", token: `guess-${i}` })).status).toBe(401);
    }
    expect((await admin(app, "GET", "/calls", { prefix: "/w/nosuch", token: "global" })).status).toBe(429);
    // Health answers the open figures only to an address past the limit, even with the right token.
    const health = await admin(app, "GET", "/health", { token: "global" });
    expect(health.status).toBe(200);
    expect(health.body.status).toBe("ok");
    expect(health.body).not.toHaveProperty("calls");
  });

  it("wrong tokens at health count too: past ten, the right token reads the open figures only", async () => {
    const { app, advance } = clocked({ adminToken: "global" });
    expect((await admin(app, "GET", "/health", { token: "global" })).body).toHaveProperty("calls");
    for (let i = 0; i < 10; i++) {
      expect((await admin(app, "GET", "/health", { token: `guess-${i}` })).body).not.toHaveProperty("calls");
    }
    expect((await admin(app, "GET", "/health", { token: "global" })).body).not.toHaveProperty("calls");
    expect((await admin(app, "GET", "/calls", { token: "global" })).status).toBe(429);
    advance(60_000);
    expect((await admin(app, "GET", "/health", { token: "global" })).body).toHaveProperty("calls");
  });

  it("the counters' memory is bounded: past its most keys, the oldest go", () => {
    let ms = 0;
    const limit = new FailureLimit({ max: 2, windowMs: 1_000, maxKeys: 100 }, () => ms);
    for (let i = 0; i < 10_000; i++) limit.fail(`address-${i}`);
    expect(limit.size).toBeLessThanOrEqual(100);
    limit.fail("a");
    limit.fail("a");
    expect(limit.retryAfterMs("a")).toBe(1_000);
    ms = 1_000;
    expect(limit.retryAfterMs("a")).toBe(0);
  });
});

/** A sandbox with --auth oauth2 on a clients file of the test's own (so that it can rewrite it), and a logger. */
function authSandboxAt(file: string, options: Partial<SandboxOptions>, logger: Logger) {
  return createApp({ auth: "oauth2", clientsFile: file, ...options }, { logger });
}

describe("failures are counted by address: an IPv6 caller by its /64 (RFC 4291 §2.5.1)", () => {
  it.each([
    ["2001:db8:1:2:a:b:c:d", "2001:db8:1:2::/64"],
    ["2001:db8:1:2::ffff", "2001:db8:1:2::/64"],
    ["2001:0db8:0001:0002:0000:0000:0000:0001", "2001:db8:1:2::/64"],
    ["2001:db8::1", "2001:db8:0:0::/64"],
    ["fe80::1%eth0", "fe80:0:0:0::/64"],
    ["::1", "0:0:0:0::/64"],
  ])("%s → %s", (address, network) => {
    expect(ipv6Network(address)).toBe(network);
  });
});
