import { createPublicKey } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { type HttpReply, http, killStray, runToExit } from "../cli/cli-process.js";
import {
  claimsOf,
  ecKeyPair,
  ecSigningKey,
  es256,
  handAssertion,
  handJwt,
  hs256,
  unsigned,
} from "../support/hand-jwt.js";
import { envelope, STANDARD } from "../support/messages.js";
import {
  allergyMessage,
  GLOBAL_ADMIN,
  genuineCall,
  type SharedSandbox,
  startSharedSandbox,
  TEAMS,
  untouched,
} from "./shared-sandbox.js";

// The hostile-tenant suite, OAuth2 and secrets (issue 21: defects 9 and 10, the "also seen" points on OAuth2, and
// the refusals the OAuth2 core got right). Every JWT here is made by hand with node:crypto (test/support/hand-jwt.ts),
// not with jose, the library the sandbox verifies with: a refusal is then not one library agreeing with itself.

afterEach(killStray);

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
/** A folder of the test's own, removed after the file's tests. */
function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), "hostile-oauth-"));
  dirs.push(dir);
  return dir;
}

const FORM = { "content-type": "application/x-www-form-urlencoded" };
/** An address of this machine other than 127.0.0.1 (Linux routes all of 127/8 to loopback): the attacker's. */
const ELSEWHERE = "127.0.0.2";

/** A backend of team-a authenticating with private_key_jwt, besides the harness's two teams. */
const backend = ecKeyPair("team-a-backend-1");
const clientsWithBackend = () => `clients:
${Object.entries(TEAMS)
  .map(([workspace, t]) => `  - { id: ${t.client}, secret: ${t.secret}, workspace: ${workspace} }`)
  .join("\n")}
  - { id: team-a-backend, jwks: { keys: [${JSON.stringify(backend.publicJwk)}] }, workspace: team-a }
workspaces:
${Object.entries(TEAMS)
  .map(([workspace, t]) => `  ${workspace}: { adminToken: ${t.admin} }`)
  .join("\n")}
`;

/** A request over node:http, for what fetch does not let a test choose: the Host header and the local address. */
function raw(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string; localAddress?: string } = {},
): Promise<HttpReply> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: init.method ?? "GET",
        headers: init.headers ?? {},
        ...(init.localAddress ? { localAddress: init.localAddress } : {}),
        timeout: 10_000,
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8").on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => {
          let json: unknown;
          try {
            json = text === "" ? null : JSON.parse(text);
          } catch {
            json = undefined;
          }
          const headers = new Headers();
          for (const [name, value] of Object.entries(res.headers))
            if (typeof value === "string") headers.set(name, value);
          resolve({ status: res.statusCode ?? 0, headers, text, json });
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error(`no answer from ${url} in 10 s`)));
    req.on("error", reject);
    req.end(init.body);
  });
}

