import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect as tcpConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/main.js";
import { type Child, http, killStray, startCli } from "../cli/cli-process.js";
import { within } from "../support/within.js";
import { eventually, profileMessage, sendMessage } from "./load.js";

// Slow, idle and too many clients against the real CLI, with small limits so that each case takes a
// fraction of a second: the server closes what it must, answers what it should, and says so in health.

const HEADERS_TIMEOUT_MS = 300;
const REQUEST_TIMEOUT_MS = 600;
const KEEP_ALIVE_TIMEOUT_MS = 100;
/** Node closes an idle keep-alive connection about a second after --keep-alive-timeout. */
const NODE_KEEP_ALIVE_SLACK_MS = 1_000;
/** Bound on any wait for the server to close a connection. */
const CLOSE_WITHIN_MS = 3_000;

/** The built-in answer after a delay longer than --request-timeout: the timeout is not on the answer. */
const SLOW_ANSWER = `rules:
  - name: slower-than-request-timeout
    when: { headers: { X-Fault-Test: slow } }
    respond: { builtIn: true, delay: 900ms }
`;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "faults-slow-clients-"));
  writeFileSync(join(dir, "rules.yaml"), SLOW_ANSWER);
});
afterAll(async () => {
  await killStray();
  rmSync(dir, { recursive: true, force: true });
});

/** A raw TCP client: what it received, and when the server closed the connection (from the connect). */
async function rawClient(url: string) {
  const { hostname, port } = new URL(url);
  // Timed from before the connect: the server's clock for the connection cannot start earlier, while the client's
  // "connect" event can run long after the server accepted (seen 60 ms late on a loaded machine).
  const startedAt = performance.now();
  const socket = tcpConnect(Number(port), hostname);
  let received = "";
  socket.setEncoding("utf8").on("data", (chunk: string) => {
    received += chunk;
  });
  socket.on("error", () => undefined); // a reset ends it as well as a close
  const closed = new Promise<{ afterMs: number; received: string }>((resolve) =>
    socket.once("close", () => resolve({ afterMs: performance.now() - startedAt, received })),
  );
  await once(socket, "connect");
  return {
    socket,
    received: () => received,
    /** The server's close, at most `CLOSE_WITHIN_MS` away. */
    closed: () => within(closed, "the server closing the connection", CLOSE_WITHIN_MS),
  };
}

const REQUEST_LINE = "POST /uae-fhir/r4/$process-message HTTP/1.1\r\nHost: sandbox\r\n";

