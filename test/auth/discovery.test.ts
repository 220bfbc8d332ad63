import { generateKeyPairSync } from "node:crypto";
import type { CapabilityStatement } from "fhir/r4.js";
import type { Hono } from "hono";
import * as oauth from "oauth4webapi";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { CONTRACT_OPERATION_IDS } from "../support/contract-operations.js";
import { example, messageBundle, post } from "../support/messages.js";
import { emittedProblems } from "../support/validator.js";
import {
  ALL_SCOPES,
  authSandbox,
  clientKeyPair,
  closeAfterTest,
  discover,
  ISSUER,
  libraryOptions,
  libraryToken,
  SCOPE_OF,
  tempFile,
} from "./oauth-support.js";

// Discovery (SMART configuration, RFC 8414 metadata), the published keys, what stays open, and where the
// endpoints are with --public-url and --base-path.

const CLIENTS = `clients:
  - { id: suite, secret: suite-secret }
`;

function sandbox(options: Parameters<typeof createApp>[0] = {}, clients = CLIENTS) {
  const s = authSandbox(clients, options);
  return s.app;
}

// biome-ignore lint/suspicious/noExplicitAny: discovery documents are arbitrary JSON
async function getJson(app: Hono, path: string): Promise<{ status: number; body: any }> {
  const res = await app.request(path);
  return { status: res.status, body: res.status === 200 ? await res.json() : await res.text() };
}

/**
 * What a SMART Backend Services client needs of .well-known/smart-configuration (SMART App Launch 2,
 * "Conformance" and "Client Authentication: Asymmetric"), written out from the specification.
 */
function expectSmartBackendServices(config: Record<string, unknown>, issuer = ISSUER) {
  expect(config.token_endpoint).toBe(`${issuer}/oauth2/token`);
  expect(config.grant_types_supported).toContain("client_credentials");
  expect(config.token_endpoint_auth_methods_supported).toContain("private_key_jwt");
  expect(config.token_endpoint_auth_signing_alg_values_supported).toEqual(expect.arrayContaining(["RS384", "ES384"]));
  expect(config.capabilities).toContain("client-confidential-asymmetric");
  expect([...(config.scopes_supported as string[])].sort()).toEqual([...ALL_SCOPES].sort());
  expect(config.jwks_uri).toBe(`${issuer}/oauth2/jwks`);
}

describe("GET /.well-known/smart-configuration", () => {
  it.each([
    "/.well-known/smart-configuration",
    "/uae-fhir/r4/.well-known/smart-configuration",
    "/fhir/.well-known/smart-configuration",
  ])("%s holds what SMART Backend Services clients read", async (path) => {
    const { status, body } = await getJson(sandbox(), path);

    expect(status).toBe(200);
    expectSmartBackendServices(body);
    // The symmetric methods too: secrets are accepted as well as keys.
    expect(body.token_endpoint_auth_methods_supported).toEqual(
      expect.arrayContaining(["client_secret_basic", "client_secret_post"]),
    );
  });

  it("has every field SMART App Launch 2.x marks REQUIRED, and no issuer (SMART omits it without sso-openid-connect)", async () => {
    // SMART App Launch 2.x, Conformance, "Metadata": REQUIRED grant_types_supported, token_endpoint, capabilities
    // and code_challenge_methods_supported (S256 in it, plain not); issuer "required if the server's capabilities
    // include sso-openid-connect; otherwise, omitted". Written out from the specification.
    for (const path of ["/.well-known/smart-configuration", "/uae-fhir/r4/.well-known/smart-configuration"]) {
      const { body } = await getJson(sandbox(), path);

      for (const field of [
        "grant_types_supported",
        "token_endpoint",
        "capabilities",
        "code_challenge_methods_supported",
      ]) {
        expect(body, `${path} ${field}`).toHaveProperty(field);
      }
      expect(body.code_challenge_methods_supported).toContain("S256");
      expect(body.code_challenge_methods_supported).not.toContain("plain");
      expect(body.capabilities).not.toContain("sso-openid-connect");
      expect(body, path).not.toHaveProperty("issuer");
    }
  });

  it("with --base-path, SMART's path under the FHIR base moves; the root documents and /oauth2 stay", async () => {
    const app = sandbox({ basePath: "/sandbox" });

    expect((await getJson(app, "/sandbox/uae-fhir/r4/.well-known/smart-configuration")).status).toBe(200);
    expect((await getJson(app, "/.well-known/smart-configuration")).body.token_endpoint).toBe(`${ISSUER}/oauth2/token`);
    expect((await getJson(app, "/uae-fhir/r4/.well-known/smart-configuration")).status).toBe(404);
    await expect(libraryToken(app, "suite", oauth.ClientSecretBasic("suite-secret"))).resolves.toMatchObject({
      token_type: "bearer",
    });
  });
});

