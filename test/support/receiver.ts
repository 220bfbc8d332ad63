import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A push as a local pharmacy receiver got it. */
export interface Received {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  body: string;
  /** The message Bundle inside the {"content": "..."} envelope. */
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary FHIR JSON
  bundle: any;
}

/** How the receiver answers a push. */
export interface ReceiverReply {
  status: number;
  body?: string;
  /** Extra response headers (e.g. a redirect's Location). */
  headers?: Record<string, string>;
  /** After `body`, this many filler bytes, written as the client reads them (backpressure honoured). */
  fill?: number;
  /** Never end the response after the body and filler: a client that reads to the end waits forever. */
  keepOpen?: boolean;
}

export type Answer = (req: Received, n: number) => ReceiverReply | "hang" | "reset";

const FILLER = Buffer.alloc(64 * 1024, "x");

/** Writes `bytes` filler bytes, waiting for the client to read (drain) and stopping when it goes away. */
async function writeFiller(res: ServerResponse, bytes: number): Promise<void> {
  let left = bytes;
  while (left > 0 && !res.destroyed) {
    const piece = left >= FILLER.length ? FILLER : FILLER.subarray(0, left);
    left -= piece.length;
    if (!res.write(piece)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off("drain", done);
          res.off("close", done);
          resolve();
        };
        res.on("drain", done);
        res.on("close", done);
      });
    }
  }
}

/**
 * A pharmacy's push receiver on 127.0.0.1 (port 0): records what it gets and
 * answers as told (default 200). `next()` resolves with the next push, so
 * tests wait on events, not on time. "hang" holds a request until
 * `release()` (or `close()`); `stats` counts requests open at once.
 */
export async function startReceiver(answer: Answer = () => ({ status: 200 })) {
  const received: Received[] = [];
  const waiting: Array<(r: Received) => void> = [];
  const hanging = new Set<ServerResponse>();
  const stats = { open: 0, maxOpen: 0 };
  const server: Server = createServer((req, res) => {
    stats.open++;
    stats.maxOpen = Math.max(stats.maxOpen, stats.open);
    res.on("close", () => {
      stats.open--;
      hanging.delete(res);
    });
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      let bundle: unknown;
      try {
        bundle = JSON.parse(JSON.parse(body).content);
      } catch {
        bundle = undefined;
      }
      const r: Received = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body, bundle };
      received.push(r);
      const reply = answer(r, received.length);
      if (reply === "hang") hanging.add(res);
      else if (reply === "reset") req.socket.resetAndDestroy();
      else respond(res, reply);
      const waiter = waiting.shift();
      waiter?.(r);
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  let seen = 0;
  return {
    url: `http://127.0.0.1:${port}/fhir-hook`,
    received,
    /** Requests open right now (arrived, not yet answered or dropped) and the most ever open at once. */
    stats: stats as Readonly<typeof stats>,
    /** The next push not yet taken (already received, or the next to arrive). */
    next(): Promise<Received> {
      const index = seen++;
      if (received[index]) return Promise.resolve(received[index] as Received);
      return new Promise((resolve) => waiting.push(resolve));
    },
    /** Answers up to `count` held ("hang") requests, oldest first; returns how many it answered. */
    release(count = Number.POSITIVE_INFINITY, reply: ReceiverReply = { status: 200 }): number {
      let n = 0;
      for (const res of [...hanging]) {
        if (n >= count) break;
        hanging.delete(res);
        respond(res, reply);
        n++;
      }
      return n;
    },
    async close() {
      for (const res of hanging) res.socket?.destroy();
      server.closeAllConnections();
      server.close();
      await once(server, "close").catch(() => undefined);
    },
  };
}

function respond(res: ServerResponse, reply: ReceiverReply): void {
  res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
  if (reply.fill === undefined && !reply.keepOpen) {
    res.end(reply.body ?? "{}");
    return;
  }
  if (reply.body !== undefined) res.write(reply.body);
  void writeFiller(res, reply.fill ?? 0).then(() => {
    if (!reply.keepOpen && !res.destroyed) res.end();
  });
}

/** A port on 127.0.0.1 that nothing listens on (taken from the OS, then released): for a server to start on, or to be refused. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, "close");
  return port;
}

/** An http URL on 127.0.0.1 where nothing listens (a port opened and closed): connections are refused. */
export async function refusedUrl(): Promise<string> {
  return `http://127.0.0.1:${await closedPort()}/fhir-hook`;
}
