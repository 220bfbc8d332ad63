import { createHash, X509Certificate } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type IssuedCertificate,
  makeCertificateAuthority,
  makeClientCertificate,
  makeServerCertificate,
} from "../../src/tls/make-certificates.js";
import { killStray, PROCESS_TIMEOUT_MS, startCli } from "../cli/cli-process.js";
import { subscriptionMessage } from "../orders/pharmacy-client.js";
import { envelope } from "../support/messages.js";

// RFC 8705 through the real CLI over HTTPS: clients authenticate at the token endpoint by their mutual-TLS
// certificate (tls_client_auth), and certificate-bound tokens carry cnf x5t#S256 and work only over a connection
// presenting that certificate. The client is Node's own https, presenting certificates as an integrator's would.

let dir: string;
let caPem: string;
const certs: Record<string, IssuedCertificate> = {};
/** The HTTPS port's URL (--tls-port), where certificates are asked for. */
let url: string;
/** The plain-HTTP port's (--port) of the same sandbox, where no certificate can come. */
let plainUrl: string;
/** Where asynchronous answers go: a receiver on 127.0.0.1 that takes them. */
let answers: Server;

const CLIENTS = `clients:
  - id: pharmacy-mtls
    token_endpoint_auth_method: tls_client_auth
    tls_client_certificate_bound_access_tokens: true
    scopes: [drug-orders, patient-profile.read]
  - id: clinic
    token_endpoint_auth_method: tls_client_auth
    tls_client_auth_subject_dn: "CN=clinic-ehr-01"
    scopes: [drug-orders]
  - id: secret-bound
    secret: secret-bound-secret
    tls_client_certificate_bound_access_tokens: true
    scopes: [drug-orders]
  - id: post-only
    secret: post-only-secret
    token_endpoint_auth_method: client_secret_post
    scopes: [drug-orders]
`;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "mtls-tokens-"));
  const ca = await makeCertificateAuthority("Test Exchange CA");
  caPem = ca.certPem;
  const server = await makeServerCertificate(ca, ["localhost", "127.0.0.1"]);
  for (const name of ["pharmacy-mtls", "clinic-ehr-01", "other-system"]) {
    certs[name] = await makeClientCertificate(ca, name);
  }
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  const args = [
    "--no-watch",
    "--auth",
    "oauth2",
    "--clients",
    file("clients.yaml", CLIENTS),
    "--tls-cert",
    file("server.crt", server.certPem),
    "--tls-key",
    file("server.key", server.keyPem),
    "--tls-client-ca",
    file("ca.crt", ca.certPem),
    "--tls-client-auth",
    "optional",
    // HTTPS on its own port and plain HTTP on --port, as while a client moves to HTTPS.
    "--tls-port",
    "0",
    "--push-allow",
    "*,127.0.0.1",
  ];
  answers = createServer((req, res) => req.resume().on("end", () => res.writeHead(200).end()));
  answers.listen(0, "127.0.0.1");
  await once(answers, "listening");
  const { child } = await startCli(args);
  const [, https, http] = await child.waitForOutput(/listening on (https:\/\/[^\s"]+) and (http:\/\/[^\s"]+)/);
  url = https as string;
  plainUrl = http as string;
}, PROCESS_TIMEOUT_MS * 2);

