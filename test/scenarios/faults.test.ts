import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Bundle, Patient } from "fhir/r4.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createApp, type SandboxApp } from "../../src/app.js";
import { SimulatedNetworkFault } from "../../src/http/faults.js";
import { type RunningServer, startServer } from "../../src/server/start-server.js";
import { envelope, example, messageBundle, responseHeader, STANDARD } from "../support/messages.js";

// Faults as a real HTTP client sees them: a sandbox on a real socket (port 0, 127.0.0.1).

/** Longest any single client call may take before the test gives up on it. */
const CLIENT_TIMEOUT_MS = 5_000;
/** How long the "timeout" fault's client waits before giving up. */
const CLIENT_PATIENCE_MS = 200;
const DELAY_MS = 300;

/** One rule per fault, chosen by the X-Fault header; "delay" lets the built-in answer, late. */
const SCENARIO = `rules:
  - name: fault-connection-reset
    when: { headers: { X-Fault: connection-reset } }
    respond: { fault: connection-reset }
  - name: fault-empty-body
    when: { headers: { X-Fault: empty-body } }
    respond: { fault: empty-body }
  - name: fault-malformed-json
    when: { headers: { X-Fault: malformed-json } }
    respond: { fault: malformed-json }
  - name: fault-timeout
    when: { headers: { X-Fault: timeout } }
    respond: { fault: timeout }
  - name: slow
    when: { headers: { X-Fault: delay } }
    respond: { builtIn: true, delay: ${DELAY_MS} }
`;

const QUIET = { info: () => undefined, error: () => undefined };

const message = () => envelope(messageBundle("view-patient-profile", [example<Patient>("patient-example.json")]));

interface RawReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * POSTs a message over a bare TCP socket and resolves with the bytes received
 * when the server closes normally (FIN); rejects with the socket's error (a RST
 * gives ECONNRESET) — the one client that tells a reset from a close.
 */
function tcpPost(url: string, headers: Record<string, string>): Promise<{ received: string }> {
  const { hostname, port } = new URL(url);
  const body = message();
  const head = [
    `POST ${STANDARD} HTTP/1.1`,
    `Host: ${hostname}:${port}`,
    "Content-Type: application/json",
    `Content-Length: ${Buffer.byteLength(body)}`,
    "Connection: close",
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ].join("\r\n");
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    let received = "";
    socket.setEncoding("utf8");
    socket.setTimeout(CLIENT_TIMEOUT_MS, () => socket.destroy(new Error(`no answer in ${CLIENT_TIMEOUT_MS} ms`)));
    socket.on("data", (chunk: string) => {
      received += chunk;
    });
    socket.on("error", (error: Error & { received?: string }) => reject(Object.assign(error, { received })));
    socket.on("end", () => resolve({ received }));
    socket.write(`${head}\r\n\r\n${body}`);
  });
}