describe("GET /.well-known/openid-configuration", () => {
  it("has every member OpenID Connect Discovery 1.0 §3 marks REQUIRED", async () => {
    // OpenID Connect Discovery 1.0 §3, written out from the specification: issuer, authorization_endpoint,
    // token_endpoint, jwks_uri, response_types_supported, subject_types_supported (public or pairwise) and
    // id_token_signing_alg_values_supported (RS256 MUST be in it).
    const { status, body } = await getJson(sandbox(), "/.well-known/openid-configuration");

    expect(status).toBe(200);
    expect(body).toMatchObject({
      issuer: ISSUER,
      authorization_endpoint: `${ISSUER}/oauth2/authorize`,
      token_endpoint: `${ISSUER}/oauth2/token`,
      jwks_uri: `${ISSUER}/oauth2/jwks`,
      response_types_supported: expect.any(Array),
    });
    expect(body.subject_types_supported.length).toBeGreaterThan(0);
    for (const type of body.subject_types_supported) expect(["public", "pairwise"]).toContain(type);
    expect(body.id_token_signing_alg_values_supported).toContain("RS256");
  });

  it("the authorization endpoint it names refuses every request, and never redirects (RFC 6749 §4.1.2.1)", async () => {
    const app = sandbox();
    const { body: config } = await getJson(app, "/.well-known/openid-configuration");
    const query = "response_type=code&client_id=suite&redirect_uri=https%3A%2F%2Fapp.example%2Fcb&state=s1";

    for (const method of ["GET", "POST"]) {
      const res = await app.request(`${config.authorization_endpoint}?${query}`, { method });

      expect(res.status, method).toBe(400);
      expect(res.headers.get("location"), method).toBeNull();
      expect(res.headers.get("cache-control"), method).toBe("no-store");
      const body = (await res.json()) as { error: string; error_description: string };
      expect(body.error, method).toBe("unsupported_response_type");
      expect(body.error_description, method).toContain("/oauth2/token");
    }
  });
});

describe("--public-url", () => {
  const PUBLIC = "https://sandbox.example.ae";

  it("names the issuer and the endpoints in every discovery document, whatever host the request used", async () => {
    const app = sandbox({ publicUrl: `${PUBLIC}/` });

    for (const path of [
      "/.well-known/openid-configuration",
      "/.well-known/oauth-authorization-server",
      "/.well-known/smart-configuration",
    ]) {
      const { body } = await getJson(app, `http://127.0.0.1:8080${path}`);
      expect(body, path).toMatchObject({
        token_endpoint: `${PUBLIC}/oauth2/token`,
        jwks_uri: `${PUBLIC}/oauth2/jwks`,
      });
      // SMART's document has no issuer (see above); the other two name it.
      if (!path.endsWith("smart-configuration")) expect(body.issuer, path).toBe(PUBLIC);
    }
  });

  it("a private_key_jwt assertion for the public token endpoint is accepted, one for the local URL is not", async () => {
    const { privateKey, jwk } = await clientKeyPair("k1");
    const app = sandbox(
      { publicUrl: PUBLIC },
      `clients:\n  - id: backend\n    jwks: { keys: [${JSON.stringify(jwk)}] }\n`,
    );
    // The issuer as published; the requests still go to the in-process app.
    const as: oauth.AuthorizationServer = { issuer: PUBLIC, token_endpoint: `${ISSUER}/oauth2/token` };
    const request = (aud: string) =>
      oauth
        .clientCredentialsGrantRequest(
          as,
          { client_id: "backend" },
          oauth.PrivateKeyJwt(
            { key: privateKey, kid: "k1" },
            {
              [oauth.modifyAssertion]: (_h, p) => {
                p.aud = aud;
              },
            },
          ),
          {},
          libraryOptions(app),
        )
        .then((res) => res.json());

    expect(await request(`${PUBLIC}/oauth2/token`)).toMatchObject({ token_type: "Bearer" });
    expect(await request(`${ISSUER}/oauth2/token`)).toMatchObject({ error: "invalid_client" });
  });
});

describe("GET /oauth2/jwks and the token signing key", () => {
  it("publishes the public key only, under the kid and alg the tokens carry (ES256 by default)", async () => {
    const app = sandbox();
    const { access_token } = await libraryToken(app, "suite", oauth.ClientSecretPost("suite-secret"));
    const header = JSON.parse(Buffer.from(access_token.split(".")[0] as string, "base64url").toString());

    const { body } = await getJson(app, "/oauth2/jwks");

    expect(body.keys).toHaveLength(1);
    const [key] = body.keys;
    expect(key).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256", use: "sig", kid: header.kid });
    expect(header).toMatchObject({ alg: "ES256", typ: "at+jwt" });
    for (const secret of ["d", "p", "q", "dp", "dq", "qi"]) expect(key).not.toHaveProperty(secret);
  });

  it("--token-key with an RSA PEM signs RS256, and the library validates the tokens against the JWKS", async () => {
    const pem = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" });
    const app = sandbox({ tokenKeyFile: tempFile("token-key.pem", pem as string) });
    const { access_token } = await libraryToken(app, "suite", oauth.ClientSecretPost("suite-secret"));
    const request = new Request(`${ISSUER}/fhir/$process-message`, {
      headers: { authorization: `Bearer ${access_token}` },
    });

    const claims = await oauth.validateJwtAccessToken(await discover(app), request, ISSUER, libraryOptions(app));

    expect(claims.client_id).toBe("suite");
    expect((await getJson(app, "/oauth2/jwks")).body.keys[0]).toMatchObject({ kty: "RSA", alg: "RS256" });
  });

  it("--token-key with a key it cannot sign RS256 or ES256 with stops the start, saying which keys do", () => {
    const pem = generateKeyPairSync("ec", { namedCurve: "P-384" }).privateKey.export({ type: "pkcs8", format: "pem" });

    expect(() => sandbox({ tokenKeyFile: tempFile("p384.pem", pem as string) })).toThrow(
      /--token-key .*secp384r1.*RSA key of 2048 bits or more \(RS256\) or a P-256 EC key \(ES256\)/,
    );
  });
});

