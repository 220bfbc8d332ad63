import { generateKeyPairSync } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv2020 } from "ajv/dist/2020.js";
import { afterEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { loadClientsFile } from "../../src/auth/clients-file.js";
import { killStray, runToExit } from "../cli/cli-process.js";
import { ALL_SCOPES, authSandbox, tempFile } from "./oauth-support.js";

// The clients file (--clients): every mistake reported as file:line:column: message, like scenario files;
// its JSON Schema (docs/clients.schema.json) kept equal to what `uae-fhir-sandbox schema clients` prints.

afterEach(killStray);

const DOCS = fileURLToPath(new URL("../../docs/", import.meta.url));

const publicJwk = (type: "rsa" | "ec", bits = 2048) => {
  const { publicKey, privateKey } =
    type === "rsa"
      ? generateKeyPairSync("rsa", { modulusLength: bits })
      : generateKeyPairSync("ec", { namedCurve: "P-256" });
  return { public: publicKey.export({ format: "jwk" }), private: privateKey.export({ format: "jwk" }) };
};

/** Broken files, one mistake each, and where (line:column, 1-based) and what the loader must say. */
const BROKEN: Array<{ name: string; yaml: string; at: string; says: string }> = [
  {
    name: "a misspelled key",
    yaml: "clients:\n  - id: clinic\n    secrit: x\n",
    at: "3:5",
    says: 'clients.0: unknown key "secrit"',
  },
  {
    name: "a client with no way to authenticate",
    yaml: "clients:\n  - { id: clinic, scopes: [drug-orders] }\n",
    at: "2:5",
    says: "clients.0: a client needs a secret, a jwks or a jwksUrl to authenticate with",
  },
  {
    name: "a jwksUrl on another host",
    yaml: "clients:\n  - id: backend\n    jwksUrl: https://keys.example.com/jwks.json\n",
    at: "3:14",
    says: "clients.0.jwksUrl: an http(s) URL on 127.0.0.1, localhost or [::1]",
  },
  {
    name: "jwks and jwksUrl both",
    yaml: `clients:\n  - id: backend\n    jwksUrl: http://127.0.0.1:9/jwks\n    jwks: { keys: [${JSON.stringify({ ...publicJwk("ec").public, kid: "k" })}] }\n`,
    at: "2:5",
    says: "clients.0: give jwks or jwksUrl, not both",
  },
  {
    name: "an RFC 8705 subject DN that is no distinguished name",
    yaml: 'clients:\n  - id: backend\n    token_endpoint_auth_method: tls_client_auth\n    tls_client_auth_subject_dn: "pharmacy backend"\n',
    at: "4:33",
    says: 'clients.0.tls_client_auth_subject_dn: an RFC 4514 distinguished name, e.g. "CN=pharmacy-backend,O=Al Noor Pharmacy,C=AE"',
  },
  {
    name: "a subject DN without tls_client_auth",
    yaml: "clients:\n  - id: backend\n    secret: s\n    tls_client_auth_subject_dn: CN=backend\n",
    at: "2:5",
    says: "clients.0: tls_client_auth_subject_dn is read only with token_endpoint_auth_method: tls_client_auth",
  },
  {
    name: "an auth method the sandbox does not have",
    yaml: "clients:\n  - id: backend\n    secret: s\n    token_endpoint_auth_method: self_signed_tls_client_auth\n",
    at: "4:33",
    says: "clients.0.token_endpoint_auth_method:",
  },
  {
    name: "client_secret_basic without a secret",
    yaml: "clients:\n  - id: backend\n    token_endpoint_auth_method: client_secret_basic\n    jwksUrl: http://127.0.0.1:9/jwks\n",
    at: "2:5",
    says: "clients.0: token_endpoint_auth_method client_secret_basic or client_secret_post needs a secret",
  },
  {
    name: "bound tokens that are not a boolean",
    yaml: "clients:\n  - id: backend\n    secret: s\n    tls_client_certificate_bound_access_tokens: yes please\n",
    at: "4:49",
    says: "clients.0.tls_client_certificate_bound_access_tokens:",
  },
  {
    name: "the same client id twice",
    yaml: "clients:\n  - { id: clinic, secret: a }\n  - { id: clinic, secret: b }\n",
    at: "3:11",
    says: 'clients.1.id: client id "clinic" is already used by clients[0]',
  },
  {
    name: "a magic client's id",
    yaml: "clients:\n  - id: magic-disabled\n    secret: mine\n",
    at: "2:9",
    says: 'clients.0.id: "magic-disabled" is a built-in magic client',
  },
  {
    name: "an unknown scope",
    yaml: "clients:\n  - id: clinic\n    secret: s\n    scopes: [patient-profile.read, patient.write]\n",
    at: "4:36",
    says: 'clients.0.scopes.1: unknown scope "patient.write"; the operations catalogue needs: patient-profile.read, patient-profile.write, drug-orders, health-programs',
  },
  {
    name: "a workspace name with capitals",
    yaml: "clients:\n  - id: clinic\n    secret: s\n    workspace: Clinic_A\n",
    at: "4:16",
    says: "clients.0.workspace: a workspace name: 1 to 64 lower-case letters, digits or hyphens",
  },
  {
    name: "a private key in the JWK Set",
    yaml: `clients:\n  - id: backend\n    jwks:\n      keys:\n        - ${JSON.stringify({ ...publicJwk("ec").private, kid: "k" })}\n`,
    at: "5:11",
    says: "clients.0.jwks.keys.0: this key holds private key members (d)",
  },
  {
    name: "a 1024-bit RSA key",
    yaml: `clients:\n  - id: backend\n    jwks:\n      keys:\n        - ${JSON.stringify({ ...publicJwk("rsa", 1024).public, kid: "k" })}\n`,
    at: "5:11",
    says: "clients.0.jwks.keys.0: this key is a 1024-bit RSA key; RS256 and RS384 need 2048 bits or more",
  },
  {
    name: "a workspace section under a bad name",
    yaml: "clients:\n  - { id: clinic, secret: s }\nworkspaces:\n  Clinic A: { adminToken: t }\n",
    at: "4:3",
    says: "workspaces.Clinic A: not a workspace name: 1 to 64 lower-case letters, digits or hyphens",
  },
  {
    name: "a YAML syntax error",
    yaml: "clients:\n  - id: clinic\n   secret: s\n",
    at: "3:1",
    says: "",
  },
];

describe("clients file mistakes, as file:line:column: message", () => {
  it.each(BROKEN)("$name → $at", ({ yaml, at, says }) => {
    const file = tempFile("clients.yaml", yaml);

    expect(() => loadClientsFile(file, ALL_SCOPES)).toThrow(`${file}:${at}: ${says}`);
  });

  it("every problem of a file at once", () => {
    const file = tempFile(
      "clients.yaml",
      "clients:\n  - { id: a, secrit: x }\n  - { id: b, secret: s, workspace: B }\n",
    );

    expect(() => loadClientsFile(file, ALL_SCOPES)).toThrow(
      new RegExp(`${file}:2:14: .*unknown key "secrit"[\\s\\S]*${file}:3:36: clients\\.1\\.workspace`),
    );
  });

  it("the sandbox does not start on a broken clients file", () => {
    expect(() => authSandbox("clients:\n  - id: nothing-to-authenticate-with\n")).toThrow(
      /invalid clients file:\n.*clients\.yaml:2:5/,
    );
  });
});

describe("the CLI and the clients file", { timeout: 30_000 }, () => {
  it("serve --auth oauth2 with a broken file: exit 1, each problem as file:line:column: message", async () => {
    const file = tempFile("clients.yaml", "clients:\n  - id: clinic\n    secrit: x\n");

    const run = await runToExit(["serve", "--port", "0", "--auth", "oauth2", "--clients", file]);

    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`${file}:3:5: clients.0: unknown key "secrit"`);
  });

  it("serve --clients with a file that does not exist: exit 1, the file and why, no fs internals", async () => {
    const file = join(tempFile("clients.yaml", "clients: []\n"), "..", "missing.yaml");

    const run = await runToExit(["serve", "--port", "0", "--auth", "oauth2", "--clients", file]);

    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`invalid clients file:\n${file}: cannot be read: no such file`);
    expect(run.stderr).not.toContain("ENOENT");
  });

  it.each([
    [["--auth", "oauth2"], "--auth oauth2 needs --clients FILE"],
    [["--clients", "clients.yaml"], "--clients is read only with --auth oauth2"],
    [["--auth", "basic"], '--auth "basic": expected one of off, oauth2'],
  ])("serve %j: exit 2, %s", async (args, says) => {
    const run = await runToExit(["serve", "--port", "0", ...args]);

    expect(run.code).toBe(2);
    expect(run.stderr).toContain(says);
  });
});

