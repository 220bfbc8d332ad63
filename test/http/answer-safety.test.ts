import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllergyIntolerance, Bundle } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { authSandbox } from "../auth/oauth-support.js";
import { quietLogger } from "../orders/pharmacy-client.js";
import { envelope, example, messageBundle, STANDARD } from "../support/messages.js";

// Issue 21 defect 11, CONTRACT §15: answers a browser will not run. Every answer carries X-Content-Type-Options:
// nosniff and a restrictive CSP; the JSON text the sandbox writes holds no raw `<`, `>` or `&`; a rule's
// Content-Type is JSON or plain text unless the rule says otherwise.

/** The CSP every answer but the dashboard's carries, written out here (not read from src/). */
const ANSWER_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "answer-safety-"));
  dirs.push(dir);
  return dir;
};

/** A rule that answers a templated body, and one that tries to declare its own CSP and nosniff away. */
const RULES = `rules:
  - name: echo
    when: { operation: add-allergy, headers: { X-Sandbox-Scenario: echo } }
    respond:
      status: 418
      headers: { Content-Security-Policy: "script-src *", X-Content-Type-Options: sniff }
      body: { echoed: "{{ request.headers.x-echo }}" }
  - name: broken
    when: { operation: add-allergy, headers: { X-Sandbox-Scenario: broken } }
    respond: { fault: malformed-json, status: 502 }
`;

const start = (options: Parameters<typeof createApp>[0] = {}) => {
  const sandbox = createApp(
    { scenarios: "./scenarios", watch: false, maxBody: 64 * 1024, ...options },
    {
      logger: quietLogger,
    },
  );
  return sandbox;
};

async function withRules(app: ReturnType<typeof start>["app"]) {
  const res = await app.request("/__admin/scenarios", {
    method: "POST",
    headers: { "content-type": "application/yaml" },
    body: RULES,
  });
  expect(res.status, await res.clone().text()).toBe(201);
}

const allergyEnvelope = () =>
  envelope(messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")]));

const postMessage = (app: ReturnType<typeof start>["app"], body: string, headers: Record<string, string> = {}) =>
  app.request(STANDARD, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });

describe("every answer carries nosniff and a restrictive CSP (CONTRACT §15)", () => {
  // Each kind of answer, as a client meets it; the status says it is the kind the row names.
  const kinds: Array<{
    name: string;
    status: number;
    send: (app: ReturnType<typeof start>["app"]) => Response | Promise<Response>;
  }> = [
    { name: "a message answered ok", status: 200, send: (app) => postMessage(app, allergyEnvelope()) },
    { name: "an invalid message (400)", status: 400, send: (app) => postMessage(app, '{"content": "{}"}') },
    { name: "nothing served there (404)", status: 404, send: (app) => app.request("/nothing-here") },
    { name: "a GET on a message path (405)", status: 405, send: (app) => app.request(STANDARD) },
    {
      name: "a body over --max-body (413)",
      status: 413,
      send: (app) => postMessage(app, JSON.stringify({ content: "x".repeat(70 * 1024) })),
    },
    {
      name: "a scripted rule's answer",
      status: 418,
      send: (app) => postMessage(app, allergyEnvelope(), { "x-sandbox-scenario": "echo", "x-echo": "hi" }),
    },
    {
      name: "a scripted fault with a body",
      status: 502,
      send: (app) => postMessage(app, allergyEnvelope(), { "x-sandbox-scenario": "broken" }),
    },
    { name: "the CapabilityStatement", status: 200, send: (app) => app.request("/uae-fhir/r4/metadata") },
    { name: "admin JSON", status: 200, send: (app) => app.request("/__admin/calls") },
    { name: "an admin OperationOutcome (404)", status: 404, send: (app) => app.request("/__admin/calls/999999") },
    {
      name: "an admin write refused (415)",
      status: 415,
      send: (app) => app.request("/__admin/orders", { method: "POST", body: "x" }),
    },
    {
      name: "a bad workspace name (400)",
      status: 400,
      send: (app) => app.request("/__admin/calls", { headers: { "x-sandbox-workspace": "Not A Name" } }),
    },
  ];

  it.each(kinds)("$name", async ({ send, status }) => {
    const { app } = start();
    await withRules(app);
    const res = await send(app);
    expect(res.status).toBe(status);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("content-security-policy")).toBe(ANSWER_CSP);
  });

  it("OAuth2: the 401 of a message without a token, the token answer, its error, discovery", async () => {
    const { app } = authSandbox("clients:\n  - { id: clinic, secret: clinic-secret }\n");
    const form = (secret: string) =>
      app.request("/oauth2/token", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `grant_type=client_credentials&client_id=clinic&client_secret=${secret}`,
      });
    const answers: Array<[string, Response, number]> = [
      ["401", await postMessage(app, allergyEnvelope()), 401],
      ["token", await form("clinic-secret"), 200],
      ["token error (RFC 6749 §5.2)", await form("wrong"), 400],
      ["discovery", await app.request("/.well-known/smart-configuration"), 200],
      ["jwks", await app.request("/oauth2/jwks"), 200],
    ];
    for (const [name, res, status] of answers) {
      expect(res.status, name).toBe(status);
      expect(res.headers.get("x-content-type-options"), name).toBe("nosniff");
      expect(res.headers.get("content-security-policy"), name).toBe(ANSWER_CSP);
    }
  });

  it("over a socket too (the hot path writes them itself)", async () => {
    const { app } = start();
    const { serve } = await import("@hono/node-server");
    const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(s));
    });
    try {
      const { port } = server.address() as { port: number };
      const res = await fetch(`http://127.0.0.1:${port}${STANDARD}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: allergyEnvelope(),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(res.headers.get("content-security-policy")).toBe(ANSWER_CSP);
      await res.text();
    } finally {
      server.close();
    }
  });

  it("the dashboard's pages keep their own CSP, which lets them load their scripts", async () => {
    const { app } = start();
    const res = await app.request("/__admin/ui/");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  });
});

/** Whether a JSON text holds markup characters a browser could read as HTML. */
const RAW_MARKUP = /[<>&]/;

describe("JSON text the sandbox writes escapes <, > and & (CONTRACT §15)", () => {
  it("a message answer, the admin API's view of the call, its NDJSON export and the journal file", async () => {
    const journalFile = join(tempDir(), "journal.ndjson");
    const { app, close } = start({ journalFile });
    const allergy = example<AllergyIntolerance>("allergyintolerance-example.json");
    // The HL7 example's narrative is XHTML: `<div xmlns=…><p><b>…`.
    expect(allergy.text?.div).toMatch(/^<div/);
    const sent = allergyEnvelope();
    const res = await postMessage(app, sent);
    expect(res.status).toBe(200);
    const answer = await res.text();
    expect(answer).not.toMatch(RAW_MARKUP);
    const callId = res.headers.get("x-sandbox-call-id") as string;

    const view = await (await app.request(`/__admin/calls/${callId}`)).text();
    expect(view).not.toMatch(RAW_MARKUP);
    const parsed = JSON.parse(view) as { request: { body: unknown }; response: { body: unknown } };
    // The same values: the request body as the client sent it, the answer as the client got it.
    expect(parsed.request.body).toEqual(JSON.parse(sent));
    expect(parsed.response.body).toEqual(JSON.parse(answer));
    const inner = JSON.parse((parsed.request.body as { content: string }).content) as Bundle;
    expect((inner.entry?.[1]?.resource as AllergyIntolerance | undefined)?.text?.div).toBe(allergy.text?.div);

    const exported = await (await app.request("/__admin/calls/export")).text();
    expect(exported).not.toMatch(RAW_MARKUP);
    const summaries = await (await app.request("/__admin/calls?view=summary&format=ndjson")).text();
    expect(summaries).not.toMatch(RAW_MARKUP);
    close();
    const lines = readFileSync(journalFile, "utf8").split("\n").filter(Boolean);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line).not.toMatch(RAW_MARKUP);
    const written = lines.map((l) => JSON.parse(l) as { id: string; request: { body: unknown } });
    expect(written.find((c) => c.id === callId)?.request.body).toEqual(JSON.parse(sent));
  });

  it("OperationOutcomes that quote what the request held, and a rule's templated body", async () => {
    const { app } = start();
    await withRules(app);
    const allergy = example<AllergyIntolerance>("allergyintolerance-example.json");
    const hostile = "</script><script>alert(1)</script>&amp;";
    const invalid = { ...allergy, criticality: hostile } as unknown as AllergyIntolerance;
    const refused = await postMessage(app, envelope(messageBundle("add-allergy", [invalid])));
    expect(refused.status).toBe(400);
    const refusal = await refused.text();
    expect(refusal).not.toMatch(RAW_MARKUP);
    expect(refusal).toContain("\\u003c/script\\u003e");
    expect(JSON.stringify(JSON.parse(refusal))).toContain(hostile);

    const echoed = await postMessage(app, allergyEnvelope(), { "x-sandbox-scenario": "echo", "x-echo": hostile });
    expect(echoed.status).toBe(418);
    const text = await echoed.text();
    expect(text).not.toMatch(RAW_MARKUP);
    expect(JSON.parse(text)).toEqual({ echoed: hostile });
  });

  it("pushes to a pharmacy, and the admin API's order view", async () => {
    const pushed: string[] = [];
    const fetchStub = (async (_url: string, init: RequestInit) => {
      pushed.push(String(init.body));
      return new Response(null, { status: 200 });
    }) as unknown as typeof fetch;
    const { app } = createApp(
      { scenarios: "/nonexistent-scenarios-folder", watch: false },
      { logger: quietLogger, fetch: fetchStub },
    );
    const name = "<b>Pharmacy</b> & Sons";
    const fixture = `fixtures:
  pharmacies:
    - { licence: PH-ESC-1, name: "${name}", endpoint: "http://127.0.0.1:9/hook" }
`;
    const added = await app.request("/__admin/scenarios", {
      method: "POST",
      headers: { "content-type": "application/yaml" },
      body: fixture,
    });
    expect(added.status).toBe(201);
    const order = await app.request("/__admin/orders", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(order.status).toBe(201);
    const deadline = Date.now() + 10_000;
    while (pushed.length === 0 && Date.now() < deadline) await new Promise((r) => setImmediate(r));
    expect(pushed.length).toBeGreaterThan(0);
    for (const body of pushed) {
      expect(body).not.toMatch(RAW_MARKUP);
      const content = (JSON.parse(body) as { content: string }).content;
      expect(content).not.toMatch(RAW_MARKUP);
      expect(JSON.stringify(JSON.parse(content))).toContain(JSON.stringify(name).slice(1, -1));
    }
    const pharmacies = await (await app.request("/__admin/pharmacies")).text();
    expect(pharmacies).not.toMatch(RAW_MARKUP);
    expect(JSON.parse(pharmacies).pharmacies[0].name).toBe(name);
  });
});