describe("what stays open with --auth oauth2", () => {
  it.each([
    "/uae-fhir/r4/metadata",
    "/fhir/metadata",
    "/uae-fhir/r4/MessageDefinition",
    "/uae-fhir/r4/StructureDefinition/price",
    "/__admin/health",
  ])("GET %s needs no token", async (path) => {
    expect((await getJson(sandbox(), path)).status).toBe(200);
  });

  it("the CapabilityStatement advertises SMART-on-FHIR security with the token endpoint, and stays valid R4", async () => {
    const { body } = await getJson(sandbox(), "/uae-fhir/r4/metadata");
    const statement = body as CapabilityStatement;

    const security = statement.rest?.[0]?.security;
    expect(security?.service?.[0]?.coding?.[0]).toMatchObject({
      system: "http://terminology.hl7.org/CodeSystem/restful-security-service",
      code: "SMART-on-FHIR",
    });
    expect(security?.extension?.[0]).toEqual({
      url: "http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris",
      extension: [{ url: "token", valueUri: `${ISSUER}/oauth2/token` }],
    });
    expect(emittedProblems(statement)).toEqual([]);
  });
});

describe("without --auth (the default)", () => {
  it("no OAuth2 endpoints, no security in the CapabilityStatement, and messages need no token", async () => {
    const s = closeAfterTest(createApp({}));

    for (const path of ["/oauth2/jwks", "/.well-known/smart-configuration", "/.well-known/openid-configuration"]) {
      expect((await getJson(s.app, path)).status, path).toBe(404);
    }
    expect((await s.app.request("/oauth2/token", { method: "POST" })).status).toBe(404);
    const { body } = await getJson(s.app, "/uae-fhir/r4/metadata");
    expect(body.rest[0].security).toBeUndefined();
    const reply = await post(s.app, messageBundle("view-patient-profile", [example("patient-example.json")]));
    expect(reply.status).toBe(200);
  });

  it("the options refuse --auth oauth2 without a clients file", () => {
    expect(() => createApp({ auth: "oauth2" })).toThrow(/clients file/);
  });
});

describe("scopes in the operations catalogue", () => {
  it("GET /__admin/operations shows each operation's scope", async () => {
    const { body } = await getJson(sandbox(), "/__admin/operations");

    const shown = Object.fromEntries(
      (body.operations as Array<{ id: string; scope: string }>).map((o) => [o.id, o.scope]),
    );
    expect(shown).toEqual(SCOPE_OF);
    expect(Object.keys(SCOPE_OF)).toEqual(CONTRACT_OPERATION_IDS);
  });

  it("an operations file maps a renamed operation (and its aliases) to its own scope", async () => {
    const operations = tempFile(
      "operations.yaml",
      "operations:\n  view-patient-profile: { event: PatientSummary, aliases: [view-patient-profile], scope: profile.summary }\n",
    );
    const app = sandbox(
      { operationsFile: operations },
      "clients:\n  - { id: summary, secret: s, scopes: [profile.summary] }\n",
    );

    const { body } = await getJson(app, "/.well-known/smart-configuration");
    expect(body.scopes_supported).toContain("profile.summary");
    expect(body.scopes_supported).not.toContain("patient-profile.read");
    const { access_token } = await libraryToken(app, "summary", oauth.ClientSecretBasic("s"));
    for (const code of ["PatientSummary", "view-patient-profile"]) {
      const reply = await post(app, messageBundle(code, [example("patient-example.json")]), {
        headers: { authorization: `Bearer ${access_token}` },
      });
      expect(reply.status, code).toBe(200);
    }
    const refused = await post(app, messageBundle("add-task", [example("task-example1.json")]), {
      headers: { authorization: `Bearer ${access_token}` },
    });
    expect(refused.status).toBe(403);
  });

  it("a clients file naming a scope no operation needs is refused, at its line", () => {
    const operations = tempFile("operations.yaml", "operations:\n  view-patient-profile: { scope: profile.summary }\n");

    expect(() =>
      sandbox(
        { operationsFile: operations },
        "clients:\n  - id: reader\n    secret: s\n    scopes: [patient-profile.read]\n",
      ),
    ).toThrow(/clients\.yaml:4:14: clients\.0\.scopes\.0: unknown scope "patient-profile\.read"/);
  });
});
