import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { http, killStray, startCli } from "../cli/cli-process.js";
import { launchBrowser, UI_TEST_TIMEOUT_MS } from "../ui/browser.js";
import {
  allergyMessage,
  genuineCall,
  type SharedSandbox,
  startSharedSandbox,
  TEAMS,
  untouched,
} from "./shared-sandbox.js";

// Issue 21 defects 8 and 11 and the Host header (CONTRACT §15), from outside: pages of another site must not drive
// the admin API (no-cors fetches, text/plain bodies, a DNS-rebinding name), and every answer carries nosniff and a
// restrictive CSP. Another team's evidence stays untouched.

afterEach(killStray);

const RULE_YAML = `rules:
  - name: planted-by-evil
    when: { operation: add-allergy }
    respond: { status: 503, outcome: { diagnostics: "planted by another site" } }
`;

/** The nosniff and CSP an answer must carry, written out here. */
function expectAnswerHeaders(headers: Headers, what: string) {
  expect(headers.get("x-content-type-options"), what).toBe("nosniff");
  expect(headers.get("content-security-policy"), what).toBe(
    "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  );
}

/** What team-a's admin API holds that a write could change: its rule names and its order count. */
async function teamAState(sandbox: SharedSandbox) {
  const admin = TEAMS["team-a"].admin;
  const scenarios = await sandbox.admin("team-a", "/scenarios", admin);
  const orders = await sandbox.admin("team-a", "/orders", admin);
  expect(scenarios.status).toBe(200);
  expect(orders.status).toBe(200);
  return {
    rules: (scenarios.json as { rules: Array<{ name: string }> }).rules.map((r) => r.name),
    orders: (orders.json as { orders: unknown[] }).orders.length,
  };
}

/** A raw HTTP/1.1 request with a Host header of our choosing (fetch does not let a caller set Host). */
function withHost(url: string, host: string, headers: Record<string, string>) {
  return new Promise<{ status: number; headers: Headers }>((resolve, reject) => {
    const req = httpRequest(url, { headers: { ...headers, host } }, (res) => {
      res.resume();
      res.on("end", () => {
        const out = new Headers();
        for (const [name, value] of Object.entries(res.headers)) if (typeof value === "string") out.set(name, value);
        resolve({ status: res.statusCode ?? 0, headers: out });
      });
    });
    req.on("error", reject);
    req.end();
  });
}

describe("browsers: the admin API and the answers (shared sandbox, OAuth2 on)", () => {
  it("cross-site no-cors-style writes to team-a's admin API change nothing; answers carry nosniff and the CSP; team-b untouched", {
    timeout: 60_000,
  }, async () => {
    const sandbox = await startSharedSandbox();
    try {
      const evidence = await genuineCall(sandbox, "team-b");
      const before = await teamAState(sandbox);
      const evil = { origin: "https://evil.example", "content-type": "text/plain;charset=UTF-8" };
      const attacks: Array<{ name: string; path: string; body: string; headers: Record<string, string> }> = [];
      for (const token of [undefined, TEAMS["team-a"].admin]) {
        const auth: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
        const label = token ? "with team-a's admin token" : "without a token";
        attacks.push(
          { name: `rule, Origin, ${label}`, path: "/scenarios", body: RULE_YAML, headers: { ...evil, ...auth } },
          { name: `order, Origin, ${label}`, path: "/orders", body: "{}", headers: { ...evil, ...auth } },
          {
            name: `rule, Sec-Fetch-Site cross-site, ${label}`,
            path: "/scenarios",
            body: RULE_YAML,
            headers: { "sec-fetch-site": "cross-site", "content-type": "text/plain", ...auth },
          },
        );
      }
      for (const attack of attacks) {
        const reply = await http(`${sandbox.url}/w/team-a/__admin${attack.path}`, {
          method: "POST",
          headers: attack.headers,
          body: attack.body,
        });
        expect(reply.status, `${attack.name}: ${reply.text}`).toBe(403);
        expectAnswerHeaders(reply.headers, attack.name);
      }
      // Without any Origin (a client that is not a browser), a text/plain body is still not taken.
      const plain = await sandbox.admin("team-a", "/scenarios", TEAMS["team-a"].admin, {
        method: "POST",
        headers: { "content-type": "text/plain" },
        body: RULE_YAML,
      });
      expect(plain.status, plain.text).toBe(415);
      // A DNS-rebinding name: a browser asking by a name that is not loopback, an IP or --public-url's.
      const rebound = await withHost(`${sandbox.url}/w/team-a/__admin/calls`, "evil.example:8080", {
        "user-agent": "Mozilla/5.0 Chrome/140.0",
        authorization: `Bearer ${TEAMS["team-a"].admin}`,
      });
      expect(rebound.status).toBe(421);
      expectAnswerHeaders(rebound.headers, "421");
      // …while a client that is not a browser is served under a docker-compose service name.
      const service = await withHost(`${sandbox.url}/w/team-a/__admin/calls`, "sandbox:8080", {
        "user-agent": "curl/8.5.0",
        authorization: `Bearer ${TEAMS["team-a"].admin}`,
      });
      expect(service.status).toBe(200);

      expect(await teamAState(sandbox)).toEqual(before);

      // Every kind of answer carries the headers: a message answer, a 401, the token answer, metadata, admin JSON.
      const message = await sandbox.send("team-b", allergyMessage());
      expectAnswerHeaders(message.headers, "message answer");
      const refused = await http(`${sandbox.url}/uae-fhir/r4/$process-message`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      expect(refused.status).toBe(401);
      expectAnswerHeaders(refused.headers, "401");
      const token = await http(`${sandbox.url}/oauth2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `grant_type=client_credentials&client_id=${TEAMS["team-b"].client}&client_secret=${TEAMS["team-b"].secret}`,
      });
      expect(token.status).toBe(200);
      expectAnswerHeaders(token.headers, "token answer");
      const metadata = await http(`${sandbox.url}/uae-fhir/r4/metadata`);
      expectAnswerHeaders(metadata.headers, "metadata");
      const calls = await sandbox.admin("team-b", "/calls", TEAMS["team-b"].admin);
      expect(calls.status).toBe(200);
      expectAnswerHeaders(calls.headers, "admin JSON");
      // Raw `<` nowhere in the JSON the sandbox wrote, though team-b's message held the HL7 example's narrative.
      expect(calls.text).toContain("\\u003cdiv");
      expect(calls.text).not.toMatch(/[<>&]/);

      await untouched(sandbox, evidence);
    } finally {
      sandbox.stop();
    }
  });

  it("a real browser: a page of another 127.0.0.1 port fires no-cors fetches at a token-less sandbox's admin API, and nothing changes", {
    timeout: UI_TEST_TIMEOUT_MS,
  }, async () => {
    // The default local set-up of defect 8: no --admin-token, no OAuth2.
    const { url } = await startCli(["--quiet"]);
    const state = async () => {
      const scenarios = (await http(`${url}/__admin/scenarios`)).json as { rules: Array<{ name: string }> };
      const orders = (await http(`${url}/__admin/orders`)).json as { orders: unknown[] };
      return { rules: scenarios.rules.map((r) => r.name), orders: orders.orders.length };
    };
    const before = await state();
    // The attacker's page, as the reporter wrote it: text/plain bodies, mode no-cors, so no preflight.
    const page = `<!doctype html><title>evil</title><script>
        const target = ${JSON.stringify(url)};
        const shots = [
          fetch(target + "/__admin/scenarios", { method: "POST", mode: "no-cors", headers: { "content-type": "text/plain" }, body: ${JSON.stringify(RULE_YAML)} }),
          fetch(target + "/__admin/orders", { method: "POST", mode: "no-cors", headers: { "content-type": "text/plain" }, body: "{}" }),
          fetch(target + "/__admin/orders", { method: "POST", mode: "no-cors", body: new Blob(["{}"]) }),
        ];
        Promise.allSettled(shots).then((r) => { document.title = "done " + r.map((x) => x.status).join(","); });
      </script>`;
    const evil = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(page);
    });
    await new Promise<void>((resolve) => evil.listen(0, "127.0.0.1", resolve));
    const browser = await launchBrowser();
    try {
      const tab = await browser.page();
      await tab.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
      await tab.waitForFunction("document.title.startsWith('done')");
      // The fetches went out (an opaque answer is "fulfilled"); the sandbox refused them.
      expect(await tab.title()).toBe("done fulfilled,fulfilled,fulfilled");
      expect(await state()).toEqual(before);
      expect(before.orders).toBe(0);
      await tab.close();
    } finally {
      await browser.close();
      evil.close();
    }
  });
});
