import { createServer, request, type Server } from "node:http";
import { connect } from "node:net";
import { getRequestListener } from "@hono/node-server";
import type { AllergyIntolerance } from "fhir/r4.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp, type SandboxApp } from "../../src/app.js";
import { type RunningServer, startServer } from "../../src/server/start-server.js";
import { reusableStats } from "../../src/server/write-reusable.js";
import { envelope, example, messageBundle, STANDARD } from "../support/messages.js";
import { within } from "../support/within.js";

// A served sandbox writes a listing of calls on the socket itself, with buffers it gets back once Node has written
// them (src/server/write-reusable.ts). Here the same app is served twice: by the sandbox's server, and by the Hono
// Node adapter alone (the web stream, a new buffer for each chunk: the server as it was). Every listing must be the
// same status, headers (Date aside) and bytes from both; a reader that stops reading and goes on later, or goes
// away, must get the same bytes or cost nothing.

const QUIET = { info: () => undefined, error: () => undefined, warn: () => undefined };

/** An allergy whose text may hold what a listing must escape or keep on one line. */
function allergy(i: number, text: string): string {
  const { text: _narrative, ...rest } = example<AllergyIntolerance>("allergyintolerance-example.json");
  const resource: AllergyIntolerance = { ...rest, code: { text } };
  return envelope(messageBundle("add-allergy", [resource], { id: `reusable-${i}` }));
}

interface Answer {
  status: number;
  headers: string[];
  body: Buffer;
}

/** GET (or HEAD) over a fresh connection: status, raw headers without Date, and the body's bytes. */
function get(base: string, path: string, method = "GET"): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const headers: string[] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) {
          if (res.rawHeaders[i]?.toLowerCase() !== "date")
            headers.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
        }
        resolve({ status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks) });
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

let sandbox: SandboxApp;
let served: RunningServer;
let adapterOnly: Server;
let adapterBase: string;

