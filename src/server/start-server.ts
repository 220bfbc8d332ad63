import { createServer, type Server, type ServerOptions, ServerResponse } from "node:http";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import { getRequestListener } from "@hono/node-server";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import type { SandboxApp } from "../app.js";
import { DEFAULT_SERVER_LIMITS, type ServerLimits } from "../config/server-limits.js";
import { takeReusableBody } from "../http/reusable-body.js";
import type { SandboxLogger } from "../log/logger.js";
import { counted } from "../text/plural.js";
import { type ClientRefusal, certificateRefusal, NO_CERTIFICATE, PLAIN_HTTP } from "../tls/client-refusal.js";
import { refusalLog } from "../tls/refusal-log.js";
import type { TlsListen } from "../tls/server-tls.js";
import { writeReusable } from "./write-reusable.js";

export interface ListenOptions {
  port: number;
  /** Interface to bind; undefined binds all (IPv4 and IPv6). */
  host: string | undefined;
  /** Timeouts, the connection cap and the shutdown grace; each defaults to DEFAULT_SERVER_LIMITS. */
  limits?: Partial<ServerLimits>;
  /**
   * HTTPS (TLS 1.2 and later): on `port`, or on `tls.port` with plain HTTP staying on `port`; with `tls.clientCa`,
   * mutual TLS (`tls.clientAuth`, default required).
   */
  tls?: TlsListen;
}

export interface RunningServer {
  /** Base URL to reach the sandbox, e.g. http://127.0.0.1:8080: the HTTPS one when it serves HTTPS. */
  url: string;
  /** Every URL it serves on: the HTTPS one first, then the plain one when both are served (`tls.port`). */
  urls: string[];
  /** The server of `url`. */
  server: Server;
  /**
   * Serves new connections with another certificate, key and client CA (a rotation); connections open keep theirs.
   * Absent without HTTPS.
   */
  setTls?(tls: Pick<TlsListen, "cert" | "key" | "clientCa">): void;
  limits: ServerLimits;
  /**
   * Stops accepting connections and lets calls in flight finish, each
   * connection closing after its answer; after `graceMs` (default
   * limits.shutdownGraceMs) the calls still running are cut off. Resolves
   * when every connection is closed, with how many calls were cut off.
   */
  close(graceMs?: number): Promise<{ cutOff: number }>;
}

/**
 * An answer with a reusable body (a listing of calls) written on the socket by writeReusable, which the adapter is
 * told it need not write; any other answer as it is.
 */
function reusing(answer: Response, outgoing: ServerResponse, logger: SandboxLogger): Response {
  const body = takeReusableBody(answer);
  if (!body) return answer;
  writeReusable(outgoing, answer.status, answer.headers, body, (error) =>
    logger.error("A listing could not be finished; its connection was cut", error),
  );
  return ALREADY_SENT;
}

/**
 * @hono/node-server's RESPONSE_ALREADY_SENT, made with the runtime's own Response. The adapter makes its constant with
 * whichever Response is global when it is first imported: after the adapter has put its own class in the global's
 * place (a host that served with it before it loaded the sandbox), it would take the constant for an answer to write,
 * and write it over the listing. Its class has the runtime's as its prototype; the runtime's has Function's.
 */
const ALREADY_SENT: Response = (() => {
  const parent: unknown = Object.getPrototypeOf(Response);
  const Runtime =
    typeof parent === "function" && parent !== Function.prototype ? (parent as typeof Response) : Response;
  return new Runtime(null, { headers: RESPONSE_ALREADY_SENT.headers });
})();

/** Sustained drops are logged at most this often. */
const DROP_LOG_INTERVAL_MS = 10_000;

/**
 * Serves a sandbox app over HTTP, HTTPS or both with Node: the only place that
 * knows about sockets. Tells the app where it listens and with which limits.
 */
