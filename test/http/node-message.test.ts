import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllergyIntolerance, Bundle } from "fhir/r4.js";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createApp, type SandboxApp, type SandboxDeps } from "../../src/app.js";
import type { SandboxOptions } from "../../src/config/options.js";
import { DEFAULT_OPTIONS } from "../../src/config/options.js";
import { EXAMPLE_ENDPOINT, EXAMPLE_PHARMACY, exampleMessage } from "../../src/examples/example-message.js";
import { buildCatalogue } from "../../src/routing/catalogue.js";
import { type RunningServer, startServer } from "../../src/server/start-server.js";
import { ALL_SCOPES } from "../auth/oauth-support.js";
import { envelope, example, messageBundle, STANDARD } from "../support/messages.js";

/**
 * The message fast path (src/http/node-message.ts) against the Hono app it stands in for: the same requests — every
 * operation, every error class, faults and delays, OAuth2, workspaces, CORS — sent to three identical sandboxes
 * (injected clock, ids and monotonic time): one served with the fast path, one served by the Hono app alone (the
 * server as it was), one in-process through `app.fetch`. The answers must be the same bytes on the wire (the Date
 * header aside) and the same status, headers and body in-process; the journals and refused logs the same records.
 */

/** Every sandbox is reached by this Host, so that URLs in answers and records do not depend on the port. */
const HOST = "sandbox.test:8080";
const BASE = `http://${HOST}`;
const AT = new Date("2025-03-01T08:00:00.000Z");
const MAX_BODY = 64 * 1024;

const RULES = `rules:
  - name: fault-empty-body
    when: { headers: { X-Fault: empty-body } }
    respond: { fault: empty-body }
  - name: fault-malformed-json
    when: { headers: { X-Fault: malformed-json } }
    respond: { fault: malformed-json, headers: { X-Why: scripted } }
  - name: fault-connection-reset
    when: { headers: { X-Fault: connection-reset } }
    respond: { fault: connection-reset }
  - name: fault-timeout
    when: { headers: { X-Fault: timeout } }
    respond: { fault: timeout }
  - name: slow
    when: { headers: { X-Fault: delay } }
    respond: { builtIn: true, delay: 30, headers: { X-Extra: "  padded  " } }
  - name: slower
    when: { headers: { X-Fault: long-delay } }
    respond: { builtIn: true, delay: 600 }
  - name: teapot
    when: { headers: { X-Fault: teapot } }
    respond:
      status: 418
      headers: { X-Custom: "v", Retry-After: "7", Vary: "Accept", Set-Cookie: "a=b" }
      outcome: { diagnostics: short and stout }
  - name: "line\\nbreak"
    when: { headers: { X-Fault: bad-rule-name } }
    respond: { status: 200, outcome: { diagnostics: a rule name Headers refuses } }
  - name: "5 \u20ac"
    when: { headers: { X-Fault: not-latin1 } }
    respond: { status: 200, headers: { X-Money: "{{ rule.name }}" }, outcome: { diagnostics: Headers refuses the value } }
`;

const CLIENTS = `clients:
  - id: writer
    secret: writer-secret
    workspace: team-w
    scopes: [${ALL_SCOPES.join(", ")}]
  - id: reader
    secret: reader-secret
    workspace: team-r
    scopes: [patient-profile.read]
`;

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const open: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of open.splice(0)) await close();
});

function tempFile(name: string, text: string): string {
  const dir = mkdtempSync(join(tmpdir(), "uae-fast-"));
  dirs.push(dir);
  writeFileSync(join(dir, name), text);
  return dir;
}

/** Dependencies that make two sandboxes given the same requests give the same bytes. */
function fixedDeps(): Partial<SandboxDeps> {
  let id = 0;
  return {
    now: () => AT,
    monotonic: () => 1000,
    newId: () => `00000000-0000-4000-8000-${String(++id).padStart(12, "0")}`,
    random: () => 0.5,
    fetch: (async () => new Response(null, { status: 200 })) as unknown as typeof fetch,
    logger: { info: () => undefined, error: () => undefined },
  };
}

interface Trio {
  fast: RunningServer;
  hono: RunningServer;
  apps: { fast: SandboxApp; hono: SandboxApp; inProcess: SandboxApp };
  /** How many requests reached the served fast sandbox's Hono app. */
  honoCalls: () => number;
}