afterAll(async () => {
  await killStray();
  await new Promise((resolve) => answers?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON
  json: any;
}

/** One HTTPS request on a fresh connection, presenting `as`'s client certificate (none when undefined). */
function call(
  path: string,
  options: { as?: string; method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Reply> {
  const identity = options.as === undefined ? {} : { cert: certs[options.as]?.certPem, key: certs[options.as]?.keyPem };
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      {
        method: options.method ?? "GET",
        headers: options.headers ?? {},
        ca: caPem,
        agent: false,
        timeout: PROCESS_TIMEOUT_MS,
        ...identity,
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8").on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => {
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {}
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

/** A GET on the plain-HTTP port, where no certificate can come. */
async function plainGet(path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${plainUrl}${path}`, { headers });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {}
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON
  return { status: res.status, headers: res.headers, text, json: json as any };
}

const FORM = { "content-type": "application/x-www-form-urlencoded" };

/** POST /oauth2/token with `form`, over a connection presenting `as`'s certificate. */
const token = (form: string, as?: string, headers: Record<string, string> = {}) =>
  call("/oauth2/token", { method: "POST", headers: { ...FORM, ...headers }, body: form, ...(as ? { as } : {}) });

/** A drug-orders message (a subscription) with a bearer token, over a connection presenting `as`'s certificate. */
const subscribe = (accessToken: string, as?: string) =>
  call("/uae-fhir/r4/$process-message", {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${accessToken}` },
    body: envelope(subscriptionMessage("PH-MTLS-0001", "https://pharmacy.example.ae/hook")),
    ...(as ? { as } : {}),
  });

/** RFC 8705 §3.1: base64url of the SHA-256 of the certificate's DER — computed here with node:crypto alone. */
const thumbprint = (name: string) =>
  createHash("sha256")
    .update(new X509Certificate(certs[name]?.certPem as string).raw)
    .digest("base64url");

describe("RFC 8705 under --auth oauth2, over HTTPS with client certificates", () => {
  it("discovery offers tls_client_auth and certificate-bound tokens", async () => {
    const metadata = await call("/.well-known/oauth-authorization-server");
    expect(metadata.status).toBe(200);
    expect(metadata.json.token_endpoint_auth_methods_supported).toContain("tls_client_auth");
    expect(metadata.json.tls_client_certificate_bound_access_tokens).toBe(true);
    expect(metadata.json.token_endpoint).toBe(`${url}/oauth2/token`);
  });

  it("issues a certificate-bound token by tls_client_auth, usable only with that certificate", async () => {
    const issued = await token("grant_type=client_credentials&client_id=pharmacy-mtls", "pharmacy-mtls");
    expect(issued.status, issued.text).toBe(200);
    const claims = decodeJwt(issued.json.access_token);
    expect(claims.client_id).toBe("pharmacy-mtls");
    expect(claims.cnf).toEqual({ "x5t#S256": thumbprint("pharmacy-mtls") });

    const same = await subscribe(issued.json.access_token, "pharmacy-mtls");
    expect(same.status, same.text).toBe(200);
    expect(same.json.entry[0].resource.response.code).toBe("ok");

    for (const as of ["other-system", undefined]) {
      const refused = await subscribe(issued.json.access_token, as);
      expect(refused.status, `${as}: ${refused.text}`).toBe(401);
      expect(refused.headers["www-authenticate"]).toMatch(/^Bearer .*error="invalid_token"/);
      expect(refused.json.issue[0].diagnostics).toMatch(/bound to (another )?(a )?client certificate/);
    }
  });

  it("refuses tls_client_auth without a certificate, or with another client's", async () => {
    const none = await token("grant_type=client_credentials&client_id=pharmacy-mtls");
    expect(none.status).toBe(400);
    expect(none.json.error).toBe("invalid_client");
    expect(none.json.error_description).toMatch(/tls_client_auth/);

    const wrong = await token("grant_type=client_credentials&client_id=pharmacy-mtls", "other-system");
    expect(wrong.status).toBe(400);
    expect(wrong.json.error).toBe("invalid_client");
    expect(wrong.json.error_description).toMatch(/CN=other-system.*CN pharmacy-mtls/);
  });

  it("matches tls_client_auth_subject_dn; an unbound client's token works without the certificate", async () => {
    const wrong = await token("grant_type=client_credentials&client_id=clinic", "pharmacy-mtls");
    expect(wrong.status).toBe(400);
    expect(wrong.json.error_description).toMatch(/CN=clinic-ehr-01 \(tls_client_auth_subject_dn\)/);

    const issued = await token("grant_type=client_credentials&client_id=clinic", "clinic-ehr-01");
    expect(issued.status, issued.text).toBe(200);
    expect(decodeJwt(issued.json.access_token).cnf).toBeUndefined();
    expect((await subscribe(issued.json.access_token)).status).toBe(200);
  });

  it("binds a secret client's token when it asks over mutual TLS, and refuses it without a certificate", async () => {
    const basic = { authorization: `Basic ${Buffer.from("secret-bound:secret-bound-secret").toString("base64")}` };
    const without = await token("grant_type=client_credentials", undefined, basic);
    expect(without.status).toBe(400);
    expect(without.json.error).toBe("invalid_request");
    expect(without.json.error_description).toMatch(/tls_client_certificate_bound_access_tokens/);

    const issued = await token("grant_type=client_credentials", "other-system", basic);
    expect(issued.status, issued.text).toBe(200);
    expect(decodeJwt(issued.json.access_token).cnf).toEqual({ "x5t#S256": thumbprint("other-system") });
    expect((await subscribe(issued.json.access_token, "other-system")).status).toBe(200);
    expect((await subscribe(issued.json.access_token, "pharmacy-mtls")).status).toBe(401);
  });

  it("holds a client to its token_endpoint_auth_method", async () => {
    const basic = { authorization: `Basic ${Buffer.from("post-only:post-only-secret").toString("base64")}` };
    const refused = await token("grant_type=client_credentials", undefined, basic);
    expect(refused.status).toBe(401);
    expect(refused.json.error).toBe("invalid_client");
    expect(refused.json.error_description).toMatch(
      /registered with token_endpoint_auth_method client_secret_post: authenticate with it, not client_secret_basic/,
    );
    const posted = await token("grant_type=client_credentials&client_id=post-only&client_secret=post-only-secret");
    expect(posted.status, posted.text).toBe(200);
  });
  it("discovery on the plain-HTTP port of --tls-port names the HTTPS token endpoint as the mutual-TLS alias (RFC 8705 §5)", async () => {
    const https = new URL(url);
    for (const path of [
      "/.well-known/oauth-authorization-server",
      "/.well-known/openid-configuration",
      "/uae-fhir/r4/.well-known/smart-configuration",
    ]) {
      const plain = await plainGet(path);
      expect(plain.status, path).toBe(200);
      // The conventional endpoint is where the document was read; a client doing mutual TLS goes to the alias.
      expect(plain.json.token_endpoint, path).toBe(`${plainUrl}/oauth2/token`);
      expect(plain.json.mtls_endpoint_aliases, path).toEqual({
        token_endpoint: `https://${https.host}/oauth2/token`,
      });
      expect(plain.json.token_endpoint_auth_methods_supported, path).toContain("tls_client_auth");
      expect(plain.json.tls_client_certificate_bound_access_tokens, path).toBe(true);
      // Over HTTPS the document's own token endpoint takes certificates: no alias.
      const secure = await call(path);
      expect(secure.json.token_endpoint, path).toBe(`${url}/oauth2/token`);
      expect(secure.json.mtls_endpoint_aliases, path).toBeUndefined();
    }
    // The alias works: a token by the certificate alone, there.
    const alias = (await plainGet("/.well-known/oauth-authorization-server")).json.mtls_endpoint_aliases.token_endpoint;
    expect(new URL(alias).pathname).toBe("/oauth2/token");
    const issued = await token("grant_type=client_credentials&client_id=pharmacy-mtls", "pharmacy-mtls");
    expect(issued.status, issued.text).toBe(200);
  });

  it("a bound token on a REST read and an asynchronous message: accepted with its certificate, 401 without", async () => {
    const issued = await token("grant_type=client_credentials&client_id=pharmacy-mtls", "pharmacy-mtls");
    expect(issued.status, issued.text).toBe(200);
    const bearer = { authorization: `Bearer ${issued.json.access_token}` };
    const refusedAs = (reply: Reply, what: string) => {
      expect(reply.status, `${what}: ${reply.text}`).toBe(401);
      expect(reply.headers["www-authenticate"], what).toMatch(/^Bearer .*error="invalid_token"/);
    };

    // A REST read (GET [base]/Patient/{id}): an unknown id is a 404 once the token is accepted.
    const read = "/uae-fhir/r4/Patient/no-such-patient";
    const accepted = await call(read, { headers: bearer, as: "pharmacy-mtls" });
    expect(accepted.status, accepted.text).toBe(404);
    expect(accepted.json.resourceType).toBe("OperationOutcome");
    refusedAs(await call(read, { headers: bearer }), "read without a certificate");
    refusedAs(await call(read, { headers: bearer, as: "other-system" }), "read with another certificate");

    // $process-message?async=true: acknowledged at once with the certificate.
    const { port } = answers.address() as { port: number };
    const asyncPath = `/uae-fhir/r4/$process-message?async=true&response-url=${encodeURIComponent(`http://127.0.0.1:${port}/answers`)}`;
    const message = (as?: string) =>
      call(asyncPath, {
        method: "POST",
        headers: { "content-type": "application/json", ...bearer },
        body: envelope(subscriptionMessage("PH-MTLS-0002", "https://pharmacy.example.ae/hook")),
        ...(as ? { as } : {}),
      });
    const acknowledged = await message("pharmacy-mtls");
    expect(acknowledged.status, acknowledged.text).toBe(202);
    refusedAs(await message(), "async message without a certificate");
    refusedAs(await message("other-system"), "async message with another certificate");
  });

  it("a bound token on the plain-HTTP port of --tls-port is refused: no certificate can come there", async () => {
    const issued = await token("grant_type=client_credentials&client_id=pharmacy-mtls", "pharmacy-mtls");
    const bearer = { authorization: `Bearer ${issued.json.access_token}` };
    const read = await plainGet("/uae-fhir/r4/Patient/no-such-patient", bearer);
    expect(read.status, read.text).toBe(401);
    expect(read.headers.get("www-authenticate")).toMatch(/^Bearer .*error="invalid_token"/);
    const res = await fetch(`${plainUrl}/uae-fhir/r4/$process-message`, {
      method: "POST",
      headers: { "content-type": "application/json", ...bearer },
      body: envelope(subscriptionMessage("PH-MTLS-0003", "https://pharmacy.example.ae/hook")),
    });
    expect(res.status, await res.text()).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer .*error="invalid_token"/);
  });
});
