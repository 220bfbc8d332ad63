import type { AllergyIntolerance, Bundle, Patient } from "fhir/r4.js";
import type { Hono } from "hono";
import * as oauth from "oauth4webapi";
import { describe, expect, it } from "vitest";
import { admin, manualClock } from "../admin/admin-client.js";
import { authSandbox, libraryToken } from "../auth/oauth-support.js";
import { example, messageBundle, post, type Reply, responseHeader, STANDARD } from "../support/messages.js";
import { WORKSPACE_HEADER } from "./workspace-client.js";

// CONTRACT §13: with --auth oauth2 a message acts in its OAuth2 client's workspace, and a header or prefix
// cannot override it. We refuse one that names another workspace (403) rather than ignore it in silence.

const CLIENTS = `clients:
  - { id: clinic-a-ehr, secret: a-secret, workspace: clinic-a }
  - { id: clinic-b-ehr, secret: b-secret, workspace: clinic-b }
  - { id: default-ehr, secret: d-secret }
workspaces:
  clinic-a: { adminToken: clinic-a-admin }
  clinic-b: { adminToken: clinic-b-admin, seed: another-seed }
`;

const SECRET: Record<string, string> = {
  "clinic-a-ehr": "a-secret",
  "clinic-b-ehr": "b-secret",
  "default-ehr": "d-secret",
};
const tokenOf = async (app: Hono, client: string) =>
  (await libraryToken(app, client, oauth.ClientSecretPost(SECRET[client] as string))).access_token;
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

const allergy = () => messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")]);
const messageId = (bundle: Bundle) => responseHeader(bundle).id as string;

interface Call {
  messageId: string | null;
  request: { path: string };
  response: { status: number };
}

/** A workspace's journal, read with that workspace's own admin token. */
async function callsOf(app: Hono, workspace: string, token: string): Promise<Call[]> {
  const prefix = workspace === "default" ? "" : `/w/${workspace}`;
  const reply = await admin(app, "GET", "/calls", { prefix, token });
  expect(reply.status).toBe(200);
  return reply.body.calls;
}

/** The messages a workspace's journal holds (discovery and token requests left out), and their answers' status. */
const journalOf = async (app: Hono, workspace: string, token: string): Promise<Array<[string, number]>> =>
  (await callsOf(app, workspace, token))
    .filter((c) => c.messageId !== null)
    .map((c) => [c.messageId as string, c.response.status]);