/** Three identical sandboxes: served with the fast path, served by Hono alone, and in-process. */
async function trio(options: Partial<SandboxOptions>): Promise<Trio> {
  const make = () =>
    createApp(
      { scenarios: tempFile("rules.yaml", RULES), watch: false, publicUrl: BASE, maxBody: MAX_BODY, ...options },
      fixedDeps(),
    );
  const apps = { fast: make(), hono: make(), inProcess: make() };
  let honoCalls = 0;
  const fetchOf = apps.fast.app.fetch;
  apps.fast.app.fetch = (request: Request, ...rest: unknown[]) => {
    honoCalls++;
    return (fetchOf as (r: Request, ...x: unknown[]) => Response | Promise<Response>)(request, ...rest);
  };
  expect(apps.fast.node).toBeDefined();
  const listen = { port: 0, host: "127.0.0.1" };
  const fast = await startServer(apps.fast, listen);
  // The server as it was: every request through the Node adapter and the Hono app.
  const hono = await startServer({ ...apps.hono, node: undefined }, listen);
  for (const thing of [fast, hono]) open.push(() => thing.close());
  for (const app of Object.values(apps)) open.push(() => app.close());
  return { fast, hono, apps, honoCalls: () => honoCalls };
}

interface Sent {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** Sent with Transfer-Encoding: chunked. */
  chunked?: boolean;
  /** The client gives up after this long (for the timeout fault). */
  giveUpMs?: number;
}

/** A request as raw bytes; `close`: it asks to close the connection after its answer (else keep-alive). */
function requestBytes(sent: Sent, close = true): string {
  const body = sent.body ?? "";
  const lines = [
    `${sent.method ?? "POST"} ${sent.path} HTTP/1.1`,
    `Host: ${HOST}`,
    ...Object.entries(sent.headers ?? {}).map(([k, v]) => `${k}: ${v}`),
    ...(sent.method === "GET"
      ? []
      : [sent.chunked ? "Transfer-Encoding: chunked" : `Content-Length: ${Buffer.byteLength(body)}`]),
    `Connection: ${close ? "close" : "keep-alive"}`,
  ];
  const payload = sent.chunked ? `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n` : body;
  return `${lines.join("\r\n")}\r\n\r\n${payload}`;
}

/** Sends one request as raw bytes on a fresh connection; resolves with every byte received, and the socket's error. */
function rawExchange(url: string, sent: Sent): Promise<{ received: string; error?: string }> {
  return pipelined(url, [sent], sent.giveUpMs);
}

/**
 * Sends requests in one write on a fresh connection (pipelined; the last asks to close). Resolves with every byte
 * received, the socket's error, and when (ms after sending) each piece arrived.
 */
function pipelined(
  url: string,
  sents: Sent[],
  giveUpMs?: number,
): Promise<{ received: string; error?: string; arrivals: number[] }> {
  const { hostname, port } = new URL(url);
  const bytes = sents.map((sent, i) => requestBytes(sent, i === sents.length - 1)).join("");
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let received = "";
    const arrivals: number[] = [];
    const sentAt = performance.now();
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => {
      received += chunk;
      arrivals.push(performance.now() - sentAt);
    });
    socket.on("error", (error: NodeJS.ErrnoException) =>
      resolve({ received, error: error.code ?? error.message, arrivals }),
    );
    socket.on("end", () => resolve({ received, arrivals }));
    socket.on("close", () => resolve({ received, arrivals }));
    if (giveUpMs !== undefined) setTimeout(() => socket.destroy(), giveUpMs);
    socket.write(bytes);
  });
}

/** The in-process answer to the same request (its headers as the raw request has them). */
async function inProcess(
  app: SandboxApp,
  sent: Sent,
): Promise<{ status: number; headers: string[][]; body: string } | "network-fault"> {
  const body = Buffer.from(sent.body ?? "");
  const method = sent.method ?? "POST";
  const headers = {
    host: HOST,
    ...sent.headers,
    ...(method === "GET"
      ? {}
      : sent.chunked
        ? { "transfer-encoding": "chunked" }
        : { "content-length": String(body.byteLength) }),
    connection: "close",
  };
  try {
    const res = await app.app.fetch(
      new Request(`${BASE}${sent.path}`, {
        method,
        headers,
        ...(method === "GET" ? {} : { body }),
        // The client that gives up: the request's signal, in-process.
        ...(sent.giveUpMs === undefined ? {} : { signal: AbortSignal.timeout(sent.giveUpMs) }),
      }),
    );
    return { status: res.status, headers: [...res.headers].map(([k, v]) => [k, v]), body: await res.text() };
  } catch (error) {
    if ((error as Error).name === "SimulatedNetworkFault") return "network-fault";
    throw error;
  }
}

