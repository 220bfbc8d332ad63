import type { webcrypto } from "node:crypto";
import type { Hono } from "hono";
import * as oauth from "oauth4webapi";
import { describe, expect, it } from "vitest";
import { authSandbox, clientKeyPair, libraryOptions, libraryToken, TOKEN_ENDPOINT } from "./oauth-support.js";

// POST /oauth2/token (CONTRACT §13): the client-credentials grant, errors as RFC 6749 §5.2, the magic
// clients. Expected codes and statuses are written from RFC 6749 §5.2 and the issue, case by case.

const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`;

const CLIENTS = `clients:
  - id: clinic
    secret: clinic-secret
    scopes: [patient-profile.read, patient-profile.write]
  - id: no-scopes
    secret: no-scopes-secret
    scopes: []
  - id: switched-off
    secret: switched-off-secret
    disabled: true
`;

function sandbox(clients = CLIENTS, now?: () => Date) {
  const s = authSandbox(clients, {}, now ? { now } : {});
  return s.app;
}

interface TokenReply {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: the token endpoint answers arbitrary JSON
  body: any;
}

/** A raw token request: form parameters (or a string body), headers. */
async function tokenRequest(
  app: Hono,
  params: Record<string, string> | string,
  headers: Record<string, string> = {},
  method = "POST",
): Promise<TokenReply> {
  const res = await app.request("/oauth2/token", {
    method,
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    ...(method === "GET" ? {} : { body: typeof params === "string" ? params : new URLSearchParams(params).toString() }),
  });
  return { status: res.status, headers: res.headers, body: await res.json() };
}

/** RFC 6749 §5.1/§5.2: token answers are JSON and never cached. */
function expectNoStore(reply: TokenReply) {
  expect(reply.headers.get("content-type")).toMatch(/^application\/json/);
  expect(reply.headers.get("cache-control")).toBe("no-store");
  expect(reply.headers.get("pragma")).toBe("no-cache");
}

const GRANT = { grant_type: "client_credentials" };

/** Requests that must fail, and how (RFC 6749 §5.2; the issue for 401 on Basic and 429). */
const REFUSED: Array<{
  name: string;
  params: Record<string, string> | string;
  headers?: Record<string, string>;
  status: number;
  error: string;
  challenge?: RegExp;
  says: RegExp;
}> = [
  {
    name: "a JSON body",
    params: JSON.stringify(GRANT),
    headers: { "content-type": "application/json" },
    status: 400,
    error: "invalid_request",
    says: /x-www-form-urlencoded/,
  },
  {
    name: "no grant_type",
    params: { client_id: "clinic", client_secret: "clinic-secret" },
    status: 400,
    error: "invalid_request",
    says: /grant_type/,
  },
  {
    name: "grant_type twice",
    params: "grant_type=client_credentials&grant_type=client_credentials&client_id=clinic&client_secret=clinic-secret",
    status: 400,
    error: "invalid_request",
    says: /grant_type.*more than once/,
  },
  {
    name: "the password grant",
    params: { grant_type: "password", username: "u", password: "p" },
    headers: { authorization: basic("clinic", "clinic-secret") },
    status: 400,
    error: "unsupported_grant_type",
    says: /client_credentials/,
  },
  {
    name: "two authentication methods (Basic and client_secret)",
    params: { ...GRANT, client_id: "clinic", client_secret: "clinic-secret" },
    headers: { authorization: basic("clinic", "clinic-secret") },
    status: 400,
    error: "invalid_request",
    says: /more than one client authentication method/,
  },
  {
    name: "no client authentication at all",
    params: { ...GRANT, client_id: "clinic" },
    status: 401,
    error: "invalid_client",
    challenge: /^Basic /,
    says: /No client authentication/,
  },
  {
    name: "an unknown client, by Basic",
    params: GRANT,
    headers: { authorization: basic("nobody", "x") },
    status: 401,
    error: "invalid_client",
    challenge: /^Basic /,
    says: /Unknown client nobody/,
  },
  {
    name: "a wrong secret by Basic (401 with the Basic challenge)",
    params: GRANT,
    headers: { authorization: basic("clinic", "wrong") },
    status: 401,
    error: "invalid_client",
    challenge: /^Basic realm=/,
    says: /secret of clinic is wrong/,
  },
  {
    name: "a wrong secret by client_secret_post (400, no challenge)",
    params: { ...GRANT, client_id: "clinic", client_secret: "wrong" },
    status: 400,
    error: "invalid_client",
    says: /secret of clinic is wrong/,
  },
  {
    name: "a Bearer token instead of client credentials",
    params: GRANT,
    headers: { authorization: "Bearer abc" },
    status: 401,
    error: "invalid_client",
    challenge: /^Basic /,
    says: /not Bearer/,
  },
  {
    name: "Basic for one client, client_id of another",
    params: { ...GRANT, client_id: "no-scopes" },
    headers: { authorization: basic("clinic", "clinic-secret") },
    status: 400,
    error: "invalid_request",
    says: /not the client of the Authorization header/,
  },
  {
    name: "a client allowed no scope",
    params: { ...GRANT, client_id: "no-scopes", client_secret: "no-scopes-secret" },
    status: 400,
    error: "unauthorized_client",
    says: /no scope/,
  },
  {
    name: "an unknown scope",
    params: { ...GRANT, client_id: "clinic", client_secret: "clinic-secret", scope: "system/*.read" },
    status: 400,
    error: "invalid_scope",
    says: /Unknown scope system\/\*\.read; the sandbox's scopes are: .*patient-profile\.read/,
  },
  {
    name: "a scope the client is not allowed",
    params: {
      ...GRANT,
      client_id: "clinic",
      client_secret: "clinic-secret",
      scope: "patient-profile.read drug-orders",
    },
    status: 400,
    error: "invalid_scope",
    says: /clinic may not have drug-orders/,
  },
  {
    name: "an empty scope",
    params: { ...GRANT, client_id: "clinic", client_secret: "clinic-secret", scope: " " },
    status: 400,
    error: "invalid_scope",
    says: /scope is empty/,
  },
  {
    name: "a client disabled in the clients file",
    params: GRANT,
    headers: { authorization: basic("switched-off", "switched-off-secret") },
    status: 401,
    error: "invalid_client",
    challenge: /^Basic /,
    says: /switched-off is disabled/,
  },
  {
    name: "the magic disabled client",
    params: { ...GRANT, client_id: "magic-disabled", client_secret: "magic-secret" },
    status: 400,
    error: "invalid_client",
    says: /magic-disabled is disabled/,
  },
  {
    name: "the magic rate-limited client (429, Retry-After)",
    params: GRANT,
    headers: { authorization: basic("magic-rate-limited", "magic-secret") },
    status: 429,
    error: "temporarily_unavailable",
    says: /Retry after 5 seconds/,
  },
];

describe("token request errors (RFC 6749 §5.2)", () => {
  it.each(REFUSED)("$name → $status $error", async ({ params, headers, status, error, challenge, says }) => {
    const app = sandbox();

    const reply = await tokenRequest(app, params, headers);

    expect(reply.status).toBe(status);
    expect(reply.body).toEqual({ error, error_description: expect.stringMatching(says) });
    expectNoStore(reply);
    if (challenge) expect(reply.headers.get("www-authenticate")).toMatch(challenge);
    else expect(reply.headers.get("www-authenticate")).toBeNull();
    if (status === 429) expect(reply.headers.get("retry-after")).toBe("5");
  });

  it("GET on the token endpoint → 405 invalid_request with Allow: POST", async () => {
    const reply = await tokenRequest(sandbox(), {}, {}, "GET");

    expect(reply.status).toBe(405);
    expect(reply.headers.get("allow")).toBe("POST");
    expect(reply.body.error).toBe("invalid_request");
  });

  it("the library reads the refusals: a Basic challenge for a wrong Basic secret, invalid_client for a posted one", async () => {
    const app = sandbox();

    await expect(libraryToken(app, "clinic", oauth.ClientSecretBasic("wrong"))).rejects.toMatchObject({
      status: 401,
      cause: [{ scheme: "basic", parameters: { realm: "uae-fhir-sandbox" } }],
    });
    await expect(libraryToken(app, "clinic", oauth.ClientSecretPost("wrong"))).rejects.toMatchObject({
      status: 400,
      error: "invalid_client",
    });
  });
});

describe("token request successes", () => {
  it("a scope subset: the token has just those scopes", async () => {
    const reply = await tokenRequest(sandbox(), {
      ...GRANT,
      client_id: "clinic",
      client_secret: "clinic-secret",
      scope: "patient-profile.read",
    });

    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      access_token: expect.any(String),
      token_type: "Bearer",
      expires_in: 300,
      scope: "patient-profile.read",
    });
    expectNoStore(reply);
  });

  it("Basic credentials as curl -u sends them (not form-encoded) are accepted too", async () => {
    const app = sandbox(`clients:
  - { id: curl-user, secret: "a+b c%" }
