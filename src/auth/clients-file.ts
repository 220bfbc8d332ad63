import { createPublicKey } from "node:crypto";
import { z } from "zod";
import { formatProblem, readYamlFile } from "../config/yaml-file.js";
import { scopeToken } from "../routing/catalogue.js";
import { WORKSPACE_NAME_RULE, workspaceName } from "../workspace/workspace-name.js";
import { parseDistinguishedName } from "./distinguished-name.js";
import { MAGIC_CLIENTS } from "./magic-clients.js";

/** SMART asks servers for RS384 and ES384; RS256 and ES256 are what most libraries sign with by default. */
export const CLIENT_ASSERTION_ALGS = ["RS384", "ES384", "RS256", "ES256"] as const;

/**
 * The clients file (`--clients FILE`, YAML): the OAuth2 clients that may get
 * access tokens, and per-workspace settings. One schema validates files,
 * types the loader, and is emitted as the JSON Schema editors use
 * (`uae-fhir-sandbox schema clients > docs/clients.schema.json`).
 */

/** RFC 7591 token_endpoint_auth_method values the sandbox takes: the three of every client, and RFC 8705's. */
export const TOKEN_ENDPOINT_AUTH_METHODS = [
  "client_secret_basic",
  "client_secret_post",
  "private_key_jwt",
  "tls_client_auth",
] as const;

/** Hosts a client's `jwksUrl` may name: the sandbox fetches keys from this machine only. */
const LOCAL_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);

const isLocalUrl = (text: string): boolean => {
  try {
    const url = new URL(text);
    return (url.protocol === "http:" || url.protocol === "https:") && LOCAL_HOSTS.has(url.hostname);
  } catch {
    return false;
  }
};

const publicJwk = z
  .looseObject({
    kty: z.enum(["RSA", "EC"]).describe("key type: RSA (RS256, RS384) or EC (ES256 on P-256, ES384 on P-384)"),
    kid: z.string().min(1).describe("key id: the `kid` header of the client's assertions names the key"),
    alg: z.enum(CLIENT_ASSERTION_ALGS).optional().describe("the one algorithm this key signs with, if it says"),
  })
  .describe("a public JSON Web Key (RFC 7517): the sandbox checks client assertions with it");

const clientSchema = z
  .object({
    id: z.string().min(1).describe("client_id: what the client sends as client_id, or as iss and sub of its assertion"),
    secret: z.string().min(1).optional().describe("client secret, for client_secret_basic and client_secret_post"),
    jwks: z
      .object({ keys: z.array(publicJwk).min(1) })
      .strict()
      .optional()
      .describe("the client's public keys (a JWK Set), for private_key_jwt"),
    jwksUrl: z
      .string()
      .refine(isLocalUrl, "an http(s) URL on 127.0.0.1, localhost or [::1]: the sandbox fetches keys from nowhere else")
      .optional()
      .describe("where the client publishes its JWK Set (fetched at each private_key_jwt token request)"),
    scopes: z
      .array(scopeToken)
      .optional()
      .describe("the scopes the client may get (default: every scope of the operations catalogue); [] for none"),
    workspace: workspaceName.optional().describe("the workspace the client's tokens act in (default: default)"),
    disabled: z.boolean().optional().describe("true: token requests are refused with invalid_client"),
    // RFC 7591 and RFC 8705 registration metadata, under their own names.
    token_endpoint_auth_method: z
      .enum(TOKEN_ENDPOINT_AUTH_METHODS)
      .optional()
      .describe(
        "the one way the client authenticates at the token endpoint (RFC 7591); tls_client_auth: its mutual-TLS certificate, no secret (RFC 8705). Default: any way it has credentials for",
      ),
    tls_client_auth_subject_dn: z
      .string()
      .refine(
        (dn) => parseDistinguishedName(dn) !== null,
        'an RFC 4514 distinguished name, e.g. "CN=pharmacy-backend,O=Al Noor Pharmacy,C=AE"',
      )
      .optional()
      .describe(
        "tls_client_auth: the subject its certificate must have (RFC 4514; attributes in any order). Default: a subject whose CN is the client id",
      ),
    tls_client_certificate_bound_access_tokens: z
      .boolean()
      .optional()
      .describe(
        "true: its tokens are bound to the client certificate they were asked with (cnf x5t#S256, RFC 8705); token requests must come over mutual TLS",
      ),
  })
  .strict()
  .refine(
    (c) =>
      c.secret !== undefined ||
      c.jwks !== undefined ||
      c.jwksUrl !== undefined ||
      c.token_endpoint_auth_method === "tls_client_auth",
    "a client needs a secret, a jwks or a jwksUrl to authenticate with, or token_endpoint_auth_method: tls_client_auth",
  )
  .refine((c) => c.jwks === undefined || c.jwksUrl === undefined, "give jwks or jwksUrl, not both")
  .refine(
    (c) => !c.token_endpoint_auth_method?.startsWith("client_secret") || c.secret !== undefined,
    "token_endpoint_auth_method client_secret_basic or client_secret_post needs a secret",
  )
  .refine(
    (c) => c.token_endpoint_auth_method !== "private_key_jwt" || c.jwks !== undefined || c.jwksUrl !== undefined,
    "token_endpoint_auth_method private_key_jwt needs a jwks or a jwksUrl",
  )
  .refine(
    (c) => c.tls_client_auth_subject_dn === undefined || c.token_endpoint_auth_method === "tls_client_auth",
    "tls_client_auth_subject_dn is read only with token_endpoint_auth_method: tls_client_auth",
  );