/** A message of the allergy example with `token`, to `path` (STANDARD, or under a workspace prefix). */
const message = (sandbox: SharedSandbox, token: string, path = STANDARD) =>
  http(`${sandbox.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: envelope(allergyMessage()),
  });

/** The 401 every unusable token gets (RFC 6750 §3.1), its description matching `why`. */
function expectInvalidToken(reply: HttpReply, why: RegExp) {
  expect(reply.status, reply.text).toBe(401);
  expect(reply.headers.get("www-authenticate")).toMatch(/^Bearer realm="uae-fhir-sandbox", error="invalid_token"/);
  expect(reply.headers.get("www-authenticate")).toMatch(why);
}

/** Polls `check` until it is true or the deadline passes; no sleep beyond a short step between tries. */
async function eventually(check: () => Promise<boolean> | boolean, ms = 10_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return check();
}

describe("OAuth2 refusals, with JWTs made by hand (issue 21: what the core got right stays right)", () => {
  it("alg none, HS256 with the public key, expired, tampered, another key, a replayed assertion, another team's workspace, another operation's scope: all refused; team-b untouched", {
    timeout: 60_000,
  }, async () => {
    const tokenKey = ecSigningKey();
    // The harness writes its own clients file; this one adds team-a's private_key_jwt backend (the last --clients
    // counts), and a token key the test holds, so that it can sign tokens as the sandbox would (to show that an
    // expired one is refused for its exp alone).
    const dir = folder();
    const clients = join(dir, "clients.yaml");
    const keyFile = join(dir, "token-key.pem");
    writeFileSync(clients, clientsWithBackend());
    writeFileSync(keyFile, tokenKey.pem);
    const sandbox = await startSharedSandbox(["--clients", clients, "--token-key", keyFile]);
    try {
      const evidence = await genuineCall(sandbox, "team-b");
      const jwks = (await http(`${sandbox.url}/oauth2/jwks`)).json as { keys: Array<Record<string, unknown>> };
      const jwk = jwks.keys[0] as Record<string, unknown>;
      const now = Math.floor(Date.now() / 1000);
      const claims = (over: Record<string, unknown> = {}) => ({
        iss: sandbox.url,
        sub: TEAMS["team-b"].client,
        aud: sandbox.url,
        client_id: TEAMS["team-b"].client,
        workspace: "team-b",
        scope: "patient-profile.read patient-profile.write drug-orders health-programs",
        iat: now,
        exp: now + 300,
        jti: crypto.randomUUID(),
        ...over,
      });
      const header = { alg: "ES256", kid: jwk.kid, typ: "at+jwt" };

      // The control: a token made by hand the way the sandbox makes them is accepted — so the builder is right,
      // and each refusal below is for the one thing the test changed.
      const control = handJwt(
        header,
        claims({ sub: TEAMS["team-a"].client, client_id: TEAMS["team-a"].client, workspace: "team-a" }),
        es256(tokenKey.privateKey),
      );
      expect((await message(sandbox, control)).status).toBe(200);

      // alg none: no signature at all.
      expectInvalidToken(
        await message(sandbox, handJwt({ ...header, alg: "none" }, claims(), unsigned)),
        /not signed with the sandbox's algorithm|not a JWT/,
      );
      // HS256 keyed with the public key, as PEM and as the JWK's text (the algorithm-confusion attack).
      const publicPem = createPublicKey({ key: jwk as never, format: "jwk" }).export({ type: "spki", format: "pem" });
      for (const secret of [publicPem, JSON.stringify(jwk)]) {
        expectInvalidToken(
          await message(sandbox, handJwt({ ...header, alg: "HS256" }, claims(), hs256(secret))),
          /not signed with the sandbox's algorithm/,
        );
      }
      // Expired, though signed by the sandbox's own key.
      expectInvalidToken(
        await message(sandbox, handJwt(header, claims({ iat: now - 600, exp: now - 300 }), es256(tokenKey.privateKey))),
        /expired/,
      );
      // Tampered: team-a's genuine token with its payload changed to team-b's workspace, the signature kept.
      const genuine = await sandbox.token("team-a");
      const [h, , s] = genuine.split(".");
      const forged = Buffer.from(
        JSON.stringify({ ...claimsOf(genuine), workspace: "team-b", client_id: TEAMS["team-b"].client }),
      ).toString("base64url");
      expectInvalidToken(await message(sandbox, `${h}.${forged}.${s}`), /signature does not verify/);
      // Signed by another key under the sandbox's kid.
      expectInvalidToken(
        await message(sandbox, handJwt(header, claims(), es256(ecSigningKey().privateKey))),
        /signature does not verify/,
      );
      // A client assertion is not an access token (typ), even signed by a registered client.
      const assertion = handAssertion(
        "team-a-backend",
        "team-a-backend-1",
        backend.privateKey,
        `${sandbox.url}/oauth2/token`,
      );
      expectInvalidToken(await message(sandbox, assertion), /not one the sandbox issued|signature|algorithm/);

      // A replayed client assertion: the first use gets a token, the second is refused.
      const assertionForm = (jwt: string) =>
        new URLSearchParams({
          grant_type: "client_credentials",
          client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
          client_assertion: jwt,
        }).toString();
      const once = handAssertion(
        "team-a-backend",
        "team-a-backend-1",
        backend.privateKey,
        `${sandbox.url}/oauth2/token`,
      );
      const first = await http(`${sandbox.url}/oauth2/token`, {
        method: "POST",
        headers: FORM,
        body: assertionForm(once),
      });
      expect(first.status, first.text).toBe(200);
      const replay = await http(`${sandbox.url}/oauth2/token`, {
        method: "POST",
        headers: FORM,
        body: assertionForm(once),
      });
      expect(replay.status).toBe(400);
      expect(replay.json).toMatchObject({
        error: "invalid_client",
        error_description: expect.stringMatching(/already used/),
      });
      // An assertion minted for another server, sent with that server's Host (defect 10): refused.
      const elsewhere = handAssertion(
        "team-a-backend",
        "team-a-backend-1",
        backend.privateKey,
        "http://other.example/oauth2/token",
      );
      const hosted = await raw(`${sandbox.url}/oauth2/token`, {
        method: "POST",
        headers: { ...FORM, host: "other.example" },
        body: assertionForm(elsewhere),
      });
      expect(hosted.status, hosted.text).toBe(400);
      expect(hosted.json.error_description).toMatch(/aud .*other\.example.*--public-url/);

      // Team-a's token on team-b's workspace: 403; a token without the operation's scope: 403 insufficient_scope.
      const onB = await message(sandbox, await sandbox.token("team-a"), `/w/team-b${STANDARD}`);
      expect(onB.status).toBe(403);
      expect(onB.json.issue[0].diagnostics).toMatch(/acts in workspace team-a/);
      const readOnly = await message(sandbox, await sandbox.token("team-b", "patient-profile.read"));
      expect(readOnly.status).toBe(403);
      expect(readOnly.headers.get("www-authenticate")).toMatch(
        /error="insufficient_scope".*scope="patient-profile.write"/,
      );

      await untouched(sandbox, evidence);
    } finally {
      sandbox.stop();
    }
  });
});

describe("secrets nowhere (issue 21, defect 9)", () => {
  it("a client secret in the token endpoint's query string: 400 invalid_request, and the journal file never holds it", {
    timeout: 60_000,
  }, async () => {
    const sandbox = await startSharedSandbox();
    try {
      const evidence = await genuineCall(sandbox, "team-b");
      const { client, secret } = TEAMS["team-b"];
      const reply = await http(`${sandbox.url}/oauth2/token?client_id=${client}&client_secret=${secret}`, {
        method: "POST",
        headers: FORM,
        body: "grant_type=client_credentials",
      });
      expect(reply.status).toBe(400);
      expect(reply.json).toMatchObject({
        error: "invalid_request",
        error_description: expect.stringMatching(/RFC 6749 §2\.3\.1/),
      });
      // Refused before any client is known: an anonymous call, kept in the refused log only, redacted there.
      const id = reply.headers.get("x-sandbox-call-id") as string;
      const refused = await sandbox.admin(null, "/refused", GLOBAL_ADMIN);
      const kept = (refused.json.calls as Array<{ id: string; request: { url: string } }>).find((c) => c.id === id);
      expect(kept?.request.url).toBe(`${sandbox.url}/oauth2/token?client_id=${client}&client_secret=[redacted]`);
      expect(refused.text).not.toContain(secret);
      await untouched(sandbox, evidence);
      // Everything answered before this point is in the journal file (written before it is answered).
      expect(readFileSync(sandbox.journalFile, "utf8")).not.toContain(secret);
    } finally {
      sandbox.stop();
    }
  });

  it("--admin-token-file: the token is nowhere on the command line (ps), and the admin API takes it", {
    timeout: 60_000,
  }, async () => {
    const token = `file-token-${crypto.randomUUID()}`;
    const file = join(folder(), "admin-token");
    writeFileSync(file, `${token}\n`);
    // The harness gives ADMIN_TOKEN; the file replaces it.
    const sandbox = await startSharedSandbox(["--admin-token-file", file], { ADMIN_TOKEN: "" });
    try {
      const cmdline = readFileSync(`/proc/${sandbox.child.process.pid}/cmdline`, "utf8");
      expect(cmdline).toContain("--admin-token-file");
      expect(cmdline).not.toContain(token);
      expect((await sandbox.admin(null, "/workspaces", token)).status).toBe(200);
      expect((await sandbox.admin(null, "/workspaces", GLOBAL_ADMIN)).status).toBe(401);
    } finally {
      sandbox.stop();
    }
  });

  it("--admin-token-file refused at start when empty, unreadable, or given with --admin-token: exit 2, saying why", {
    timeout: 60_000,
  }, async () => {
    const dir = folder();
    const empty = join(dir, "empty");
    const good = join(dir, "good");
    writeFileSync(empty, "\n");
    writeFileSync(good, "t0ken\n");
    const cases: Array<[string[], Record<string, string>, RegExp]> = [
      [["--admin-token-file", empty], {}, /--admin-token-file .*empty/],
      [["--admin-token-file", join(dir, "missing")], {}, /--admin-token-file .*cannot read it \(ENOENT\)/],
      [["--admin-token-file", good, "--admin-token", "x"], {}, /both given/],
      [[], { ADMIN_TOKEN_FILE: good, ADMIN_TOKEN: "x" }, /both given/],
    ];
    for (const [args, env, message] of cases) {
      const exit = await runToExit(["serve", "--port", "0", ...args], env);
      expect(exit.code, exit.stderr).toBe(2);
      expect(exit.stderr).toMatch(message);
    }
  });
});

describe("OAuth2 details (issue 21, also seen)", () => {
  it("a tenant guessing a client secret or an admin token from its address gets 429 with Retry-After; team-b, elsewhere, is untouched", {
    timeout: 60_000,
  }, async () => {
    const sandbox = await startSharedSandbox();
    try {
      const evidence = await genuineCall(sandbox, "team-b");
      const basic = (secret: string) =>
        `Basic ${Buffer.from(`${TEAMS["team-b"].client}:${secret}`).toString("base64")}`;
      const guess = (secret: string) =>
        raw(`${sandbox.url}/oauth2/token`, {
          method: "POST",
          headers: { ...FORM, authorization: basic(secret) },
          body: "grant_type=client_credentials",
          localAddress: ELSEWHERE,
        });
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) statuses.push((await guess(`guess-${i}`)).status);
      expect(statuses).toEqual([...Array(10).fill(401), 429, 429]);
      // Held: even the right secret, from that address, is not checked.
      const held = await guess(TEAMS["team-b"].secret);
      expect(held.status).toBe(429);
      expect(Number(held.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(held.json).toMatchObject({ error: "temporarily_unavailable" });

      const adminGuess = (token: string) =>
        raw(`${sandbox.url}/w/team-b/__admin/calls`, {
          headers: { authorization: `Bearer ${token}` },
          localAddress: ELSEWHERE,
        });
      const adminStatuses: number[] = [];
      for (let i = 0; i < 11; i++) adminStatuses.push((await adminGuess(`guess-${i}`)).status);
      expect(adminStatuses).toEqual([...Array(10).fill(401), 429]);
      const throttled = await adminGuess(TEAMS["team-b"].admin);
      expect(throttled.status).toBe(429);
      expect(Number(throttled.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(throttled.json.issue[0].code).toBe("throttled");

      // Team-b, from its own address, gets its tokens and its admin API as before.
      await untouched(sandbox, evidence);
    } finally {
      sandbox.stop();
    }
  });

  it("a client disabled in the clients file loses its tokens at once (the file watched; SIGHUP and POST /__admin/clients/reload too); a bad file is refused", {
    timeout: 60_000,
  }, async () => {
    const sandbox = await startSharedSandbox();
    try {
      const evidence = await genuineCall(sandbox, "team-b");
      const clients = join(sandbox.dir, "clients.yaml");
      const original = readFileSync(clients, "utf8");
      const aToken = await sandbox.token("team-a");
      expect((await message(sandbox, aToken)).status).toBe(200);

      // Watched: the change counts without anyone asking.
      writeFileSync(clients, original.replace("workspace: team-a }", "workspace: team-a, disabled: true }"));
      expect(await eventually(async () => (await message(sandbox, aToken)).status === 401)).toBe(true);
      expectInvalidToken(await message(sandbox, aToken), /disabled in the clients file/);

      // SIGHUP reloads too: enabled again, a new token works.
      writeFileSync(clients, original);
      sandbox.child.process.kill("SIGHUP");
      expect(await eventually(async () => (await message(sandbox, aToken)).status === 200)).toBe(true);

      // A file that does not load is refused, logged, and the previous one keeps serving.
      writeFileSync(clients, "clients: [ { id: team-a-ehr } ]\n");
      const refused = await sandbox.admin(null, "/clients/reload", GLOBAL_ADMIN, { method: "POST" });
      expect(refused.status).toBe(400);
      expect(refused.json.issue[0].diagnostics).toMatch(/previous clients file keeps serving/);
      expect(
        await eventually(() => /clients file not reloaded/.test(sandbox.child.stdout + sandbox.child.stderr)),
      ).toBe(true);
      expect((await message(sandbox, aToken)).status).toBe(200);
      // A team's admin token does not reload the sandbox's clients.
      writeFileSync(clients, original);
      expect((await sandbox.admin("team-a", "/clients/reload", TEAMS["team-a"].admin, { method: "POST" })).status).toBe(
        401,
      );
      expect((await sandbox.admin(null, "/clients/reload", GLOBAL_ADMIN, { method: "POST" })).json).toEqual({
        reloaded: true,
        clients: 2,
      });

      await untouched(sandbox, evidence);
    } finally {
      sandbox.stop();
    }
  });
});
