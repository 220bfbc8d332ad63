import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import type { SandboxApp } from "../app.js";
import { DEFAULT_SERVER_LIMITS, type ServerLimits } from "../config/server-limits.js";
import { counted } from "../text/plural.js";

export interface ListenOptions {
  port: number;
  /** Interface to bind; undefined binds all (IPv4 and IPv6). */
  host: string | undefined;
  /** Timeouts, the connection cap and the shutdown grace; each defaults to DEFAULT_SERVER_LIMITS. */
  limits?: Partial<ServerLimits>;
}

export interface RunningServer {
  /** Base URL to reach the sandbox, e.g. http://127.0.0.1:8080. */
  url: string;
  server: Server;
  limits: ServerLimits;
  /**
   * Stops accepting connections and lets calls in flight finish, each
   * connection closing after its answer; after `graceMs` (default
   * limits.shutdownGraceMs) the calls still running are cut off. Resolves
   * when every connection is closed, with how many calls were cut off.
   */
  close(graceMs?: number): Promise<{ cutOff: number }>;
}

/** Sustained drops are logged at most this often. */
const DROP_LOG_INTERVAL_MS = 10_000;

/**
 * Serves a sandbox app over HTTP with Node: the only place that knows about
 * sockets. Tells the app where it listens and with which limits.
 */
export function startServer(sandbox: SandboxApp, listen: ListenOptions): Promise<RunningServer> {
  const limits: ServerLimits = { ...DEFAULT_SERVER_LIMITS, ...listen.limits };
  // Messages take the sandbox's edge on node:http itself (sandbox.node); the rest goes to the Hono app through the
  // Node adapter.
  const adapter = getRequestListener(sandbox.app.fetch);
  const messages = sandbox.node;
  const server = createServer({
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // Node enforces the two timeouts above on a sweep, every 30 s by default: sweep often enough for them to hold.
    connectionsCheckingInterval: Math.min(
      1000,
      Math.max(10, Math.floor(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 4)),
    ),
  });
  server.maxConnections = limits.maxConnections;
  reportDrops(server, limits.maxConnections, (m, dropped) =>
    sandbox.logger.warn(m, { event: "connections-dropped", dropped, maxConnections: limits.maxConnections }),
  );

  const inFlight = new Set<ServerResponse>();
  let stopping = false;
  server.on("request", (_req, res: ServerResponse) => {
    // While stopping, each answer closes its connection, so that keep-alive clients do not hold the stop open.
    if (stopping) res.shouldKeepAlive = false;
    inFlight.add(res);
    res.once("close", () => inFlight.delete(res));
  });
  // After the bookkeeping above: a message refused before its body is read is answered at once.
  server.on("request", (req, res: ServerResponse) => {
    if (messages?.take(req, res)) return;
    void adapter(req, res);
  });
  let closing: Promise<{ cutOff: number }> | undefined;
  const close = (graceMs = limits.shutdownGraceMs) =>
    (closing ??= new Promise((resolve) => {
      stopping = true;
      // Event streams never finish on their own: ended now, they do not hold the stop for the whole grace.
      sandbox.endStreams();
      for (const res of inFlight) {
        if (!res.headersSent) res.shouldKeepAlive = false;
        else res.once("finish", () => res.socket?.end());
      }
      let cutOff = 0;
      const force = setTimeout(() => {
        cutOff = inFlight.size;
        server.closeAllConnections();
      }, graceMs);
      server.close(() => {
        clearTimeout(force);
        resolve({ cutOff });
      });
      server.closeIdleConnections();
    }));

  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(listen.port, listen.host, () => {
      server.off("error", reject);
      const address = server.address() as AddressInfo;
      const host =
        address.family === "IPv6" ? (address.address === "::" ? "localhost" : `[${address.address}]`) : address.address;
      const shown = host === "0.0.0.0" ? "localhost" : host;
      const url = `http://${shown}:${address.port}`;
      sandbox.served({ url, limits });
      resolve({ url, server, limits, close });
    });
  });
}

/** Logs when connections are dropped at the cap: the first at once, then a count at most every 10 s. */
function reportDrops(server: Server, cap: number, warn: (message: string, dropped: number) => void): void {
  let unreported = 0;
  let lastReport = Number.NEGATIVE_INFINITY;
  server.on("drop", () => {
    unreported++;
    const now = performance.now();
    if (now - lastReport < DROP_LOG_INTERVAL_MS) return;
    warn(
      `${cap} connections are open (--max-connections): dropped ${counted(unreported, "new connection")}${Number.isFinite(lastReport) ? ` in the last ${Math.round((now - lastReport) / 1000)} s` : ""}; they are closed as they arrive until an open one ends`,
      unreported,
    );
    unreported = 0;
    lastReport = now;
  });
}
