import type { AllergyIntolerance } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { example, messageBundle, post } from "../support/messages.js";
import { admin } from "./admin-client.js";

const TOKEN = "s3cret";

/** Admin endpoints behind the token (CONTRACT §9: all but /health). */
const GUARDED: Array<[method: string, path: string, body?: unknown]> = [
  ["GET", "/calls"],
  ["GET", "/calls/1"],
  ["DELETE", "/calls"],
  ["POST", "/calls/verify", { operation: "add-allergy" }],
  ["POST", "/calls/wait", { operation: "add-allergy", timeoutMs: 0 }],
  ["GET", "/operations"],
  ["POST", "/reset"],
];

describe("the admin bearer token (CONTRACT §9, --admin-token)", () => {
  it.each(GUARDED)("%s %s without a token → 401 OperationOutcome with WWW-Authenticate", async (method, path, body) => {
    const { app } = createApp({ adminToken: TOKEN });

    const reply = await admin(app, method, path, body === undefined ? {} : { body });

    expect(reply.status).toBe(401);
    expect(reply.headers.get("www-authenticate")).toMatch(/^Bearer\b/);
    expect(reply.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    expect(reply.body).toMatchObject({
      resourceType: "OperationOutcome",
      issue: [{ severity: "error", code: "login" }],
    });
    expect(reply.body.issue[0].diagnostics).toMatch(/Bearer/);
  });

  it.each([
    ["a wrong token", { authorization: "Bearer not-the-token" }],
    ["a token that only starts right", { authorization: `Bearer ${TOKEN}x` }],
    ["basic credentials", { authorization: `Basic ${Buffer.from(`admin:${TOKEN}`).toString("base64")}` }],
    ["the token without the Bearer scheme", { authorization: TOKEN }],
  ])("GET /calls with %s → 401", async (_, headers) => {
    const { app } = createApp({ adminToken: TOKEN });

    const reply = await admin(app, "GET", "/calls", { headers });

    expect(reply.status).toBe(401);
    expect(reply.headers.get("www-authenticate")).toMatch(/^Bearer\b/);
    expect(reply.body.resourceType).toBe("OperationOutcome");
  });

  it.each(GUARDED)("%s %s with the right token → 200", async (method, path, body) => {
    const { app } = createApp({ adminToken: TOKEN });
    // A call with id 1 exists for GET /calls/1; verify and wait then hold too.
    await post(app, messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")]));

    const reply = await admin(app, method, path, { token: TOKEN, ...(body === undefined ? {} : { body }) });

    expect(reply.status).toBe(200);
    expect(reply.body.resourceType).not.toBe("OperationOutcome");
  });

  it("leaves the message paths open", async () => {
    const { app, journal } = createApp({ adminToken: TOKEN });

    const reply = await post(
      app,
      messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")]),
    );

    expect(reply.status).toBe(200);
    expect(reply.headers.get("www-authenticate")).toBeNull();
    expect(journal.size).toBe(1);
  });

  it("keeps /health open with a token configured, and still accepts one", async () => {
    const { app } = createApp({ adminToken: TOKEN });

    const open = await admin(app, "GET", "/health");
    const withToken = await admin(app, "GET", "/health", { token: TOKEN });

    expect(open.status).toBe(200);
    expect(open.body.status).toBe("ok");
    expect(withToken.status).toBe(200);
  });

  it("does not let a path that merely ends in /health through", async () => {
    const { app } = createApp({ adminToken: TOKEN });

    const reply = await admin(app, "GET", "/calls/x/__admin/health");

    expect(reply.status).toBe(401);
  });
});