describe("server timeouts (--headers-timeout, --request-timeout, --keep-alive-timeout)", { timeout: 20_000 }, () => {
  let url: string;
  let child: Child;
  beforeAll(async () => {
    ({ url, child } = await startCli([
      "--headers-timeout",
      `${HEADERS_TIMEOUT_MS}ms`,
      "--request-timeout",
      `${REQUEST_TIMEOUT_MS}ms`,
      "--keep-alive-timeout",
      `${KEEP_ALIVE_TIMEOUT_MS}ms`,
      "--scenarios",
      join(dir, "rules.yaml"),
      "--no-watch",
    ]));
  });

  it("GET /__admin/health shows the limits", async () => {
    const health = await http(`${url}/__admin/health`);
    expect(health.json.server).toEqual({
      headersTimeoutMs: HEADERS_TIMEOUT_MS,
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: KEEP_ALIVE_TIMEOUT_MS,
      maxConnections: 1000,
      shutdownGraceMs: 5000,
    });
  });

  it("a connection that sends nothing is answered 408 and closed after the headers timeout", async () => {
    const client = await rawClient(url);
    const { afterMs, received } = await client.closed();
    expect(received).toMatch(/^HTTP\/1\.1 408 /);
    expect(afterMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS);
  });

  it("a client sending its headers slowly (slow-loris) is answered 408 and closed after the headers timeout", async () => {
    const client = await rawClient(url);
    client.socket.write(REQUEST_LINE);
    // The slow client: a header line every 50 ms, never the blank line that ends them.
    let n = 0;
    const dribble = setInterval(() => client.socket.write(`X-Slow-${n++}: ${n}\r\n`), 50);
    try {
      const { afterMs, received } = await client.closed();
      expect(received).toMatch(/^HTTP\/1\.1 408 /);
      expect(afterMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS);
      expect(n).toBeGreaterThan(2);
    } finally {
      clearInterval(dribble);
    }
  });

  it("a client sending its body slowly is answered 408 after the request timeout; the journal says 408, no bug", async () => {
    const client = await rawClient(url);
    client.socket.write(`${REQUEST_LINE}Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"content":`);
    const dribble = setInterval(() => client.socket.write(" "), 50);
    try {
      const { afterMs, received } = await client.closed();
      expect(received).toMatch(/^HTTP\/1\.1 408 /);
      expect(afterMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS);
    } finally {
      clearInterval(dribble);
    }
    const call = await eventually(async () => {
      const calls = (await http(`${url}/__admin/calls`)).json.calls as Array<{ response: { status: number } | null }>;
      return calls.find((c) => c.response?.status === 408);
    }, "the cut-off call in the journal");
    expect(JSON.stringify(call)).toContain("--request-timeout");
    expect(child.stderr).not.toContain("unhandled error");
  });

  it("an idle keep-alive connection is closed after the keep-alive timeout", async () => {
    const client = await rawClient(url);
    client.socket.write("GET /__admin/health HTTP/1.1\r\nHost: sandbox\r\n\r\n");
    const { afterMs, received } = await client.closed();
    expect(received).toMatch(/^HTTP\/1\.1 200 /);
    expect(received).toMatch(/keep-alive/i);
    expect(afterMs).toBeGreaterThanOrEqual(KEEP_ALIVE_TIMEOUT_MS);
    expect(afterMs).toBeLessThan(KEEP_ALIVE_TIMEOUT_MS + NODE_KEEP_ALIVE_SLACK_MS + 1_000);
  });

  it("a scripted delay longer than the request timeout is still answered: the timeout is on receiving, not answering", async () => {
    const answer = await sendMessage(url, profileMessage(), { "x-fault-test": "slow" });
    expect(answer).toMatchObject({ status: 200, rule: "slower-than-request-timeout" });
  });
});

describe("--max-connections", { timeout: 20_000 }, () => {
  it("closes connections over the cap as they arrive, says so once, and serves again when one ends", async () => {
    const { url, child } = await startCli(["--max-connections", "3", "--scenarios", join(dir, "rules.yaml")]);
    const open = [await rawClient(url), await rawClient(url), await rawClient(url)];
    const over = await rawClient(url);
    const { received } = await over.closed();
    expect(received).toBe("");
    await child.waitForOutput(
      /3 connections are open \(--max-connections\): dropped 1 new connection/,
      5_000,
      "stderr",
    );
    const another = await rawClient(url);
    expect((await another.closed()).received).toBe("");
    // One of the three asks for an answer and the end of its connection: then there is room again.
    const [first] = open as [Awaited<ReturnType<typeof rawClient>>];
    first.socket.write("GET /__admin/health HTTP/1.1\r\nHost: sandbox\r\nConnection: close\r\n\r\n");
    expect((await first.closed()).received).toMatch(/^HTTP\/1\.1 200 /);
    const health = await eventually(
      () =>
        http(`${url}/__admin/health`).then(
          (r) => r,
          () => undefined,
        ),
      "a new connection once one ended",
    );
    expect(health.json.server.maxConnections).toBe(3);
    // Drops are summarised, not logged one by one.
    expect(child.stderr.match(/--max-connections/g)).toHaveLength(1);
    for (const c of open) c.socket.destroy();
  });
});

describe("server limit flags", () => {
  it.each([
    [
      ["--headers-timeout", "2s", "--request-timeout", "1s"],
      /--headers-timeout \(2000 ms\) must not be longer than --request-timeout \(1000 ms\)/,
    ],
    [["--max-connections", "0"], /--max-connections "0": expected a positive integer/],
  ])("exit 2 on %j, before serving", async (args, message) => {
    const err: string[] = [];
    const out: string[] = [];
    const code = await runCli(["serve", "--port", "0", "--host", "127.0.0.1", ...args], {
      out: (l) => out.push(l),
      err: (l) => err.push(l),
      env: {},
    });
    expect(code).toBe(2);
    expect(err.join("\n")).toMatch(message);
    expect(out.join("\n")).not.toMatch(/listening on/);
  });
});