`);
    const raw = `Basic ${Buffer.from("curl-user:a+b c%").toString("base64")}`;

    const reply = await tokenRequest(app, GRANT, { authorization: raw });

    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  });

  it("--token-ttl sets expires_in and the token's exp", async () => {
    const s = authSandbox(CLIENTS, { tokenTtlMs: 90_000 });

    const token = await libraryToken(s.app, "clinic", oauth.ClientSecretPost("clinic-secret"));

    expect(token.expires_in).toBe(90);
    const claims = JSON.parse(Buffer.from(token.access_token.split(".")[1] as string, "base64url").toString());
    expect(claims.exp - claims.iat).toBe(90);
  });

  it("the journal records the token request with its secrets and the access token redacted", async () => {
    const app = sandbox();
    await tokenRequest(app, { ...GRANT, client_id: "clinic", client_secret: "clinic-secret" });

    const { calls } = (await (await app.request("/__admin/calls")).json()) as {
      calls: Array<{ request: { path: string; body: string }; response: { status: number; body: unknown } }>;
    };

    const call = calls.find((c) => c.request.path === "/oauth2/token");
    expect(call?.request.body).toBe("grant_type=client_credentials&client_id=clinic&client_secret=[redacted]");
    expect(call?.response).toMatchObject({ status: 200, body: { access_token: "[redacted]", token_type: "Bearer" } });
    expect(JSON.stringify(calls)).not.toContain("clinic-secret");
  });
});

/** A form of distinct, empty-valued keys `k0=&k1=&…` as long as `bytes` (the default --max-body is 1 MiB). */
function distinctKeys(bytes: number): { body: string; keys: number } {
  const parts: string[] = [];
  let length = 0;
  for (let i = 0; ; i++) {
    const part = `k${i}=`;
    if (length + part.length + 1 > bytes) return { body: parts.join("&"), keys: parts.length };
    parts.push(part);
    length += part.length + 1;
  }
}

describe("the token form's budget (issue 21: linear in its length, at most 32 parameters)", () => {
  it("a 1 MiB form of distinct keys is refused invalid_request at once, naming the limit (it froze the process 132 s)", async () => {
    const app = sandbox();
    const credentials = `${new URLSearchParams(GRANT)}&client_id=clinic&client_secret=clinic-secret&`;
    const { body, keys } = distinctKeys(1024 * 1024 - credentials.length);
    expect(keys).toBeGreaterThan(100_000);

    const began = performance.now();
    const reply = await tokenRequest(app, credentials + body);
    const ms = performance.now() - began;

    expect(reply.status).toBe(400);
    expect(reply.body).toEqual({
      error: "invalid_request",
      error_description: expect.stringMatching(new RegExp(`has ${keys + 3} parameters.*at most 32`)),
    });
    expectNoStore(reply);
    // Generous for a loaded machine: the fix takes milliseconds, the quadratic check took minutes.
    expect(ms).toBeLessThan(2_000);
    // Refused before any client is known, so kept in the refused log (no journal's): the first 32 parameters,
    // redacted, and how many more came.
    const { calls } = (await (await app.request("/__admin/refused")).json()) as {
      calls: Array<{ request: { path: string; body: string } }>;
    };
    const kept = calls.find((c) => c.request.path === "/oauth2/token")?.request.body ?? "";
    expect(kept).toMatch(
      new RegExp(
        `^grant_type=client_credentials&client_id=clinic&client_secret=\\[redacted\\]&k0=&.*&k28=&… \\(${keys + 3 - 32} more parameters not kept\\)$`,
      ),
    );
    expect(kept).not.toContain("clinic-secret");
  });

  it("32 parameters are taken (unknown ones ignored, RFC 6749 §3.2); 33 are refused", async () => {
    const app = sandbox();
    const credentials = { ...GRANT, client_id: "clinic", client_secret: "clinic-secret" };
    const extra = (n: number) => Array.from({ length: n }, (_, i) => `extra${i}=x`).join("&");

    const at = await tokenRequest(app, `${new URLSearchParams(credentials)}&${extra(29)}`);
    const over = await tokenRequest(app, `${new URLSearchParams(credentials)}&${extra(30)}`);

    expect(at.status).toBe(200);
    expect(over).toMatchObject({ status: 400, body: { error: "invalid_request" } });
    expect(over.body.error_description).toMatch(/has 33 parameters/);
  });

  it("repeated parameters are all named, within the limit (empty pieces between '&'s are not parameters)", async () => {
    const reply = await tokenRequest(
      sandbox(),
      "grant_type=client_credentials&&scope=a&client_id=clinic&&scope=b&client_id=clinic&client_secret=x",
    );

    expect(reply).toMatchObject({ status: 400, body: { error: "invalid_request" } });
    expect(reply.body.error_description).toBe("Parameter scope, client_id is given more than once; give each once.");
  });
});

/** A clients file with one private_key_jwt client whose public key is `jwk`. */
const jwtClients = (jwk: object) => `clients:
  - id: backend
    jwks: { keys: [${JSON.stringify(jwk)}] }