export async function startServer(sandbox: SandboxApp, listen: ListenOptions): Promise<RunningServer> {
  const limits: ServerLimits = { ...DEFAULT_SERVER_LIMITS, ...listen.limits };
  // Messages take the sandbox's edge on node:http itself (sandbox.node); the rest goes to the Hono app through the
  // Node adapter.
  const adapter = getRequestListener((request, env) => {
    const answer = sandbox.app.fetch(request, env);
    const { outgoing } = env;
    if (!(outgoing instanceof ServerResponse)) return answer;
    const { logger } = sandbox;
    return answer instanceof Promise
      ? answer.then((a) => reusing(a, outgoing, logger))
      : reusing(answer, outgoing, logger);
  });
  const messages = sandbox.node;
  const options: ServerOptions = {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // Node enforces the two timeouts above on a sweep, every 30 s by default: sweep often enough for them to hold.
    connectionsCheckingInterval: Math.min(
      1000,
      Math.max(10, Math.floor(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 4)),
    ),
  };
  const { tls } = listen;
  const secure = tls ? httpsServer(options, tls, limits, sandbox.logger) : undefined;
  // Plain HTTP: alone, or beside HTTPS on its own port.
  const plain = !secure || tls?.port !== undefined ? createServer(options) : undefined;
  const servers = [secure, plain].filter((s): s is Server => s !== undefined);

  const inFlight = new Set<ServerResponse>();
  let stopping = false;
  for (const server of servers) {
    // Each server counts its own connections: --max-connections holds per port.
    server.maxConnections = limits.maxConnections;
    reportDrops(server, limits.maxConnections, (m, dropped) =>
      sandbox.logger.warn(m, { event: "connections-dropped", dropped, maxConnections: limits.maxConnections }),
    );
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
  }
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
        for (const server of servers) server.closeAllConnections();
      }, graceMs);
      let open = servers.length;
      for (const server of servers) {
        server.close(() => {
          if (--open > 0) return;
          clearTimeout(force);
          resolve({ cutOff });
        });
        server.closeIdleConnections();
      }
    }));

  // HTTPS on --port, or on tls.port with HTTP on --port; one failing to listen closes the other.
  const urls: string[] = [];
  try {
    if (secure) urls.push(await listenOn(secure, tls?.port ?? listen.port, listen.host, "https"));
    if (plain) urls.push(await listenOn(plain, listen.port, listen.host, "http"));
  } catch (error) {
    for (const server of servers) if (server.listening) server.close();
    throw error;
  }
  const url = urls[0] as string;
  sandbox.served({ url, limits });
  const running: RunningServer = { url, urls, server: servers[0] as Server, limits, close };
  if (secure) {
    running.setTls = (next) =>
      (secure as HttpsServer).setSecureContext({
        cert: next.cert,
        key: next.key,
        ...(next.clientCa !== undefined ? { ca: next.clientCa } : {}),
      });
  }
  return running;
}

/** Listens, and resolves with the URL a client reaches it by. A listen error (port in use) carries its port. */
function listenOn(server: Server, port: number, host: string | undefined, scheme: "http" | "https"): Promise<string> {
  return new Promise((resolve, reject) => {
    const failed = (error: Error) => reject(Object.assign(error, { scheme, port }));
    server.once("error", failed);
    server.listen(port, host, () => {
      server.off("error", failed);
      const address = server.address() as AddressInfo;
      const shown =
        address.family === "IPv6" ? (address.address === "::" ? "localhost" : `[${address.address}]`) : address.address;
      resolve(`${scheme}://${shown === "0.0.0.0" ? "localhost" : shown}:${address.port}`);
    });
  });
}

/**
 * An HTTPS server with the same limits. With a client CA: `required` lets OpenSSL refuse a connection without a
 * certificate in the handshake (a certificate_required alert); Node verifies a certificate given after the handshake
 * and closes the connection before any request when it does not verify, in either mode. Refusals are logged saying
 * which, throttled per reason (refusalLog).
 */
function httpsServer(options: ServerOptions, tls: TlsListen, limits: ServerLimits, logger: SandboxLogger): Server {
  const clientAuth = tls.clientAuth ?? (tls.clientCa !== undefined ? "required" : "none");
  const asks = clientAuth !== "none" && tls.clientCa !== undefined;
  const server = createHttpsServer({
    ...options,
    cert: tls.cert,
    key: tls.key,
    minVersion: "TLSv1.2",
    // A client that opens a connection and never finishes the handshake holds it no longer than its headers could.
    handshakeTimeout: limits.headersTimeoutMs,
    ...(asks ? { ca: tls.clientCa, requestCert: true, rejectUnauthorized: clientAuth === "required" } : {}),
  });
  const log = refusalLog(logger);
  const refused = (refusal: ClientRefusal, peer: string | undefined) => log.refused(refusal, peer);
  // Counts not said yet are said as the server stops, before the line that it stopped.
  server.on("close", () => log.flush());
  server.on("tlsClientError", (error: Error & { code?: string }, socket: TLSSocket) => {
    if (error.code === NO_CERTIFICATE.code) refused(NO_CERTIFICATE, socket.remoteAddress);
    else if (error.code === PLAIN_HTTP.code) refused(PLAIN_HTTP, socket.remoteAddress);
    // Node closed a connection whose certificate did not verify (required): the socket keeps why.
    else if (socket.authorizationError) refused(certificateRefusal(String(socket.authorizationError)), undefined);
    // Anything else (a client that went away mid-handshake, a port scan) is not the sandbox's to report.
  });
  if (asks && clientAuth === "optional") {
    // Before the HTTP server takes the connection: one with a certificate that does not verify is closed unread; one
    // without a certificate goes on, as without mutual TLS.
    server.prependListener("secureConnection", (socket: TLSSocket) => {
      if (socket.authorized || !socket.authorizationError || !socket.getPeerX509Certificate()) return;
      refused(certificateRefusal(String(socket.authorizationError)), socket.remoteAddress);
      socket.destroy();
    });
  }
  return server;
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
