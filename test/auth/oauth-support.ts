import type { webcrypto } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Hono } from "hono";
import * as oauth from "oauth4webapi";
import { afterAll, afterEach } from "vitest";
import { createApp, type SandboxApp, type SandboxDeps } from "../../src/app.js";
import type { SandboxOptions } from "../../src/config/options.js";
import { quietLogger } from "../orders/pharmacy-client.js";

/**
 * OAuth2 in tests: a clients file in a temporary folder, a sandbox with
 * --auth oauth2, and oauth4webapi — an OAuth2 client library nobody here
 * wrote — talking to it in-process (its customFetch is the app's fetch).
 */

/** The sandbox as `app.request` places it: the issuer of its tokens. */
export const ISSUER = "http://localhost";
export const TOKEN_ENDPOINT = `${ISSUER}/oauth2/token`;

/** The four scopes of CONTRACT §13, written out (not read from the catalogue under test). */
export const ALL_SCOPES = ["patient-profile.read", "patient-profile.write", "drug-orders", "health-programs"];

/** The 18 operations of CONTRACT §3 and the scope each needs (§13), written out from the issue (not read from the catalogue). */
export const SCOPE_OF: Record<string, string> = {
  "view-patient-profile": "patient-profile.read",
  "add-allergy": "patient-profile.write",
  "update-allergy": "patient-profile.write",
  "remove-allergy": "patient-profile.write",
  "add-history": "patient-profile.write",
  "update-history": "patient-profile.write",
  "remove-history": "patient-profile.write",
  "add-measurement": "patient-profile.write",
  "update-measurement": "patient-profile.write",
  "remove-measurement": "patient-profile.write",
  "subscribe-order-notifications": "drug-orders",
  "confirm-drugs-availability": "drug-orders",
  "receive-allocation": "drug-orders",
  "send-dispense-summary": "drug-orders",
  "get-pending-tasks": "health-programs",
  "add-task": "health-programs",
  "update-task": "health-programs",
  "cancel-task": "health-programs",
};

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const open: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of open.splice(0)) await close();
});

/** Closes `thing` (a sandbox, a receiver) after the running test; returns it. */
export function closeAfterTest<T extends { close(): unknown }>(thing: T): T {
  open.push(() => thing.close());
  return thing;
}

/** Writes `text` as a file in a fresh temporary folder; returns its path. */
export function tempFile(name: string, text: string): string {
  const dir = mkdtempSync(join(tmpdir(), "uae-auth-"));
  dirs.push(dir);
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

/** A sandbox with --auth oauth2 and this clients file (YAML text), closed after the test. */
export function authSandbox(
  clientsYaml: string,
  options: Partial<SandboxOptions> = {},
  deps: Partial<SandboxDeps> = {},
): SandboxApp {
  return closeAfterTest(
    createApp(
      { auth: "oauth2", clientsFile: tempFile("clients.yaml", clientsYaml), ...options },
      { logger: quietLogger, ...deps },
    ),
  );
}

/** oauth4webapi's options to reach the in-process app over plain http. */
export function libraryOptions(app: Hono) {
  return {
    [oauth.customFetch]: async (url: string, init: RequestInit) => app.fetch(new Request(url, init)),
    [oauth.allowInsecureRequests]: true,
  } as const;
}

/** Discovery as the library does it (OpenID Connect's well-known path, or RFC 8414's). */
export async function discover(app: Hono, algorithm: "oidc" | "oauth2" = "oidc"): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(ISSUER);
  const response = await oauth.discoveryRequest(issuer, { ...libraryOptions(app), algorithm });
  return oauth.processDiscoveryResponse(issuer, response);
}

/** An RSA key pair for private_key_jwt (RS384, as SMART asks), and its public JWK with a kid. */
export async function clientKeyPair(kid: string, hash: "SHA-256" | "SHA-384" = "SHA-384") {
  const pair = (await crypto.subtle.generateKey(
    { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash },
    true,
    ["sign", "verify"],
  )) as webcrypto.CryptoKeyPair;
  const jwk = { ...(await crypto.subtle.exportKey("jwk", pair.publicKey)), kid };
  return { privateKey: pair.privateKey, jwk };
}

/** A client-credentials token from the library; throws (the library's error) when refused. */
export async function libraryToken(
  app: Hono,
  clientId: string,
  auth: oauth.ClientAuth,
  scope?: string,
): Promise<oauth.TokenEndpointResponse> {
  const as = await discover(app);
  const client: oauth.Client = { client_id: clientId };
  const response = await oauth.clientCredentialsGrantRequest(
    as,
    client,
    auth,
    scope === undefined ? {} : { scope },
    libraryOptions(app),
  );
  return oauth.processClientCredentialsResponse(as, client, response);
}

/**
 * The app as a client holding `token` sees it: message paths go through the
 * library's protectedResourceRequest (Authorization: Bearer), the admin API
 * straight to the app. Typed as Hono so the existing message helpers take it.
 */
export function withToken(app: Hono, token: string): Hono {
  const request = async (path: string, init: RequestInit = {}) => {
    if (path.startsWith("/__admin")) return app.request(path, init);
    return oauth.protectedResourceRequest(
      token,
      init.method ?? "GET",
      new URL(path, ISSUER),
      new Headers(init.headers),
      (init.body ?? null) as string | null,
      libraryOptions(app),
    );
  };
  return { request, fetch: app.fetch } as unknown as Hono;
}
