import type { webcrypto } from "node:crypto";
import { Hono } from "hono";
import * as oauth from "oauth4webapi";
import { describe, expect, it } from "vitest";
import { createAuth } from "../../src/auth/auth.js";
import { refusedUrl, startReceiver } from "../support/receiver.js";
import {
  ALL_SCOPES,
  authSandbox,
  clientKeyPair,
  closeAfterTest,
  libraryOptions,
  libraryToken,
  TOKEN_ENDPOINT,
  tempFile,
} from "./oauth-support.js";

// A client's keys published at a jwksUrl on this machine, fetched at each private_key_jwt token request,
// from a real HTTP server on 127.0.0.1 (the sandbox's own outbound fetch).

const clientsAt = (url: string) => `clients:\n  - id: backend\n    jwksUrl: ${url}\n`;
const keys = clientKeyPair("published-1");

const asBackend = (app: Hono, privateKey: webcrypto.CryptoKey, kid = "published-1") =>
  libraryToken(app, "backend", oauth.PrivateKeyJwt({ key: privateKey, kid }));

describe("jwksUrl", () => {
  it("the keys are fetched from the URL: a token; a key rotated there counts at the next request", async () => {
    const { privateKey, jwk } = await keys;
    const next = await clientKeyPair("published-2");
    let published = [jwk];
    const server = await startReceiver(() => ({ status: 200, body: JSON.stringify({ keys: published }) }));
    closeAfterTest(server);
    const sandbox = authSandbox(clientsAt(server.url), {});

    await expect(asBackend(sandbox.app, privateKey)).resolves.toMatchObject({ token_type: "bearer" });
    expect(server.received[0]).toMatchObject({ method: "GET" });

    published = [next.jwk];
    await expect(asBackend(sandbox.app, next.privateKey, "published-2")).resolves.toMatchObject({
      token_type: "bearer",
    });
    await expect(asBackend(sandbox.app, privateKey)).rejects.toMatchObject({
      error: "invalid_client",
      error_description: expect.stringMatching(/No key in its jwksUrl http:\/\/127\.0\.0\.1:\d+\/fhir-hook matches/),
    });
  });

  it("nothing listening there → invalid_client saying the keys could not be read", async () => {
    const { privateKey } = await keys;
    const sandbox = authSandbox(clientsAt(await refusedUrl()), {});

    await expect(asBackend(sandbox.app, privateKey)).rejects.toMatchObject({
      error: "invalid_client",
      error_description: expect.stringMatching(/could not check client_assertion with its jwksUrl .*ECONNREFUSED/),
    });
  });

  it("a redirect is not followed → invalid_client", async () => {
    const { privateKey } = await keys;
    const server = await startReceiver(() => ({ status: 302, headers: { location: "https://keys.example.com/jwks" } }));
    closeAfterTest(server);
    const sandbox = authSandbox(clientsAt(server.url), {});

    await expect(asBackend(sandbox.app, privateKey)).rejects.toMatchObject({
      error: "invalid_client",
      error_description: expect.stringMatching(/Expected 200 OK/),
    });
  });

  it("a URL that does not answer in time → invalid_client naming the timeout", async () => {
    const { privateKey } = await keys;
    const server = await startReceiver(() => "hang");
    closeAfterTest(server);
    // The auth module on its own, with a short JWKS timeout (the sandbox's is 5 s).
    const auth = createAuth(
      {
        clientsFile: tempFile("clients.yaml", clientsAt(server.url)),
        tokenTtlMs: 300_000,
        tokenKeyFile: undefined,
        publicUrl: undefined,
        basePath: "",
        maxBody: 1024 * 1024,
        scopes: ALL_SCOPES,
        jwksTimeoutMs: 200,
      },
      {
        now: () => new Date(),
        monotonic: () => performance.now(),
        newId: () => crypto.randomUUID(),
        fetch,
        listeningUrl: () => "http://localhost",
      },
    );
    const app = new Hono();
    auth.mount(app as never);

    const refused = oauth
      .clientCredentialsGrantRequest(
        { issuer: "http://localhost", token_endpoint: TOKEN_ENDPOINT },
        { client_id: "backend" },
        oauth.PrivateKeyJwt({ key: privateKey, kid: "published-1" }),
        {},
        libraryOptions(app),
      )
      .then((res) => res.json());

    expect(await refused).toMatchObject({
      error: "invalid_client",
      error_description: expect.stringMatching(/did not answer within 200 ms/),
    });
  });
});
