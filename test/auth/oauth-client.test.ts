import type { Hono } from "hono";
import * as oauth from "oauth4webapi";
import { describe, expect, it } from "vitest";
import {
  confirm,
  dispense,
  dispensesFor,
  placeOrder,
  pushInbox,
  receiveAllocation,
  subscribeAll,
} from "../orders/pharmacy-client.js";
import { OPERATION_CASES } from "../routing/operation-messages.js";
import { expectOk } from "../routing/response-checks.js";
import { CONTRACT_OPERATION_IDS } from "../support/contract-operations.js";
import { post, responseHeader } from "../support/messages.js";
import {
  ALL_SCOPES,
  authSandbox,
  clientKeyPair,
  discover,
  ISSUER,
  libraryOptions,
  libraryToken,
  TOKEN_ENDPOINT,
  withToken,
} from "./oauth-support.js";

// CONTRACT §13 with a real OAuth2 client library (oauth4webapi): discovery, a token by each of the
// three client authentication methods, and then every operation of CONTRACT §3 with that token.

/** One RSA key pair for the file: making one takes a good part of a second. */
const backendKeys = clientKeyPair("backend-key-1");

async function sandboxWithClients(fetchImpl?: typeof fetch) {
  const keys = await backendKeys;
  const sandbox = authSandbox(
    `clients:
  - id: secret-client
    secret: "s3cret+with/odd=chars"
  - id: jwt-client
    jwks: { keys: [${JSON.stringify(keys.jwk)}] }
`,
    // The operations' Subscription names a receiver on this machine (127.0.0.1:9), which OAuth2 refuses unless
    // --push-allow names it (CONTRACT §15): named, as for a local test receiver.
    { pushAllow: ["*", "127.0.0.1"] },
    fetchImpl ? { fetch: fetchImpl } : {},
  );
  return { sandbox, app: sandbox.app, keys };
}

describe("discovery, as the library reads it", () => {
  it.each(["oidc", "oauth2"] as const)(
    "%s discovery: the issuer matches and names the token endpoint",
    async (algorithm) => {
      const { app } = await sandboxWithClients();

      const as = await discover(app, algorithm);

      expect(as).toMatchObject({
        issuer: ISSUER,
        token_endpoint: TOKEN_ENDPOINT,
        jwks_uri: `${ISSUER}/oauth2/jwks`,
        grant_types_supported: ["client_credentials"],
      });
      expect([...(as.token_endpoint_auth_methods_supported ?? [])].sort()).toEqual([
        "client_secret_basic",
        "client_secret_post",
        "private_key_jwt",
      ]);
      expect([...(as.scopes_supported ?? [])].sort()).toEqual([...ALL_SCOPES].sort());
    },
  );

  it("the access token passes the library's RFC 9068 validation against the published jwks_uri", async () => {
    const { app } = await sandboxWithClients();
    const { access_token } = await libraryToken(app, "secret-client", oauth.ClientSecretBasic("s3cret+with/odd=chars"));
    const as = await discover(app);

    const request = new Request(`${ISSUER}/uae-fhir/r4/$process-message`, {
      headers: { authorization: `Bearer ${access_token}` },
    });
    const claims = await oauth.validateJwtAccessToken(as, request, ISSUER, libraryOptions(app));

    expect(claims).toMatchObject({
      iss: ISSUER,
      aud: ISSUER,
      sub: "secret-client",
      client_id: "secret-client",
      scope: ALL_SCOPES.join(" "),
      workspace: "default",
    });
    expect(claims.exp - claims.iat).toBe(300);
    expect(claims.jti).toEqual(expect.any(String));
  });
});

/** The three client authentication methods, each as the library sends it. */
const METHODS: Array<[string, (keys: Awaited<ReturnType<typeof clientKeyPair>>) => [string, oauth.ClientAuth]]> = [
  ["client_secret_basic", () => ["secret-client", oauth.ClientSecretBasic("s3cret+with/odd=chars")]],
  ["client_secret_post", () => ["secret-client", oauth.ClientSecretPost("s3cret+with/odd=chars")]],
  [
    "private_key_jwt",
    (keys) => [
      "jwt-client",
      // SMART Backend Services: aud is the token endpoint (the library's default is the issuer, also accepted).
      oauth.PrivateKeyJwt(
        { key: keys.privateKey, kid: keys.jwk.kid },
        {
          [oauth.modifyAssertion]: (_header, payload) => {
            payload.aud = TOKEN_ENDPOINT;
          },
        },
      ),
    ],
  ],
];

/** Sends every operation with the client's token; the drug-order flow against a pushed order. */
async function everyOperation(
  app: Hono,
  client: Hono,
  sandbox: Awaited<ReturnType<typeof sandboxWithClients>>["sandbox"],
  inbox: ReturnType<typeof pushInbox>,
) {
  for (const operation of OPERATION_CASES.filter((c) => !c.orderFlow)) {
    const request = await operation.request(client);
    const reply = await post(client, request, { path: operation.path });
    expectOk(reply, request, operation.path);
  }
  await subscribeAll(client, inbox, ["PH-7"]);
  const placed = await placeOrder({ sandbox, app, inbox }, { pharmacies: ["PH-7"] });
  const task = placed.task("PH-7");
  const confirmed = await confirm(client, "PH-7", task, { availability: "available", options: [{ method: "pickup" }] });
  expect(responseHeader(confirmed.body).response?.code, JSON.stringify(confirmed.body)).toBe("ok");
  await inbox.channel("PH-7").next(); // the allocation push
  const allocation = await receiveAllocation(client, "PH-7", task.id as string);
  expect(responseHeader(allocation.body).response?.code, JSON.stringify(allocation.body)).toBe("ok");
  const dispensed = await dispense(client, "PH-7", dispensesFor(placed.requests));
  expect(responseHeader(dispensed.body).response?.code, JSON.stringify(dispensed.body)).toBe("ok");
}

describe("a token by each client authentication method, then every operation (CONTRACT §3, §13)", () => {
  it.each(METHODS)(
    "%s: the library gets a token, and all 18 operations answer 200 ok",
    { timeout: 30_000 },
    async (_, method) => {
      const inbox = pushInbox();
      const { sandbox, app, keys } = await sandboxWithClients(inbox.fetch);
      const [clientId, auth] = method(keys);

      const token = await libraryToken(app, clientId, auth);
      expect(token).toMatchObject({ token_type: "bearer", expires_in: 300, scope: ALL_SCOPES.join(" ") });

      await everyOperation(app, withToken(app, token.access_token), sandbox, inbox);

      const res = await app.request("/__admin/calls?direction=inbound");
      const { calls } = (await res.json()) as {
        calls: Array<{ operation: string | null; response: { status: number } }>;
      };
      const answered = new Set(calls.filter((c) => c.response.status === 200).map((c) => c.operation));
      for (const operation of CONTRACT_OPERATION_IDS) expect(answered, operation).toContain(operation);
      // Every message call was authorized: none was refused.
      expect(calls.filter((c) => c.operation !== null && c.response.status !== 200)).toEqual([]);
    },
  );
});
