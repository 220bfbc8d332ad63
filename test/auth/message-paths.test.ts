import type { AllergyIntolerance, Patient } from "fhir/r4.js";
import type { Hono } from "hono";
import * as oauth from "oauth4webapi";
import { describe, expect, it } from "vitest";
import { admin, listCalls } from "../admin/admin-client.js";
import { OPERATION_CASES } from "../routing/operation-messages.js";
import { envelope, example, messageBundle, post, STANDARD } from "../support/messages.js";
import { authSandbox, ISSUER, libraryOptions, libraryToken, SCOPE_OF, withToken } from "./oauth-support.js";

// The message paths as a resource server (CONTRACT §13, RFC 6750): 401 without a usable token, 403 without
// the operation's scope; what stays open. A 403 (a valid token) is journaled in the client's workspace; a 401 is
// an anonymous caller's and goes to the refused log, never a journal (CONTRACT §15, issue 21).

const CLIENTS = `clients:
  - { id: everything, secret: everything-secret }
  - { id: reader, secret: reader-secret, scopes: [patient-profile.read] }
  - { id: writer, secret: writer-secret, scopes: [patient-profile.write] }
  - { id: pharmacy, secret: pharmacy-secret, scopes: [drug-orders] }
  - { id: programs, secret: programs-secret, scopes: [health-programs] }
  - { id: elsewhere, secret: elsewhere-secret, workspace: clinic-b }
`;

function sandbox(now?: () => Date) {
  const s = authSandbox(CLIENTS, {}, now ? { now } : {});
  return s.app;
}

const tokenOf = async (app: Hono, id: string) =>
  (await libraryToken(app, id, oauth.ClientSecretPost(`${id === "magic-expired-token" ? "magic" : id}-secret`)))
    .access_token;