describe("docs/clients.schema.json (draft 2020-12, ajv)", () => {
  const schema = JSON.parse(readFileSync(`${DOCS}clients.schema.json`, "utf8"));
  const validate = new Ajv2020({ allErrors: true, strict: true }).compile(schema);

  it("is what `uae-fhir-sandbox schema clients` prints (regenerate it when the format changes)", {
    timeout: 30_000,
  }, async () => {
    const run = await runToExit(["schema", "clients"]);

    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual(schema);
  });

  it("accepts docs/clients.example.yaml, which the loader also loads", () => {
    const text = readFileSync(`${DOCS}clients.example.yaml`, "utf8");

    expect(text.split("\n")[0]).toBe("# yaml-language-server: $schema=./clients.schema.json");
    expect(validate(parse(text)) ? [] : validate.errors).toEqual([]);
    expect(loadClientsFile(`${DOCS}clients.example.yaml`, ALL_SCOPES).clients.map((c) => c.id)).toEqual([
      "clinic-ehr",
      "pharmacy-backend",
      "programs-app",
      "test-suite",
    ]);
  });

  it.each([
    ["an unknown key", { clients: [{ id: "a", secret: "s", secrit: "x" }] }, "/clients/0"],
    ["a workspace name with capitals", { clients: [{ id: "a", secret: "s", workspace: "A" }] }, "/clients/0/workspace"],
    [
      "a key type the sandbox cannot use",
      { clients: [{ id: "a", jwks: { keys: [{ kty: "oct", kid: "k" }] } }] },
      "/clients/0/jwks/keys/0/kty",
    ],
    ["no clients", { clients: [] }, "/clients"],
  ])("rejects %s, at %s, as the loader does", (_, doc, at) => {
    expect(validate(doc)).toBe(false);
    expect(validate.errors?.map((e) => e.instancePath)).toContain(at);
    expect(() => loadClientsFile(tempFile("clients.yaml", JSON.stringify(doc)), ALL_SCOPES)).toThrow(
      /invalid clients file/,
    );
  });
});