/** A raw answer's parts: status, headers (lower-cased, without those only a socket has), body (de-chunked). */
function parsed(raw: string): { status: number; headers: string[][]; body: string } | "network-fault" {
  const end = raw.indexOf("\r\n\r\n");
  if (end === -1) return "network-fault";
  const [statusLine, ...lines] = raw.slice(0, end).split("\r\n");
  const status = Number(statusLine?.split(" ")[1]);
  const wire = ["date", "connection", "keep-alive", "content-length", "transfer-encoding"];
  const headers = lines
    .map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()])
    .filter(([name]) => !wire.includes(name as string))
    .sort(([a], [b]) => ((a as string) < (b as string) ? -1 : 1));
  let body = raw.slice(end + 4);
  if (/\r\ntransfer-encoding: chunked/i.test(raw.slice(0, end))) {
    let out = "";
    for (;;) {
      const eol = body.indexOf("\r\n");
      const size = Number.parseInt(body.slice(0, eol), 16);
      if (!size) break;
      out += body.slice(eol + 2, eol + 2 + size);
      body = body.slice(eol + 2 + size + 2);
    }
    body = out;
  }
  return { status, headers, body: Buffer.from(body, "latin1").toString("utf8") };
}

const withoutDate = (raw: string) => raw.replace(/\r\nDate: [^\r]*/i, "\r\nDate: -");

/** Sends `sent` to all three; expects the same answer from each. Returns the fast path's raw answer. */
async function same(t: Trio, sent: Sent): Promise<string> {
  const fast = await rawExchange(t.fast.url, sent);
  const hono = await rawExchange(t.hono.url, sent);
  expect(withoutDate(fast.received), `${sent.path} ${JSON.stringify(sent.headers)}`).toBe(withoutDate(hono.received));
  expect(fast.error).toBe(hono.error);
  const local = await inProcess(t.apps.inProcess, sent);
  const served = parsed(fast.received);
  if (local === "network-fault") expect(served).toBe("network-fault");
  else expect(served).toEqual(local);
  return fast.received;
}

/** Every record of every workspace's journal and of the refused log, as the admin API exports them. */
async function records(app: SandboxApp): Promise<string> {
  const out: string[] = [];
  for (const workspace of app.workspaces.list()) {
    const prefix = workspace.prefix;
    const res = await app.app.request(`${prefix}/__admin/calls/export`);
    out.push(`${workspace.id}:\n${await res.text()}`);
  }
  out.push(await (await app.app.request("/__admin/refused")).text());
  return out.join("\n").replace(/"durationMs":[0-9.]+/g, '"durationMs":0');
}

async function sameRecords(t: Trio): Promise<void> {
  const fast = await records(t.apps.fast);
  expect(fast).toBe(await records(t.apps.hono));
  expect(fast).toBe(await records(t.apps.inProcess));
}