const allergy = () => messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")]);
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Splits `Bearer realm="…", error="…", …` into its parameters (RFC 6750 §3; values hold no quotes). */
function challenge(header: string | null): Record<string, string> {
  expect(header).toMatch(/^Bearer /);
  return Object.fromEntries([...(header ?? "").matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
}

describe("401: no usable access token", () => {
  const cases: Array<[string, (app: Hono) => Promise<Record<string, string>>, RegExp]> = [
    ["no Authorization header", async () => ({}), /send Authorization: Bearer/],
    [
      "Basic credentials",
      async () => ({ authorization: `Basic ${btoa("everything:everything-secret")}` }),
      /not a bearer token/,
    ],
    ["a bearer token that is not a JWT", async () => ({ authorization: "Bearer not-a-jwt" }), /not a JWT access token/],
    [
      "a token whose payload was altered (scope added)",
      async (app) => {
        const [head, payload, signature] = (await tokenOf(app, "reader")).split(".");
        const claims = JSON.parse(Buffer.from(payload as string, "base64url").toString());
        const forged = Buffer.from(JSON.stringify({ ...claims, scope: "patient-profile.write" })).toString("base64url");
        return bearer(`${head}.${forged}.${signature}`);
      },
      /signature does not verify/,
    ],
    [
      "a token of another sandbox (another signing key)",
      async () => bearer(await tokenOf(sandbox(), "everything")),
      /signature does not verify/,
    ],
    [
      "a token of the magic expired-token client",
      async (app) => bearer(await tokenOf(app, "magic-expired-token")),
      /expired/,
    ],
  ];

  it.each(cases)(
    "%s → 401 login, WWW-Authenticate Bearer error=invalid_token, in the refused log",
    async (_, headers, says) => {
      const app = sandbox();
      const request = allergy();

      const reply = await post(app, request, { headers: await headers(app) });

      expect(reply.status).toBe(401);
      expect(reply.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
      expect(reply.body).toMatchObject({
        resourceType: "OperationOutcome",
        issue: [{ severity: "error", code: "login" }],
      });
      expect(reply.body.issue[0].diagnostics).toMatch(says);
      const params = challenge(reply.headers.get("www-authenticate"));
      expect(params).toMatchObject({ realm: "uae-fhir-sandbox", error: "invalid_token" });
      expect(params.error_description).toMatch(says);
      // Changed for issue 21: a 401 was journaled; now it is the refused log's, and the journal holds none of it
      // (only the token requests some cases made).
      expect((await listCalls(app)).filter((c) => c.request.path === STANDARD)).toEqual([]);
      const { calls } = (await admin(app, "GET", "/refused")).body;
      expect(calls).toMatchObject([{ workspace: "default", operation: "add-allergy", response: { status: 401 } }]);
    },
  );

  it("a refused message changes nothing: sent again with a token, it is processed, not a resend", async () => {
    const app = sandbox();
    const request = allergy();
    await post(app, request);

    const reply = await post(app, request, { headers: bearer(await tokenOf(app, "everything")) });

    expect(reply.status).toBe(200);
    expect(reply.headers.get("x-sandbox-duplicate")).toBeNull();
  });

  it("auth comes first: a body that is not even JSON is a 401, in the refused log with operation null", async () => {
    const app = sandbox();

    const reply = await post(app, "{not json");

    expect(reply.status).toBe(401);
    expect(await listCalls(app)).toEqual([]);
    const { calls } = (await admin(app, "GET", "/refused")).body;
    expect(calls).toMatchObject([{ operation: null, response: { status: 401 } }]);
  });

  it("the library parses the challenge: error invalid_token", async () => {
    const app = sandbox();

    const refused = oauth.protectedResourceRequest(
      await tokenOf(app, "magic-expired-token"),
      "POST",
      new URL(STANDARD, ISSUER),
      new Headers({ "content-type": "application/json" }),
      envelope(allergy()),
      libraryOptions(app),
    );

    await expect(refused).rejects.toMatchObject({
      status: 401,
      cause: [{ scheme: "bearer", parameters: { error: "invalid_token" } }],
    });
  });
});

describe("token expiry (--token-ttl, the sandbox's clock)", () => {
  it("a token works until its exp and is refused from then on, naming when it expired", async () => {
    let now = new Date("2026-03-01T08:00:00.000Z");
    const app = sandbox(() => now);
    const token = await tokenOf(app, "everything");
    const view = () => messageBundle("view-patient-profile", [example<Patient>("patient-example.json")]);

    now = new Date("2026-03-01T08:04:59.000Z");
    expect((await post(app, view(), { headers: bearer(token) })).status).toBe(200);

    now = new Date("2026-03-01T08:05:00.000Z");
    const expired = await post(app, view(), { headers: bearer(token) });
    expect(expired.status).toBe(401);
    expect(expired.body.issue[0].diagnostics).toMatch(/expired at 2026-03-01T08:05:00.000Z.*POST \/oauth2\/token/);

    const renewed = await tokenOf(app, "everything");
    expect((await post(app, view(), { headers: bearer(renewed) })).status).toBe(200);
  });
});

/** A client holding only this scope (see CLIENTS). */
const CLIENT_WITH: Record<string, string> = {
  "patient-profile.read": "reader",
  "patient-profile.write": "writer",
  "drug-orders": "pharmacy",
  "health-programs": "programs",
};

describe("403: a token without the operation's scope", () => {
  it.each(OPERATION_CASES.map((c) => [c.id, c] as const))(
    "%s: refused for every other scope, named in the 403",
    async (id, operation) => {
      const app = sandbox();
      const needed = SCOPE_OF[id] as string;
      // The record an update or remove is about is added with a token that may.
      const request = await operation.request(withToken(app, await tokenOf(app, "everything")));

      for (const [scope, client] of Object.entries(CLIENT_WITH)) {
        if (scope === needed) continue;
        const reply = await post(app, request, { path: operation.path, headers: bearer(await tokenOf(app, client)) });

        expect(reply.status, `${id} with ${scope}`).toBe(403);
        expect(reply.body).toMatchObject({ resourceType: "OperationOutcome", issue: [{ code: "forbidden" }] });
        expect(reply.body.issue[0].diagnostics).toContain(`${id} needs the scope ${needed}`);
        expect(challenge(reply.headers.get("www-authenticate"))).toMatchObject({
          error: "insufficient_scope",
          scope: needed,
        });
      }
      // Each refusal is journaled with its operation: the same message, refused three times.
      const messageId = request.entry?.[0]?.resource?.id as string;
      const res = await app.request(`/__admin/calls?messageId=${encodeURIComponent(messageId)}`);
      const { calls } = (await res.json()) as { calls: Array<{ operation: string; response: { status: number } }> };
      expect(calls.map((c) => [c.operation, c.response.status])).toEqual([
        [id, 403],
        [id, 403],
        [id, 403],
      ]);
    },
  );

  it("the scope that fits lets the message through", async () => {
    const app = sandbox();

    const reply = await post(app, allergy(), { headers: bearer(await tokenOf(app, "writer")) });

    expect(reply.status).toBe(200);
  });
});