/** POSTs a message with node:http on a fresh connection: its 'error' event carries the socket's error code. */
function rawPost(url: string, headers: Record<string, string>): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${STANDARD}`,
      { method: "POST", agent: false, headers: { "content-type": "application/json", ...headers } },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          body += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on("error", reject);
      },
    );
    req.setTimeout(CLIENT_TIMEOUT_MS, () => req.destroy(new Error(`no answer in ${CLIENT_TIMEOUT_MS} ms`)));
    req.on("error", reject);
    req.end(message());
  });
}

const postFetch = (url: string, headers: Record<string, string>, signal = AbortSignal.timeout(CLIENT_TIMEOUT_MS)) =>
  fetch(`${url}${STANDARD}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: message(),
    signal,
  });

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary admin JSON
async function adminJson(url: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${url}/__admin${path}`, {
    method,
    signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
    ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
  });
  expect(res.status).toBe(200);
  return res.json();
}

/** Waits (long-poll, no sleeping) until the journal holds `count` message calls, then returns them. */
async function recordedCalls(url: string, count: number) {
  const waited = await adminJson(url, "POST", "/calls/wait", {
    operation: "view-patient-profile",
    atLeast: count,
    timeoutMs: 4_000,
  });
  expect(waited).toMatchObject({ ok: true, matched: count });
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary call JSON
  return (await adminJson(url, "GET", "/calls")).calls as any[];
}

const responseCode = (bundle: Bundle) => responseHeader(bundle).response?.code;

/** The sandbox still answers an ordinary message after a fault. */
async function expectStillServing(url: string) {
  const res = await postFetch(url, {});
  expect(res.status).toBe(200);
  const bundle = (await res.json()) as Bundle;
  expect(bundle.resourceType).toBe("Bundle");
  expect(responseCode(bundle)).toBe("ok");
}

/** The error a rejected call failed with, or a failure when it answered. */
async function rejection(call: unknown): Promise<Error & { code?: string; cause?: unknown }> {
  let answered: unknown;
  try {
    answered = await call;
  } catch (error) {
    return error as Error;
  }
  throw new Error(`expected no answer, got ${JSON.stringify(answered)}`);
}

let dir: string;
let sandbox: SandboxApp;
let server: RunningServer;
let url: string;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "faults-"));
  writeFileSync(join(dir, "faults.yaml"), SCENARIO);
  sandbox = createApp({ scenarios: dir }, { logger: QUIET });
  server = await startServer(sandbox, { port: 0, host: "127.0.0.1" });
  url = server.url;
});

afterEach(async () => {
  await server.close(500);
  sandbox.close();
  rmSync(dir, { recursive: true, force: true });
});

interface FaultCase {
  fault: string;
  /** What the client sees, asserted; resolves once it has seen it. */
  client(url: string): Promise<void>;
  /** Whether a response (status 200) is recorded, or none (reset, timeout). */
  answered: boolean;
}

const FAULTS: FaultCase[] = [
  {
    fault: "connection-reset",
    client: async (url) => {
      // A RST, not an orderly close: the socket errors with ECONNRESET, having received no byte of an answer.
      const error = (await rejection(tcpPost(url, { "x-fault": "connection-reset" }))) as Error & {
        code?: string;
        received?: string;
      };
      expect(error.code).toBe("ECONNRESET");
      expect(error.received).toBe("");
    },
    answered: false,
  },
  {
    fault: "empty-body",
    client: async (url) => {
      const res = await postFetch(url, { "x-fault": "empty-body" });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
      expect((await res.arrayBuffer()).byteLength).toBe(0);
    },
    answered: true,
  },
  {
    fault: "malformed-json",
    client: async (url) => {
      const res = await postFetch(url, { "x-fault": "malformed-json" });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
      const text = await res.text();
      expect(text.length).toBeGreaterThan(0);
      expect(() => JSON.parse(text)).toThrow(SyntaxError);
    },
    answered: true,
  },
  {
    fault: "timeout",
    client: async (url) => {
      const started = performance.now();
      const error = await rejection(postFetch(url, { "x-fault": "timeout" }, AbortSignal.timeout(CLIENT_PATIENCE_MS)));
      // The client gave up (its own timeout), having had no response at all.
      expect(error.name).toBe("TimeoutError");
      expect(performance.now() - started).toBeGreaterThanOrEqual(CLIENT_PATIENCE_MS - 1);
    },
    answered: false,
  },
];

describe("scripted faults, from a real HTTP client (CONTRACT §7)", { timeout: 15_000 }, () => {
  it.each(FAULTS)("$fault: the client sees it, the journal records it, the server keeps serving", async (c) => {
    await c.client(url);

    // The server records a timeout once it notices the client went away: wait on the journal, not the clock.
    const [call] = await recordedCalls(url, 1);
    expect(call).toMatchObject({ rule: `fault-${c.fault}`, fault: c.fault, operation: "view-patient-profile" });
    if (c.answered) {
      expect(call.response).toMatchObject({ status: 200 });
      expect(call).not.toHaveProperty("error");
    } else {
      expect(call.response).toBeNull();
      expect(call.error).toMatch(c.fault);
    }

    await expectStillServing(url);
    const calls = await recordedCalls(url, 2);
    expect(calls.map((x) => x.rule)).toEqual(expect.arrayContaining([`fault-${c.fault}`, null]));
  });

  it("connection-reset makes fetch and node:http fail with ECONNRESET, not an HTTP answer", async () => {
    const error = await rejection(postFetch(url, { "x-fault": "connection-reset" }));
    expect(error).toBeInstanceOf(TypeError);
    expect(error.cause).toMatchObject({ code: "ECONNRESET" });

    const viaHttp = await rejection(rawPost(url, { "x-fault": "connection-reset" }));
    expect(viaHttp.code).toBe("ECONNRESET");
    await expectStillServing(url);
  });

  it("a delay holds the answer at least that long, then the built-in behaviour answers", async () => {
    const started = performance.now();
    const res = await postFetch(url, { "x-fault": "delay" });
    const elapsed = performance.now() - started;

    expect(res.status).toBe(200);
    expect(responseCode((await res.json()) as Bundle)).toBe("ok");
    expect(elapsed).toBeGreaterThanOrEqual(DELAY_MS);
    const [call] = await recordedCalls(url, 1);
    expect(call).toMatchObject({ rule: "slow", response: { status: 200 } });
    expect(call).not.toHaveProperty("fault");
    expect(call.durationMs).toBeGreaterThanOrEqual(DELAY_MS - 1);
  });
});

describe("scripted network faults in-process (app.request)", { timeout: 10_000 }, () => {
  const send = (headers: Record<string, string>, signal?: AbortSignal) =>
    sandbox.app.request(STANDARD, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: message(),
      ...(signal ? { signal } : {}),
    });

  it("connection-reset rejects app.request with SimulatedNetworkFault, as fetch would reject", async () => {
    const error = await rejection(send({ "x-fault": "connection-reset" }));
    expect(error).toBeInstanceOf(SimulatedNetworkFault);
    expect((error as SimulatedNetworkFault).fault).toBe("connection-reset");
    expect(sandbox.journal.list()).toMatchObject([{ rule: "fault-connection-reset", fault: "connection-reset" }]);
    expect(sandbox.journal.list()[0]?.response).toBeNull();
  });

  it("timeout holds app.request until the caller's signal aborts, then rejects with SimulatedNetworkFault", async () => {
    const started = performance.now();
    const error = await rejection(send({ "x-fault": "timeout" }, AbortSignal.timeout(CLIENT_PATIENCE_MS)));
    expect(performance.now() - started).toBeGreaterThanOrEqual(CLIENT_PATIENCE_MS - 1);
    expect(error).toBeInstanceOf(SimulatedNetworkFault);
    expect((error as SimulatedNetworkFault).fault).toBe("timeout");
    expect(sandbox.journal.list()).toMatchObject([{ rule: "fault-timeout", fault: "timeout", response: null }]);
  });

  it("empty-body and malformed-json answer in-process too", async () => {
    const empty = await send({ "x-fault": "empty-body" });
    expect(empty.status).toBe(200);
    expect(await empty.text()).toBe("");
    const cut = await send({ "x-fault": "malformed-json" });
    expect(cut.status).toBe(200);
    const text = await cut.text();
    expect(() => JSON.parse(text)).toThrow(SyntaxError);
  });
});