export const clientsFileSchema = z
  .object({
    clients: z.array(clientSchema).min(1).describe("the OAuth2 clients (client-credentials grant)"),
    workspaces: z
      .record(
        workspaceName,
        z
          .object({
            adminToken: z
              .string()
              .min(1)
              .optional()
              .describe("a bearer token accepted on this workspace's admin API, besides --admin-token"),
            seed: z
              .string()
              .min(1)
              .optional()
              .describe("seed of this workspace's generated patients and orders (default: --seed, as every workspace)"),
          })
          .strict(),
        // zod's own words for a bad record key are "Invalid key in record".
        { error: (issue) => (issue.code === "invalid_key" ? `not ${WORKSPACE_NAME_RULE}` : undefined) },
      )
      .optional()
      .describe(
        "per-workspace settings, by workspace name; a workspace named here or by a client is kept however idle (--workspace-ttl), and is one of the workspaces of --workspaces fixed",
      ),
  })
  .strict();

export type ClientsFile = z.infer<typeof clientsFileSchema>;

/** The JSON Schema of clients files (draft 2020-12), for editors and CI. */
export function clientsJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(clientsFileSchema, { target: "draft-2020-12", unrepresentable: "any" }),
    title: "uae-fhir-sandbox clients file",
  };
}

type Problem = { path: Array<string | number>; message: string };

/** Members only a private JWK has: a JWK Set given to the sandbox must not hold the client's private key. */
const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "oth"];
const CURVES: Record<string, true> = { "P-256": true, "P-384": true };

/** A key the sandbox cannot check assertions with, said in a sentence; undefined when it is usable. */
function keyProblem(jwk: Record<string, unknown>): string | undefined {
  const secret = PRIVATE_MEMBERS.filter((m) => m in jwk);
  if (secret.length > 0) {
    return `holds private key members (${secret.join(", ")}): register the public key only, and keep the private one with the client`;
  }
  try {
    const key = createPublicKey({ key: jwk as never, format: "jwk" });
    const details = key.asymmetricKeyDetails;
    if (jwk.kty === "RSA" && (details?.modulusLength ?? 0) < 2048) {
      return `is a ${details?.modulusLength}-bit RSA key; RS256 and RS384 need 2048 bits or more`;
    }
    if (jwk.kty === "EC" && !CURVES[String(jwk.crv)])
      return `is on curve ${String(jwk.crv)}; use P-256 (ES256) or P-384 (ES384)`;
  } catch (error) {
    return `is not a usable ${String(jwk.kty)} public key: ${(error as Error).message}`;
  }
  return undefined;
}

/** What the schema cannot say: duplicate or reserved ids, scopes no operation needs, keys that do not load. */
function fileProblems(value: ClientsFile, scopes: readonly string[]): Problem[] {
  const problems: Problem[] = [];
  const seen = new Map<string, number>();
  const known = new Set(scopes);
  value.clients.forEach((client, i) => {
    const at = ["clients", i];
    const earlier = seen.get(client.id);
    if (earlier !== undefined) {
      problems.push({
        path: [...at, "id"],
        message: `client id "${client.id}" is already used by clients[${earlier}]`,
      });
    } else seen.set(client.id, i);
    if (MAGIC_CLIENTS.some((m) => m.id === client.id)) {
      problems.push({
        path: [...at, "id"],
        message: `"${client.id}" is a built-in magic client (docs/auth.md); give your client another id`,
      });
    }
    client.scopes?.forEach((scope, j) => {
      if (!known.has(scope)) {
        problems.push({
          path: [...at, "scopes", j],
          message: `unknown scope "${scope}"; the operations catalogue needs: ${scopes.join(", ")}`,
        });
      }
    });
    client.jwks?.keys.forEach((jwk, j) => {
      const problem = keyProblem(jwk);
      if (problem) problems.push({ path: [...at, "jwks", "keys", j], message: `this key ${problem}` });
    });
  });
  return problems;
}

/**
 * Reads and checks a clients file against the scopes of the operations
 * catalogue; throws an Error listing every problem as file:line:column: message.
 *
 * @example
 *   # clients.yaml
 *   clients:
 *     - { id: clinic-ehr, secret: change-me, scopes: [patient-profile.read, patient-profile.write] }
 */
export function loadClientsFile(file: string, scopes: readonly string[]): ClientsFile {
  const read = readYamlFile(
    file,
    clientsFileSchema.superRefine((value, ctx) => {
      for (const problem of fileProblems(value, scopes)) ctx.addIssue({ code: "custom", ...problem });
    }),
  );
  if (!read.ok) throw new Error(`invalid clients file:\n${read.problems.map(formatProblem).join("\n")}`);
  return read.value;
}