const JSON_TYPE = { "Content-Type": "application/json" };
const allergy = () =>
  envelope(messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")]));

/** Every operation's example message, as `uae-fhir-sandbox example` builds it (fixed ids and time). */
function operationExamples(): Array<{ operation: string; path: string; body: string }> {
  const catalogue = buildCatalogue();
  let id = 0;
  const deps = { newId: () => `10000000-0000-4000-8000-${String(++id).padStart(12, "0")}`, now: () => AT };
  return catalogue.operations.map((operation) => ({
    operation: operation.id,
    path: operation.path,
    body: envelope(
      exampleMessage(
        {
          operation: operation.id,
          event: operation.event,
          seed: DEFAULT_OPTIONS.seed,
          emiratesIdSystem: DEFAULT_OPTIONS.emiratesIdSystem,
          emiratesId: "784-1990-1234567-6",
          fhirBase: `${BASE}/uae-fhir/r4`,
          pharmacy: { ...EXAMPLE_PHARMACY, endpoint: EXAMPLE_ENDPOINT },
        },
        deps,
      ).bundle,
    ),
  }));
}

describe("the message fast path answers as the Hono app does", { timeout: 60_000 }, () => {
  it("every operation, every error class, faults and delays, workspaces: the same bytes and records", async () => {
    const t = await trio({});
    for (const { path, body } of operationExamples()) await same(t, { path, headers: JSON_TYPE, body });

    const message = allergy();
    const bundle = JSON.parse(JSON.parse(message).content) as Bundle;
    const reused = envelope({ ...bundle, timestamp: "2025-01-01T00:00:00Z" });
    const requests: Sent[] = [
      // A duplicate, and a MessageHeader id reused for another message (409).
      { path: STANDARD, headers: JSON_TYPE, body: message },
      { path: STANDARD, headers: JSON_TYPE, body: message },
      { path: STANDARD, headers: JSON_TYPE, body: reused },
      // Bad JSON, not R4, no message, unsupported and missing content types, a byte-order mark.
      { path: STANDARD, headers: JSON_TYPE, body: "{not json" },
      { path: STANDARD, headers: JSON_TYPE, body: envelope({ ...bundle, type: "nonsense", id: 7 }) },
      { path: STANDARD, headers: JSON_TYPE, body: JSON.stringify({ content: "[]" }) },
      { path: STANDARD, headers: { "Content-Type": "text/plain" }, body: allergy() },
      { path: STANDARD, body: allergy() },
      { path: STANDARD, headers: JSON_TYPE, body: `\uFEFF${allergy()}` },
      { path: STANDARD, headers: JSON_TYPE, body: "" },
      // Over --max-body: declared, and chunked.
      { path: STANDARD, headers: JSON_TYPE, body: JSON.stringify({ content: "x".repeat(MAX_BODY) }) },
      { path: STANDARD, headers: JSON_TYPE, body: JSON.stringify({ content: "x".repeat(MAX_BODY) }), chunked: true },
      { path: STANDARD, headers: JSON_TYPE, body: allergy(), chunked: true },
      // What Hono answers: another path, another method, a query, a trailing slash.
      { path: "/uae-fhir/r4/nothing-here", headers: JSON_TYPE, body: allergy() },
      { method: "GET", path: STANDARD },
      { method: "PUT", path: STANDARD, headers: JSON_TYPE, body: allergy() },
      { path: `${STANDARD}?x=1`, headers: JSON_TYPE, body: allergy() },
      { path: `${STANDARD}/`, headers: JSON_TYPE, body: allergy() },
      // Workspaces: by prefix, by header, bad names, the alternate path.
      { path: `/w/team-a${STANDARD}`, headers: JSON_TYPE, body: allergy() },
      { path: "/w/team-a/fhir/$process-message", headers: JSON_TYPE, body: allergy() },
      { path: STANDARD, headers: { ...JSON_TYPE, "X-Sandbox-Workspace": "team-b" }, body: allergy() },
      { path: `/w/Not_Valid${STANDARD}`, headers: JSON_TYPE, body: allergy() },
      { path: `/w/${STANDARD}`, headers: JSON_TYPE, body: allergy() },
      { path: `/w/team-a/${STANDARD}`, headers: JSON_TYPE, body: allergy() },
      { path: STANDARD, headers: { ...JSON_TYPE, "X-Sandbox-Workspace": "no way" }, body: allergy() },
      // Scenario rules: scripted answers, faults, a delay, headers Headers or Node refuse.
      { path: STANDARD, headers: { ...JSON_TYPE, "X-Fault": "teapot" }, body: allergy() },
      { path: STANDARD, headers: { ...JSON_TYPE, "X-Fault": "delay" }, body: allergy() },
      { path: STANDARD, headers: { ...JSON_TYPE, "X-Fault": "empty-body" }, body: allergy() },
      { path: STANDARD, headers: { ...JSON_TYPE, "X-Fault": "malformed-json" }, body: allergy() },
      { path: STANDARD, headers: { ...JSON_TYPE, "X-Fault": "connection-reset" }, body: allergy() },
      { path: STANDARD, headers: { ...JSON_TYPE, "X-Fault": "timeout" }, body: allergy(), giveUpMs: 50 },
      { path: STANDARD, headers: { ...JSON_TYPE, "X-Fault": "bad-rule-name" }, body: allergy() },
      { path: STANDARD, headers: { ...JSON_TYPE, "X-Fault": "not-latin1" }, body: allergy() },
      // Headers sent twice, padded, in odd case.
      { path: STANDARD, headers: { ...JSON_TYPE, "x-DUP": " one ", "X-Dup": "two" }, body: allergy() },
    ];
    for (const sent of requests) {
      await same(t, sent);
    }
    await sameRecords(t);
  });

  it("CORS: an allowed origin, another origin, none", async () => {
    const t = await trio({ cors: ["http://app.test"] });
    for (const origin of ["http://app.test", "http://evil.test", undefined]) {
      const headers = { ...JSON_TYPE, ...(origin ? { Origin: origin } : {}) };
      await same(t, { path: STANDARD, headers, body: allergy() });
      await same(t, { path: STANDARD, headers: { ...headers, "X-Fault": "teapot" }, body: allergy() });
      await same(t, { path: STANDARD, headers: { ...headers, "X-Fault": "empty-body" }, body: allergy() });
      await same(t, { path: `/w/Bad!${STANDARD}`, headers, body: allergy() });
    }
    await sameRecords(t);
  });

  it("OAuth2: no token, a bad one, a wrong scope, a good one, a good one naming another workspace", async () => {
    const clientsFile = join(tempFile("clients.yaml", CLIENTS), "clients.yaml");
    const t = await trio({ auth: "oauth2", clientsFile });
    /** A token of `client` from each sandbox (each signs its own). */
    const tokens = async (client: string, secret: string) => {
      const get = async (app: SandboxApp) => {
        const res = await app.app.request("/oauth2/token", {
          method: "POST",
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            authorization: `Basic ${Buffer.from(`${client}:${secret}`).toString("base64")}`,
          },
          body: "grant_type=client_credentials",
        });
        expect(res.status).toBe(200);
        return ((await res.json()) as { access_token: string }).access_token;
      };
      return { fast: await get(t.apps.fast), hono: await get(t.apps.hono), inProcess: await get(t.apps.inProcess) };
    };
    const writer = await tokens("writer", "writer-secret");
    const reader = await tokens("reader", "reader-secret");
    /** Sends with each sandbox's own token. */
    const withToken = async (token: Record<"fast" | "hono" | "inProcess", string>, sent: Sent) => {
      const auth = (which: "fast" | "hono" | "inProcess") => ({
        ...sent,
        headers: { ...sent.headers, Authorization: `Bearer ${token[which]}` },
      });
      const fast = await rawExchange(t.fast.url, auth("fast"));
      const hono = await rawExchange(t.hono.url, auth("hono"));
      expect(withoutDate(fast.received)).toBe(withoutDate(hono.received));
      const local = await inProcess(t.apps.inProcess, auth("inProcess"));
      expect(parsed(fast.received)).toEqual(local);
    };
    const message = { path: STANDARD, headers: JSON_TYPE, body: allergy() };
    await same(t, message);
    await same(t, { ...message, headers: { ...JSON_TYPE, Authorization: "Bearer not.a.token" } });
    await same(t, { ...message, headers: { ...JSON_TYPE, Authorization: "Basic abc" } });
    await same(t, { ...message, path: `/w/nobody${STANDARD}` });
    await withToken(writer, message);
    await withToken(reader, message);
    await withToken(writer, { ...message, path: `/w/team-r${STANDARD}` });
    await withToken(writer, { ...message, headers: { ...JSON_TYPE, "X-Fault": "teapot" } });
    await sameRecords(t);
  });

  it("takes messages without the Hono app, and leaves everything else to it", async () => {
    const t = await trio({});
    await rawExchange(t.fast.url, { path: STANDARD, headers: JSON_TYPE, body: allergy() });
    await rawExchange(t.fast.url, { path: `/w/team-a${STANDARD}`, headers: JSON_TYPE, body: "{" });
    await rawExchange(t.fast.url, { path: STANDARD, headers: { ...JSON_TYPE, "X-Fault": "teapot" }, body: allergy() });
    expect(t.honoCalls()).toBe(0);
    await rawExchange(t.fast.url, { method: "GET", path: "/__admin/health" });
    await rawExchange(t.fast.url, { method: "GET", path: STANDARD });
    expect(t.honoCalls()).toBe(2);
  });
});