describe("OAuth2 clients of different workspaces", () => {
  it("driven at the same time, each acts in its client's workspace only", async () => {
    const { app } = authSandbox(CLIENTS, { adminToken: "global" });
    const [tokenA, tokenB] = await Promise.all([tokenOf(app, "clinic-a-ehr"), tokenOf(app, "clinic-b-ehr")]);
    const sentA = Array.from({ length: 5 }, allergy);
    const sentB = Array.from({ length: 5 }, allergy);

    const replies = await Promise.all([
      ...sentA.map((m) => post(app, m, { headers: bearer(tokenA) })),
      ...sentB.map((m) => post(app, m, { headers: bearer(tokenB) })),
    ]);
    expect(replies.map((r) => r.status)).toEqual(Array(10).fill(200));

    expect((await journalOf(app, "clinic-a", "clinic-a-admin")).map(([id]) => id).sort()).toEqual(
      sentA.map(messageId).sort(),
    );
    expect((await journalOf(app, "clinic-b", "clinic-b-admin")).map(([id]) => id).sort()).toEqual(
      sentB.map(messageId).sort(),
    );
    expect(await journalOf(app, "default", "global")).toEqual([]);
    // Token requests too are journaled in their client's workspace, once it is authenticated.
    const tokenRequests = async (workspace: string, token: string) =>
      (await callsOf(app, workspace, token)).filter((c) => c.request.path === "/oauth2/token").length;
    expect(await tokenRequests("clinic-a", "clinic-a-admin")).toBe(1);
    expect(await tokenRequests("clinic-b", "clinic-b-admin")).toBe(1);
    expect(await tokenRequests("default", "global")).toBe(0);
  });

  it.each([
    ["the path prefix", { path: `/w/clinic-b${STANDARD}` }],
    ["the X-Sandbox-Workspace header", { headers: { [WORKSPACE_HEADER]: "clinic-b" } }],
  ])(
    "naming another workspace by %s beside a token is refused 403, journaled in the token's workspace",
    async (_, how) => {
      const { app } = authSandbox(CLIENTS);
      const token = await tokenOf(app, "clinic-a-ehr");
      const message = allergy();

      const reply: Reply = await post(app, message, {
        ...("path" in how ? { path: how.path } : {}),
        headers: { ...bearer(token), ...("headers" in how ? how.headers : {}) },
      });

      expect(reply.status).toBe(403);
      expect(reply.body).toMatchObject({ resourceType: "OperationOutcome", issue: [{ code: "forbidden" }] });
      expect(reply.body.issue[0].diagnostics).toMatch(
        /names workspace clinic-b.*client clinic-a-ehr acts in workspace clinic-a/,
      );
      expect(await journalOf(app, "clinic-a", "clinic-a-admin")).toEqual([[messageId(message), 403]]);
      expect(await journalOf(app, "clinic-b", "clinic-b-admin")).toEqual([]);
    },
  );

  it("naming the token's own workspace is fine", async () => {
    const { app } = authSandbox(CLIENTS);
    const token = await tokenOf(app, "clinic-a-ehr");
    const reply = await post(app, allergy(), { path: `/w/clinic-a${STANDARD}`, headers: bearer(token) });
    expect(reply.status).toBe(200);
  });

  // Changed for issue 21: the 401 was journaled in clinic-b, where 105 of them could evict the team's calls. It is
  // now kept in the refused log, shown to clinic-b's admin as one that named clinic-b (CONTRACT §15).
  it("a message without a token gets its 401 in the refused log, under the workspace it names, not its journal", async () => {
    const { app } = authSandbox(CLIENTS);
    const message = allergy();
    expect((await post(app, message, { path: `/w/clinic-b${STANDARD}` })).status).toBe(401);
    expect(await journalOf(app, "clinic-b", "clinic-b-admin")).toEqual([]);
    const refused = await admin(app, "GET", "/refused", { prefix: "/w/clinic-b", token: "clinic-b-admin" });
    expect(refused.body.calls).toMatchObject([{ workspace: "clinic-b", response: { status: 401 } }]);
    const elsewhere = await admin(app, "GET", "/refused", { prefix: "/w/clinic-a", token: "clinic-a-admin" });
    expect(elsewhere.body.calls).toEqual([]);
  });

  it("a workspace's seed (clients file) gives its generated patients; the others keep --seed", async () => {
    const { app } = authSandbox(CLIENTS);
    const view = () =>
      messageBundle("view-patient-profile", [
        { resourceType: "Patient", identifier: [{ system: "urn:ae:emirates-id", value: "784-1990-1234567-6" }] },
      ] as Patient[]);
    const nameIn = async (client: string) => {
      const reply = await post(app, view(), { headers: bearer(await tokenOf(app, client)) });
      const patient = reply.body.entry.find((e: { resource: Patient }) => e.resource.resourceType === "Patient");
      return JSON.stringify(patient.resource.name);
    };
    const [a, b, d] = [await nameIn("clinic-a-ehr"), await nameIn("clinic-b-ehr"), await nameIn("default-ehr")];
    expect(a).toBe(d);
    expect(b).not.toBe(a);
  });

  it("the clients file's workspaces are named: kept however idle", async () => {
    const clock = manualClock("2026-03-01T08:00:00.000Z");
    const { app } = authSandbox(CLIENTS, { adminToken: "global", workspaceTtlMs: 60_000 }, { now: clock.now });
    await post(app, allergy(), { headers: bearer(await tokenOf(app, "clinic-a-ehr")) });
    clock.set("2026-03-08T08:00:00.000Z");
    const reply = await admin(app, "GET", "/workspaces", { token: "global" });
    expect(reply.body.workspaces.map((w: { id: string; named: boolean }) => [w.id, w.named])).toEqual([
      ["default", true],
      ["clinic-a", true],
    ]);
    expect(reply.body.limits.named).toEqual(["clinic-a", "clinic-b", "default"]);
  });
});

