import { createServer, type IncomingMessage, type Server } from "node:http";
import { connect, type Socket } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { afterEach, describe, expect, it } from "vitest";
import { readIncoming } from "../../src/http/node-body.js";
import { type BodyRead, readBody } from "../../src/http/read-body.js";

/**
 * readIncoming (the message fast path's body reader) against readBody through the Node adapter (the Hono app's),
 * when the body is read only after the client went away: the fast path reads it after an OAuth2 token is verified,
 * which is asynchronous, so a client that sends its message and resets meanwhile is a real case.
 */

const LIMIT = 1024;
const BODY = '{"content":"a message sent whole"}';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

type Reader = (incoming: IncomingMessage, listener: (read: BodyRead) => void) => void;

/** The fast path's reader, once the request is closed. */
const fastReader: Reader = (incoming, done) => {
  incoming.once("close", () => {
    void readIncoming(incoming, LIMIT, incoming.headers["content-length"] ?? null).then(done);
  });
};

/** The Hono app's reader through the Node adapter, once the request is closed. */
function adapterReader(): { reader: Reader; listener: ReturnType<typeof getRequestListener> } {
  const pending = new Map<IncomingMessage, (read: BodyRead) => void>();
  const listener = getRequestListener(async (request, env) => {
    const incoming = env.incoming as IncomingMessage;
    const done = pending.get(incoming);
    // The close alone: Node emits the reset as an error only to a request that listens for one.
    if (!incoming.destroyed) await new Promise((resolve) => incoming.once("close", resolve));
    done?.(await readBody(request, LIMIT, request.headers.get("content-length")));
    return new Response(null, { status: 204 });
  });
  return { reader: (incoming, done) => pending.set(incoming, done), listener };
}

/**
 * Sends `head` + `body` on a fresh connection; once the server has the request, `leave` ends the connection.
 * Resolves with what the server read.
 */
async function readAfter(
  which: "fast" | "adapter",
  head: string,
  body: string,
  leave: (socket: Socket) => void,
): Promise<BodyRead> {
  let seen: (incoming: IncomingMessage) => void = () => undefined;
  const arrived = new Promise<IncomingMessage>((resolve) => {
    seen = resolve;
  });
  let result: (read: BodyRead) => void = () => undefined;
  const read = new Promise<BodyRead>((resolve) => {
    result = resolve;
  });
  const adapter = adapterReader();
  const server = createServer((incoming, outgoing) => {
    seen(incoming);
    if (which === "fast") fastReader(incoming, result);
    else {
      adapter.reader(incoming, result);
      void adapter.listener(incoming, outgoing);
    }
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  const socket = connect(port, "127.0.0.1");
  socket.on("error", () => undefined);
  socket.write(`${head}\r\n\r\n${body}`);
  const incoming = await arrived;
  // The body has reached the server when it is whole (complete) or a part has been parsed.
  while (!incoming.complete && incoming.readableLength === 0) await new Promise((r) => setTimeout(r, 5));
  leave(socket);
  return read;
}

const POST = "POST /m HTTP/1.1\r\nHost: test";
const cases: Array<{ name: string; head: string; body: string; leave: (socket: Socket) => void }> = [
  {
    name: "sent whole, then reset",
    head: `${POST}\r\nContent-Length: ${BODY.length}`,
    body: BODY,
    leave: (s) => s.resetAndDestroy(),
  },
  {
    name: "sent whole and chunked, then reset",
    head: `${POST}\r\nTransfer-Encoding: chunked`,
    body: `${BODY.length.toString(16)}\r\n${BODY}\r\n0\r\n\r\n`,
    leave: (s) => s.resetAndDestroy(),
  },
  {
    name: "half sent, then reset",
    head: `${POST}\r\nContent-Length: ${BODY.length}`,
    body: BODY.slice(0, 10),
    leave: (s) => s.resetAndDestroy(),
  },
  {
    name: "half sent, then closed",
    head: `${POST}\r\nContent-Length: ${BODY.length}`,
    body: BODY.slice(0, 10),
    leave: (s) => s.destroy(),
  },
];

describe("readIncoming on a request the client has left", () => {
  for (const { name, head, body, leave } of cases) {
    it(`${name}: reads what the adapter reads`, async () => {
      const adapter = await readAfter("adapter", head, body, leave);
      const fast = await readAfter("fast", head, body, leave);
      expect(fast).toEqual(adapter);
    });
  }

  it("a message sent whole and then reset is read whole", async () => {
    const read = await readAfter("fast", `${POST}\r\nContent-Length: ${BODY.length}`, BODY, (s) => s.resetAndDestroy());
    expect(read).toEqual({ ok: true, text: BODY });
  });
});