beforeAll(async () => {
  sandbox = createApp({ watch: false }, { logger: QUIET });
  let n = 0;
  const send = async (body: string) => {
    const res = await sandbox.app.request(STANDARD, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    await res.arrayBuffer();
  };
  for (const odd of ["<b>", "a & b", "\u2028", "\u0085", "حساسية"]) await send(allergy(n++, `odd ${odd}`));
  await send("this is not json <script>");
  // A body larger than a chunk, alone in its own buffer.
  await send(allergy(n++, "x".repeat(70 * 1024)));
  // Enough calls for a listing of many chunks (about 4 KiB a call).
  for (let i = 0; i < 700; i++) await send(allergy(n++, `plain ${i}`));
  served = await startServer(sandbox, { port: 0, host: "127.0.0.1" });
  adapterOnly = createServer(getRequestListener(sandbox.app.fetch));
  await new Promise<void>((resolve) => adapterOnly.listen(0, "127.0.0.1", resolve));
  const address = adapterOnly.address();
  adapterBase = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
}, 120_000);

afterAll(async () => {
  await served?.close();
  if (adapterOnly) await new Promise((resolve) => adapterOnly.close(resolve));
  await sandbox?.close();
});

describe("a listing of calls written on the socket with buffers given back", { timeout: 60_000 }, () => {
  it.each([
    ["/__admin/calls", "GET"],
    ["/__admin/calls?format=ndjson", "GET"],
    ["/__admin/calls?view=summary", "GET"],
    ["/__admin/calls?limit=100&cursor=0", "GET"],
    ["/__admin/calls?limit=50&format=ndjson&order=desc", "GET"],
    ["/__admin/calls?q=%D8%AD%D8%B3%D8%A7%D8%B3%D9%8A%D8%A9", "GET"],
    ["/__admin/calls?operation=nothing-of-the-sort", "GET"],
    ["/__admin/calls/export", "GET"],
    ["/__admin/calls", "HEAD"],
  ])("%s (%s) is the same status, headers and bytes as the Hono adapter writes", async (path, method) => {
    const before = { ...reusableStats };
    const mine = await get(served.url, path, method);
    const theirs = await get(adapterBase, path, method);
    expect(mine.status).toBe(theirs.status);
    expect(mine.headers).toEqual(theirs.headers);
    expect(mine.body.equals(theirs.body)).toBe(true);
    if (method === "GET" && mine.status === 200) {
      // Taken by the reusing writer, and its buffers reused: more chunks than buffers once the listing is long.
      expect(reusableStats.chunks).toBeGreaterThan(before.chunks);
      if (mine.body.length > 1024 * 1024) {
        expect(reusableStats.buffers - before.buffers).toBeLessThan((reusableStats.chunks - before.chunks) / 2);
      }
    }
  });

  it("writes the whole journal as the bytes the in-process app gives, several MiB", async () => {
    const mine = await get(served.url, "/__admin/calls");
    const inProcess = Buffer.from(await (await sandbox.app.request("/__admin/calls")).arrayBuffer());
    expect(mine.body.length).toBeGreaterThan(2 * 1024 * 1024);
    expect(mine.body.equals(inProcess)).toBe(true);
    expect(JSON.parse(mine.body.toString("utf8")).calls).toHaveLength(sandbox.journal.size);
  });

  it("lets other work run between its turns, however fast the reader takes the bytes", async () => {
    // A listing written in one go would hold every other caller's messages until it ends. Counted between two turns
    // of the event loop: the chunks written.
    let done = false;
    let previous = reusableStats.chunks;
    let most = 0;
    let turns = 0;
    const tick = () => {
      most = Math.max(most, reusableStats.chunks - previous);
      previous = reusableStats.chunks;
      turns++;
      if (!done) setImmediate(tick);
    };
    setImmediate(tick);
    const before = reusableStats.chunks;
    const answer = await get(served.url, "/__admin/calls").finally(() => {
      done = true;
    });
    const chunks = reusableStats.chunks - before;
    expect(answer.body.length).toBeGreaterThan(2 * 1024 * 1024);
    expect(chunks).toBeGreaterThan(30);
    // 256 KiB a turn: 4 chunks of 64 KiB and the rest of a call (a chunk of its own when it is larger).
    expect(most).toBeLessThanOrEqual(10);
    expect(turns).toBeGreaterThan(chunks / 10);
  });

  it("gives a reader that stops reading the same bytes once it reads on, no buffer taken back too early", async () => {
    const expected = Buffer.from(await (await sandbox.app.request("/__admin/calls?format=ndjson")).arrayBuffer());
    const before = reusableStats.drainWaits;
    const socket = connect(Number(new URL(served.url).port), "127.0.0.1");
    const received: Buffer[] = [];
    socket.on("data", (c: Buffer) => received.push(c));
    // Not read until the server has had to wait for it: what the socket did not take stays with Node meanwhile.
    socket.pause();
    socket.write("GET /__admin/calls?format=ndjson HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    const stalled = new Promise<void>((resolve) => {
      const check = () => (reusableStats.drainWaits > before ? resolve() : setImmediate(check));
      check();
    });
    // Several listings' worth of bytes sit in the kernel's buffers before the server must wait: a listing this size
    // fills them.
    await within(stalled, "the server waiting for a reader that stopped", 30_000);
    const ended = new Promise((resolve) => socket.on("end", resolve));
    socket.resume();
    await within(ended, "the rest of the listing", 30_000);
    const raw = Buffer.concat(received);
    const head = raw.indexOf("\r\n\r\n");
    expect(raw.subarray(0, head).toString("latin1")).toMatch(/transfer-encoding: chunked/i);
    expect(dechunk(raw.subarray(head + 4)).equals(expected)).toBe(true);
  });

  it("goes on for a reader that stops and goes on again and again, each time the server has had to wait", async () => {
    // Calls of about 30 KiB: a turn's last chunk is then often small, which is where a wait for `drain` that the
    // socket never emits would leave the listing stalled.
    const big = createApp({ watch: false }, { logger: QUIET });
    for (let i = 0; i < 400; i++) {
      const body = allergy(10_000 + i, `large ${i} ${"x".repeat(30_000)}`);
      const res = await big.app.request(STANDARD, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      await res.arrayBuffer();
    }
    const server = await startServer(big, { port: 0, host: "127.0.0.1" });
    try {
      const expected = Buffer.from(await (await big.app.request("/__admin/calls?format=ndjson")).arrayBuffer());
      expect(expected.length).toBeGreaterThan(10 * 1024 * 1024);
      const socket = connect(Number(new URL(server.url).port), "127.0.0.1");
      const received: Buffer[] = [];
      let ended = false;
      const end = new Promise<void>((resolve) =>
        socket.on("end", () => {
          ended = true;
          resolve();
        }),
      );
      const start = { ...reusableStats };
      let seen = { waits: start.drainWaits, ended: start.ended };
      let chunksAtResume = Number.POSITIVE_INFINITY;
      // Stopped until the server has had to wait for the reader (or has finished), then read until the server writes
      // again, then stopped again.
      const stopUntilWaited = () => {
        socket.pause();
        const check = () => {
          if (ended) return;
          if (reusableStats.drainWaits > seen.waits || reusableStats.ended > seen.ended) {
            seen = { waits: reusableStats.drainWaits, ended: reusableStats.ended };
            chunksAtResume = reusableStats.chunks;
            socket.resume();
          } else setImmediate(check);
        };
        check();
      };
      socket.on("data", (c: Buffer) => {
        received.push(c);
        if (reusableStats.chunks > chunksAtResume) {
          chunksAtResume = Number.POSITIVE_INFINITY;
          stopUntilWaited();
        }
      });
      stopUntilWaited();
      socket.write("GET /__admin/calls?format=ndjson HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
      await within(end, "the whole listing, read stop and go", 60_000);
      expect(reusableStats.drainWaits - start.drainWaits).toBeGreaterThan(20);
      const raw = Buffer.concat(received);
      expect(dechunk(raw.subarray(raw.indexOf("\r\n\r\n") + 4)).equals(expected)).toBe(true);
    } finally {
      await server.close();
      await big.close();
    }
  });

  it("stops for a reader that goes away, and serves on", async () => {
    const socket = connect(Number(new URL(served.url).port), "127.0.0.1");
    const first = new Promise<void>((resolve) => socket.once("data", () => resolve()));
    socket.write("GET /__admin/calls HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    await within(first, "the listing's first bytes");
    socket.destroy();
    const health = await get(served.url, "/__admin/health");
    expect(health.status).toBe(200);
    const again = await get(served.url, "/__admin/calls?limit=1");
    expect(JSON.parse(again.body.toString("utf8")).calls).toHaveLength(1);
  });
});

/** The body of a chunked HTTP/1.1 answer. */
function dechunk(raw: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = raw.indexOf("\r\n", at);
    const size = Number.parseInt(raw.subarray(at, eol).toString("latin1"), 16);
    if (size === 0) return Buffer.concat(parts);
    parts.push(raw.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}