describe("the message fast path on one connection", { timeout: 60_000 }, () => {
  it("pipelined messages: each waits its own delay, a timeout fault holds the answers before it", async () => {
    const t = await trio({});
    const delayed = (fault: string) => ({
      path: STANDARD,
      headers: { ...JSON_TYPE, "X-Fault": fault },
      body: allergy(),
    });
    // The second answer waits its 600 ms though the first (30 ms) is still being written when its delay starts.
    const delays = [delayed("delay"), delayed("long-delay")];
    for (const server of [t.fast, t.hono]) {
      const both = await pipelined(server.url, delays);
      expect(both.received.match(/HTTP\/1\.1 200 /g)).toHaveLength(2);
      const secondAt = both.arrivals.at(-1) as number;
      // Generous: the machine is loaded, but a skipped delay answers both at once (well under 600 ms).
      expect(secondAt, server === t.fast ? "fast" : "hono").toBeGreaterThanOrEqual(500);
    }
    // A timeout fault behind a delayed answer: the delayed answer is sent, then nothing until the client gives up.
    const sents = [delayed("delay"), delayed("timeout")];
    const fast = await pipelined(t.fast.url, sents, 400);
    const hono = await pipelined(t.hono.url, sents, 400);
    expect(withoutDate(fast.received)).toBe(withoutDate(hono.received));
    expect(fast.received).toMatch(/^HTTP\/1\.1 200 /);
    await sameRecords({ ...t, apps: { ...t.apps, inProcess: t.apps.hono } });
  });
});
