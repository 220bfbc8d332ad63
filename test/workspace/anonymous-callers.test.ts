import type { AllergyIntolerance } from "fhir/r4.js";
import type { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { admin } from "../admin/admin-client.js";
import { authSandbox, closeAfterTest } from "../auth/oauth-support.js";
import { quietLogger } from "../orders/pharmacy-client.js";
import { envelope, example, messageBundle, post, STANDARD } from "../support/messages.js";
import { WORKSPACE_HEADER } from "./workspace-client.js";

// CONTRACT §15, issue 21 (defects 2 and 3, and "health shows any workspace's counts to anyone"): under --auth
// oauth2 a caller without a valid token makes no workspace and writes into no workspace's journal; its refused
// calls are counted and kept in a small bounded log of their own; health shows a workspace's figures only to
// whoever may read that workspace.

const GLOBAL = "global-admin";
const CLIENTS = `clients:
  - { id: clinic-a-ehr, secret: a-secret, workspace: clinic-a }
  - { id: clinic-b-ehr, secret: b-secret, workspace: clinic-b }
workspaces:
  clinic-a: { adminToken: clinic-a-admin }
  clinic-b: { adminToken: clinic-b-admin }
`;

/** The limits the issue asks of the refused log, written out (not read from src/). */
const LOG_MAX_CALLS = 200;
const LOG_MAX_BODY_BYTES = 2 * 1024;

const shared = () => authSandbox(CLIENTS, { adminToken: GLOBAL }).app;
const allergy = () => messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")]);

async function workspaceIds(app: Hono): Promise<string[]> {
  const reply = await admin(app, "GET", "/workspaces", { token: GLOBAL });
  expect(reply.status).toBe(200);
  return (reply.body.workspaces as Array<{ id: string }>).map((w) => w.id).sort();
}

async function tokenOf(app: Hono, client: string, secret: string): Promise<string> {
  const res = await app.request("/oauth2/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "client_credentials",
      client_id: client,
      client_secret: secret,
    }).toString(),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

describe("under --auth oauth2 an anonymous request naming an unknown workspace makes nothing", () => {
  // Each path the issue lists, with the answer the request deserves.
  const cases: Array<[string, number, (app: Hono) => Response | Promise<Response>]> = [
    ["GET /w/x/__admin/health", 404, (app) => app.request("/w/x/__admin/health")],
    ["GET /w/x/__admin/ui/", 404, (app) => app.request("/w/x/__admin/ui/")],
    ["GET /w/x/uae-fhir/r4/metadata", 404, (app) => app.request("/w/x/uae-fhir/r4/metadata")],
    ["GET /w/x/", 404, (app) => app.request("/w/x/")],
    ["GET /w/x/no-such-path (a 404)", 404, (app) => app.request("/w/x/no-such-path")],
    ["GET /w/x/__admin/calls without a token (a refused admin call)", 401, (app) => app.request("/w/x/__admin/calls")],
    [
      "GET /w/x/__admin/calls with a wrong token",
      401,
      (app) => app.request("/w/x/__admin/calls", { headers: { authorization: "Bearer wrong" } }),
    ],
    [
      "POST /w/x/uae-fhir/r4/$process-message without a token (a 401 message)",
      401,
      (app) => app.request(`/w/x${STANDARD}`, { method: "POST", body: envelope(allergy()) }),
    ],
    [
      "GET /uae-fhir/r4/metadata with X-Sandbox-Workspace: x",
      404,
      (app) => app.request("/uae-fhir/r4/metadata", { headers: { [WORKSPACE_HEADER]: "x" } }),
    ],
  ];

  it.each(cases)("%s → %s, and workspace x is not made", async (_, status, request) => {
    const app = shared();
    const before = await workspaceIds(app);

    const res = await request(app);

    expect(res.status).toBe(status);
    expect(await workspaceIds(app)).toEqual(before);
    expect(before).not.toContain("x");
    if (status === 404) {
      const body = (await res.json()) as { resourceType: string; issue: Array<{ code: string; diagnostics: string }> };
      expect(body).toMatchObject({ resourceType: "OperationOutcome", issue: [{ code: "not-found" }] });
      // It names the workspace asked for, and no workspace the sandbox holds.
      expect(body.issue[0]?.diagnostics).toMatch(/workspace x/);
      expect(body.issue[0]?.diagnostics).not.toMatch(/clinic-a|clinic-b/);
    }
  });

  it("the global admin's token makes no workspace either (it is no client's token): a 404", async () => {
    const app = shared();
    const reply = await admin(app, "GET", "/calls", { prefix: "/w/x", token: GLOBAL });
    expect(reply.status).toBe(404);
    expect(await workspaceIds(app)).not.toContain("x");
  });

  it("a valid token of a client makes its own workspace, as docs/auth.md says", async () => {
    const app = shared();
    expect(await workspaceIds(app)).toEqual(["default"]);
    const token = await tokenOf(app, "clinic-a-ehr", "a-secret");
    expect((await post(app, allergy(), { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    expect(await workspaceIds(app)).toEqual(["clinic-a", "default"]);
  });

  it("without OAuth2 the documented prefix and header still make a workspace", async () => {
    const { app } = closeAfterTest(createApp({ adminToken: GLOBAL }, { logger: quietLogger }));
    expect((await app.request("/w/by-prefix/uae-fhir/r4/metadata")).status).toBe(200);
    expect((await app.request("/uae-fhir/r4/metadata", { headers: { [WORKSPACE_HEADER]: "by-header" } })).status).toBe(
      200,
    );
    expect(await workspaceIds(app)).toEqual(["by-header", "by-prefix", "default"]);
  });
});

describe("refused calls of anonymous callers: in a bounded log of their own, never in a team's journal", () => {
  it("a 401 to a team's message path is not in the team's journal; the team's admin sees it in the refused log", async () => {
    const app = shared();
    const token = await tokenOf(app, "clinic-b-ehr", "b-secret");
    const genuine = await post(app, allergy(), { headers: { authorization: `Bearer ${token}` } });
    expect(genuine.status).toBe(200);

    const refused = await post(app, allergy(), { path: `/w/clinic-b${STANDARD}` });
    expect(refused.status).toBe(401);

    const journal = await admin(app, "GET", "/calls", { prefix: "/w/clinic-b", token: "clinic-b-admin" });
    const messages = journal.body.calls.filter((c: { request: { path: string } }) => c.request.path === STANDARD);
    expect(messages.map((c: { response: { status: number } }) => c.response.status)).toEqual([200]);
    const log = await admin(app, "GET", "/refused", { prefix: "/w/clinic-b", token: "clinic-b-admin" });
    expect(log.status).toBe(200);
    expect(log.body.calls).toHaveLength(1);
    // The answer's X-Sandbox-Call-Id names the log's entry.
    expect(log.body.calls[0]).toMatchObject({
      id: refused.headers.get("x-sandbox-call-id"),
      workspace: "clinic-b",
      operation: "add-allergy",
      request: { method: "POST", path: `/w/clinic-b${STANDARD}` },
      response: { status: 401 },
    });
  });

  it("a failed token request (invalid_client) is anonymous too: no journal holds it", async () => {
    const app = shared();
    const res = await app.request("/oauth2/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=client_credentials&client_id=clinic-b-ehr&client_secret=wrong",
    });
    // RFC 6749 §5.2: 400, as the client did not authenticate with the Authorization header.
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe("invalid_client");

    for (const [prefix, token] of [
      ["", GLOBAL],
      ["/w/clinic-b", "clinic-b-admin"],
    ] as const) {
      expect((await admin(app, "GET", "/calls", { prefix, token })).body.calls).toEqual([]);
    }
    const log = await admin(app, "GET", "/refused", { token: GLOBAL });
    expect(log.body.calls).toMatchObject([{ request: { path: "/oauth2/token" }, response: { status: 400 } }]);
    // The secret is redacted as the journal redacts it.
    expect(JSON.stringify(log.body)).not.toContain("client_secret=wrong");
  });

  it(`keeps the last ${LOG_MAX_CALLS} refusals, bodies cut to ${LOG_MAX_BODY_BYTES} bytes, headers redacted`, async () => {
    const app = shared();
    const body = envelope(allergy()).padEnd(10_000, " ");
    const sent = LOG_MAX_CALLS + 50;
    for (let i = 0; i < sent; i++) {
      const reply = await app.request(`/w/clinic-a${STANDARD}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer not-a-token-${i}` },
        body,
      });
      expect(reply.status).toBe(401);
    }

    const log = await admin(app, "GET", "/refused", { token: GLOBAL });
    expect(log.body).toMatchObject({ refused: sent, kept: LOG_MAX_CALLS, maxCalls: LOG_MAX_CALLS });
    const calls = log.body.calls as Array<{
      request: { headers: Record<string, string>; body: string; bodyBytes: number; truncated: boolean };
      response: { body: string };
    }>;
    expect(calls).toHaveLength(LOG_MAX_CALLS);
    for (const call of calls) {
      expect(Buffer.byteLength(call.request.body)).toBeLessThanOrEqual(LOG_MAX_BODY_BYTES);
      expect(call.request).toMatchObject({ bodyBytes: Buffer.byteLength(body), truncated: true });
      expect(body.startsWith(call.request.body)).toBe(true);
      expect(call.request.headers.authorization).toBe("[redacted]");
    }
    // The oldest went first: the last one kept is the last one sent.
    expect(JSON.stringify(calls.at(-1))).not.toContain("not-a-token");
    // Nothing of it in the team's journal.
    expect((await admin(app, "GET", "/calls", { prefix: "/w/clinic-a", token: "clinic-a-admin" })).body.calls).toEqual(
      [],
    );
  });

  it("who may read it: the global admin all of it, a workspace's admin what named its workspace, nobody else", async () => {
    const app = shared();
    await post(app, allergy(), { path: `/w/clinic-a${STANDARD}` });
    await post(app, allergy(), { path: `/w/clinic-b${STANDARD}` });
    await post(app, allergy(), { path: `/w/stray${STANDARD}` });

    const workspaces = async (reply: { body: { calls: Array<{ workspace: string }> } }) =>
      reply.body.calls.map((c) => c.workspace);
    expect(await workspaces(await admin(app, "GET", "/refused", { token: GLOBAL }))).toEqual([
      "clinic-a",
      "clinic-b",
      "stray",
    ]);
    expect(await workspaces(await admin(app, "GET", "/refused?workspace=stray", { token: GLOBAL }))).toEqual(["stray"]);
    expect(
      await workspaces(await admin(app, "GET", "/refused", { prefix: "/w/clinic-a", token: "clinic-a-admin" })),
    ).toEqual(["clinic-a"]);
    expect((await admin(app, "GET", "/refused")).status).toBe(401);
    expect((await admin(app, "GET", "/refused", { token: "clinic-a-admin" })).status).toBe(401);
    expect((await admin(app, "GET", "/refused", { prefix: "/w/clinic-b", token: "clinic-a-admin" })).status).toBe(401);
  });

  it("without OAuth2, a request refused before any workspace took it (a bad name) is kept there too", async () => {
    const { app } = closeAfterTest(createApp({}, { logger: quietLogger }));
    const reply = await app.request("/uae-fhir/r4/metadata", { headers: { [WORKSPACE_HEADER]: "Not A Name" } });
    expect(reply.status).toBe(400);
    const log = await admin(app, "GET", "/refused");
    expect(log.body.calls).toMatchObject([{ workspace: null, response: { status: 400 } }]);
  });
});

describe("GET /__admin/health: a workspace's figures only to whoever may read that workspace", () => {
  /** The figures of one workspace (CONTRACT §9's health and the workspace's part), written out here. */
  const WORKSPACE_FIGURES = ["calls", "journal", "store", "workspace", "journalFile", "stateFile", "refused"];

  const hidden = (body: Record<string, unknown>) => WORKSPACE_FIGURES.filter((key) => key in body);

  it("anonymous: status ok and sandbox-wide facts, no workspace's figures", async () => {
    const app = shared();
    for (const prefix of ["", "/w/clinic-a"]) {
      const reply = await admin(app, "GET", "/health", { prefix });
      expect(reply.status).toBe(200);
      expect(reply.body).toMatchObject({ status: "ok", version: expect.any(String) });
      expect(hidden(reply.body)).toEqual([]);
    }
    // A wrong token, or another workspace's, is no better.
    expect(hidden((await admin(app, "GET", "/health", { prefix: "/w/clinic-a", token: "wrong" })).body)).toEqual([]);
    expect(
      hidden((await admin(app, "GET", "/health", { prefix: "/w/clinic-a", token: "clinic-b-admin" })).body),
    ).toEqual([]);
  });

  it("the workspace's admin token and the global one show its figures", async () => {
    const app = shared();
    const token = await tokenOf(app, "clinic-a-ehr", "a-secret");
    await post(app, allergy(), { headers: { authorization: `Bearer ${token}` } });
    await post(app, allergy(), { path: `/w/clinic-a${STANDARD}` });

    for (const bearer of ["clinic-a-admin", GLOBAL]) {
      const reply = await admin(app, "GET", "/health", { prefix: "/w/clinic-a", token: bearer });
      expect(hidden(reply.body)).toEqual(WORKSPACE_FIGURES);
      // Its token request and its message; not the anonymous 401.
      expect(reply.body).toMatchObject({ calls: 2, workspace: { id: "clinic-a" } });
    }
    // The refusals that named it: to its admin, those; to the global admin, the whole sandbox's counts.
    const own = await admin(app, "GET", "/health", { prefix: "/w/clinic-a", token: "clinic-a-admin" });
    expect(own.body.refused).toEqual({ kept: 1 });
    const global = await admin(app, "GET", "/health", { token: GLOBAL });
    expect(global.body.refused).toMatchObject({ refused: 1, kept: 1 });
  });

  it("the local default (no OAuth2, no admin token): everyone sees them, as before", async () => {
    const { app } = closeAfterTest(createApp({}, { logger: quietLogger }));
    const reply = await admin(app, "GET", "/health");
    expect(hidden(reply.body)).toEqual(WORKSPACE_FIGURES);
  });
});

describe("with --auth oauth2 and no admin token, the admin API answers this machine only", () => {
  // A caller on another machine, as @hono/node-server hands the socket to the app (c.env.incoming).
  const from = (remoteAddress: string) => ({ incoming: { socket: { remoteAddress } } });
  const CLIENTS_WITHOUT_ADMIN_TOKENS = `clients:
  - { id: team-c-ehr, secret: c-secret, workspace: team-c }
  - { id: default-ehr, secret: d-secret }
`;

  it.each([
    ["GET", "/__admin/calls"],
    ["POST", "/__admin/reset"],
    ["GET", "/w/team-c/__admin/calls"],
    ["DELETE", "/w/team-c/__admin/calls"],
  ])(
    "%s %s from 203.0.113.9: 403 naming --admin-token; from 127.0.0.1 and in-process: served",
    async (method, path) => {
      const { app } = authSandbox(CLIENTS_WITHOUT_ADMIN_TOKENS);
      const remote = await app.request(path, { method }, from("203.0.113.9"));
      expect(remote.status).toBe(403);
      expect(await remote.text()).toMatch(/--admin-token-file \(or ADMIN_TOKEN\)/);
      expect((await app.request(path, { method }, from("127.0.0.1"))).status).toBeLessThan(300);
      expect((await app.request(path, { method }, from("::ffff:127.0.0.1"))).status).toBeLessThan(300);
      expect((await app.request(path, { method })).status).toBeLessThan(300);
    },
  );

  it("health from another machine shows no workspace's figures; from this one, all of them", async () => {
    const { app } = authSandbox(CLIENTS_WITHOUT_ADMIN_TOKENS);
    const remote = (await (await app.request("/__admin/health", {}, from("2001:db8::7"))).json()) as object;
    expect(remote).toMatchObject({ status: "ok" });
    expect(remote).not.toHaveProperty("calls");
    expect(await (await app.request("/__admin/health", {}, from("::1"))).json()).toHaveProperty("calls");
  });

  it("without OAuth2 (the local default) the admin API stays open to every caller, as documented", async () => {
    const app = createApp({ watch: false }, { logger: quietLogger }).app;
    expect((await app.request("/__admin/calls", {}, from("203.0.113.9"))).status).toBe(200);
  });
});