`;

type Modify = (header: Record<string, unknown>, payload: Record<string, unknown>) => void;

/** private_key_jwt through the library, the assertion changed by `modify` just before signing. */
function assertionToken(
  app: Hono,
  key: webcrypto.CryptoKey,
  kid: string | undefined,
  modify: Modify = () => undefined,
) {
  const auth = oauth.PrivateKeyJwt(kid === undefined ? key : { key, kid }, {
    [oauth.modifyAssertion]: (header, payload) => modify(header as never, payload as never),
  });
  return libraryToken(app, "backend", auth);
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

describe("private_key_jwt (RFC 7523 as SMART Backend Services profiles it)", () => {
  const keys = clientKeyPair("key-1");
  const otherKeys = clientKeyPair("key-1");

  it.each<[string, Modify, RegExp]>([
    [
      "aud of another server",
      (_, p) => {
        p.aud = "https://elsewhere.example/token";
      },
      /aud .*token endpoint URL, http:\/\/localhost\/oauth2\/token/,
    ],
    [
      "an expired assertion",
      (_, p) => {
        p.exp = nowSeconds() - 10;
      },
      /expired/,
    ],
    [
      "exp more than five minutes ahead",
      (_, p) => {
        p.exp = nowSeconds() + 600;
      },
      /at most 300 s/,
    ],
    [
      "iss not equal to sub",
      (_, p) => {
        p.sub = "someone-else";
      },
      /iss and sub both set to your client_id/,
    ],
    [
      "a kid the JWK Set does not have",
      (h) => {
        h.kid = "key-2";
      },
      /No key in its jwks matches/,
    ],
  ])("%s → invalid_client", async (_, modify, says) => {
    const { privateKey, jwk } = await keys;
    const app = sandbox(jwtClients(jwk));

    await expect(assertionToken(app, privateKey, "key-1", modify)).rejects.toMatchObject({
      error: "invalid_client",
      error_description: expect.stringMatching(says),
    });
  });

  it("no kid in the header → invalid_client", async () => {
    const { privateKey, jwk } = await keys;

    await expect(assertionToken(sandbox(jwtClients(jwk)), privateKey, undefined)).rejects.toMatchObject({
      error: "invalid_client",
      error_description: expect.stringMatching(/no kid/),
    });
  });

  it("signed by another key under the registered kid → invalid_client (signature)", async () => {
    const { jwk } = await keys;
    const { privateKey: stranger } = await otherKeys;

    await expect(assertionToken(sandbox(jwtClients(jwk)), stranger, "key-1")).rejects.toMatchObject({
      error: "invalid_client",
      error_description: expect.stringMatching(/signature does not verify/),
    });
  });

  it("an HS256 assertion (client_secret_jwt) → invalid_client naming the accepted algorithms", async () => {
    const { jwk } = await keys;
    const app = sandbox(jwtClients(jwk));

    await expect(libraryToken(app, "backend", oauth.ClientSecretJwt("guess"))).rejects.toMatchObject({
      error: "invalid_client",
      error_description: expect.stringMatching(/alg HS256.*RS384, ES384, RS256, ES256/),
    });
  });

  it("a jti used twice while the first assertion is valid → invalid_client the second time", async () => {
    const { privateKey, jwk } = await keys;
    const app = sandbox(jwtClients(jwk));
    const sameJti: Modify = (_, p) => {
      p.jti = "only-once";
    };

    await assertionToken(app, privateKey, "key-1", sameJti);
    await expect(assertionToken(app, privateKey, "key-1", sameJti)).rejects.toMatchObject({
      error: "invalid_client",
      error_description: expect.stringMatching(/jti only-once was already used/),
    });
  });

  it("the same jti again once the first assertion expired is accepted (the sandbox's clock moved on)", async () => {
    const { privateKey, jwk } = await keys;
    // The sandbox's clock and every time claim come from the test, none from the real clock: the library stamps iat
    // and nbf with the real time, which passes the next whole second while a loaded machine signs, and an nbf after
    // the sandbox's now is refused.
    const T0 = 1_900_000_000;
    let now = new Date(T0 * 1000);
    const app = sandbox(jwtClients(jwk), () => now);
    const sameJti =
      (issuedAt: number): Modify =>
      (_, p) => {
        p.jti = "reused-later";
        p.iat = issuedAt;
        p.nbf = issuedAt;
        p.exp = issuedAt + 60;
      };

    await expect(assertionToken(app, privateKey, "key-1", sameJti(T0))).resolves.toMatchObject({
      token_type: "bearer",
    });
    // A second before the first one's exp it is still a replay …
    now = new Date((T0 + 59) * 1000);
    await expect(assertionToken(app, privateKey, "key-1", sameJti(T0 + 59))).rejects.toMatchObject({
      error: "invalid_client",
      error_description: expect.stringMatching(/jti reused-later was already used/),
    });
    // … and at its exp the first one has expired (RFC 7519 §4.1.4: valid only before exp), so the jti is free again.
    now = new Date((T0 + 60) * 1000);
    await expect(assertionToken(app, privateKey, "key-1", sameJti(T0 + 60))).resolves.toMatchObject({
      token_type: "bearer",
    });
  });

  it("client_assertion_type other than jwt-bearer → invalid_request", async () => {
    const { jwk } = await keys;

    const reply = await tokenRequest(sandbox(jwtClients(jwk)), {
      ...GRANT,
      client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:saml2-bearer",
      client_assertion: "x.y.z",
    });

    expect(reply.status).toBe(400);
    expect(reply.body.error).toBe("invalid_request");
  });

  it("a client with keys only, trying a secret → invalid_client naming private_key_jwt", async () => {
    const { jwk } = await keys;

    const reply = await tokenRequest(sandbox(jwtClients(jwk)), GRANT, { authorization: basic("backend", "x") });

    expect(reply.status).toBe(401);
    expect(reply.body).toMatchObject({
      error: "invalid_client",
      error_description: expect.stringMatching(/private_key_jwt/),
    });
  });

  it("the library's default aud (the issuer, RFC 7523) is accepted as well as the token endpoint", async () => {
    const { privateKey, jwk } = await keys;

    const token = await assertionToken(sandbox(jwtClients(jwk)), privateKey, "key-1");

    expect(token.token_type).toBe("bearer");
  });

  it.each([
    ["ES256", { name: "ECDSA", namedCurve: "P-256" }],
    ["ES384", { name: "ECDSA", namedCurve: "P-384" }],
    [
      "RS256",
      { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" },
    ],
  ] as const)("an assertion signed %s is accepted", async (alg, params) => {
    const pair = (await crypto.subtle.generateKey(params, true, ["sign", "verify"])) as webcrypto.CryptoKeyPair;
    const jwk = { ...(await crypto.subtle.exportKey("jwk", pair.publicKey)), kid: `k-${alg}` };
    let signedWith: unknown;

    const token = await assertionToken(sandbox(jwtClients(jwk)), pair.privateKey, `k-${alg}`, (header, p) => {
      signedWith = header.alg;
      p.aud = TOKEN_ENDPOINT;
    });

    expect(signedWith).toBe(alg);
    expect(token.token_type).toBe("bearer");
  });

  it("libraryOptions reach the app in-process (no socket)", () => {
    expect(typeof libraryOptions(sandbox())[oauth.customFetch]).toBe("function");
  });
});