describe("admin tokens and workspaces", () => {
  it("a workspace's admin token acts on its workspace only", async () => {
    const { app } = authSandbox(CLIENTS, { adminToken: "global" });
    const inA = { prefix: "/w/clinic-a" };
    expect((await admin(app, "GET", "/calls", { ...inA, token: "clinic-a-admin" })).status).toBe(200);
    expect((await admin(app, "GET", "/calls", { ...inA, token: "global" })).status).toBe(200);
    expect((await admin(app, "GET", "/calls", { ...inA, token: "clinic-b-admin" })).status).toBe(401);
    expect((await admin(app, "GET", "/calls", { ...inA })).status).toBe(401);
    // By header as by prefix; and not on the default workspace.
    const byHeader = { headers: { [WORKSPACE_HEADER]: "clinic-b" }, token: "clinic-b-admin" };
    expect((await admin(app, "POST", "/reset", byHeader)).status).toBe(200);
    expect((await admin(app, "GET", "/calls", { token: "clinic-a-admin" })).status).toBe(401);
    // The sandbox-wide endpoints take the global token only.
    const wide = await admin(app, "GET", "/workspaces", { token: "clinic-a-admin" });
    expect(wide.status).toBe(401);
    expect(wide.body.issue[0].diagnostics).toMatch(/opens only that workspace's admin API/);
    expect((await admin(app, "DELETE", "/workspaces/clinic-a", { token: "clinic-a-admin" })).status).toBe(401);
    expect((await admin(app, "GET", "/workspaces", { token: "global" })).status).toBe(200);
  });

  it("no --admin-token while workspaces have their own: the sandbox-wide endpoints are refused (403)", async () => {
    const { app } = authSandbox(CLIENTS);
    for (const [method, path] of [
      ["GET", "/workspaces"],
      ["DELETE", "/workspaces/clinic-a"],
      ["POST", "/scenarios/reload"],
    ] as const) {
      const reply = await admin(app, method, path, { token: "clinic-a-admin" });
      expect(reply.status, `${method} ${path}`).toBe(403);
      expect(reply.body.issue[0]).toMatchObject({ code: "forbidden" });
      expect(reply.body.issue[0].diagnostics).toMatch(/--admin-token/);
    }
    // The default workspace has no token of its own: its admin API stays open.
    expect((await admin(app, "GET", "/calls")).status).toBe(200);
  });

  it("no admin token anywhere: everything is open, the workspaces list too (as a single-user sandbox)", async () => {
    const { app } = authSandbox("clients:\n  - { id: suite, secret: suite-secret, workspace: team-a }\n");
    expect((await admin(app, "GET", "/workspaces")).status).toBe(200);
  });
});

describe("--max-workspaces with OAuth2 clients", () => {
  it("callers without a token who name new workspaces cannot take the room of the clients' workspaces", async () => {
    // default, clinic-a and clinic-b are named (the clients file): room is kept for them, so one more is left.
    const { app } = authSandbox(CLIENTS, { adminToken: "global", maxWorkspaces: 4 });
    const strays: number[] = [];
    for (const name of ["stray-1", "stray-2", "stray-3"]) {
      strays.push((await post(app, allergy(), { path: `/w/${name}${STANDARD}` })).status);
    }
    expect(strays).toEqual([401, 401, 401]);

    // clinic-b's workspace was not made yet: its client still gets a token and acts in it.
    const sent = allergy();
    const reply = await post(app, sent, { headers: bearer(await tokenOf(app, "clinic-b-ehr")) });
    expect(reply.status).toBe(200);
    expect(await journalOf(app, "clinic-b", "clinic-b-admin")).toEqual([[messageId(sent), 200]]);
  });

  // Changed for issue 21: their 401s and failed token requests were journaled in default; now in no journal.
  it("callers without a token make no workspace: their 401s and failed token requests go to the refused log", async () => {
    const { app } = authSandbox(CLIENTS, { adminToken: "global" });
    const message = allergy();
    expect((await post(app, message, { path: `/w/stray-1${STANDARD}` })).status).toBe(401);
    const badToken = await app.request("/w/stray-2/oauth2/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=client_credentials&client_id=nobody&client_secret=x",
    });
    expect(badToken.status).toBe(400);
    expect(((await badToken.json()) as { error: string }).error).toBe("invalid_client");
    expect((await app.request("/w/stray-3/.well-known/openid-configuration")).status).toBe(200);

    const listed = await admin(app, "GET", "/workspaces", { token: "global" });
    const ids = (listed.body.workspaces as Array<{ id: string }>).map((w) => w.id);
    expect(ids.filter((id) => id.startsWith("stray-"))).toEqual([]);
    expect(await callsOf(app, "default", "global")).toEqual([]);
    const refused = await admin(app, "GET", "/refused", { token: "global" });
    expect(
      refused.body.calls.map((c: { workspace: string; response: { status: number } }) => [
        c.workspace,
        c.response.status,
      ]),
    ).toEqual([
      ["stray-1", 401],
      ["stray-2", 400],
    ]);
  });
});
