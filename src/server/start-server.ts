import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createAdaptorServer } from "@hono/node-server";
import type { SandboxApp } from "../app.js";

export interface ListenOptions {
  port: number;
  /** Interface to bind; undefined binds all (IPv4 and IPv6). */
  host: string | undefined;
}

export interface RunningServer {
  /** Base URL to reach the sandbox, e.g. http://127.0.0.1:8080. */
  url: string;
  server: Server;
  /** Stops accepting connections, lets calls in flight finish, then resolves. */
  close(graceMs?: number): Promise<void>;
}

/** Serves a sandbox app over HTTP with Node: the only place that knows about sockets. */
export function startServer(sandbox: SandboxApp, listen: ListenOptions): Promise<RunningServer> {
  const server = createAdaptorServer({ fetch: sandbox.app.fetch }) as Server;
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(listen.port, listen.host, () => {
      server.off("error", reject);
      const address = server.address() as AddressInfo;
      const host =
        address.family === "IPv6" ? (address.address === "::" ? "localhost" : `[${address.address}]`) : address.address;
      const shown = host === "0.0.0.0" ? "localhost" : host;
      resolve({
        url: `http://${shown}:${address.port}`,
        server,
        close: (graceMs = 5000) =>
          new Promise<void>((done) => {
            const force = setTimeout(() => server.closeAllConnections(), graceMs);
            force.unref();
            server.close(() => {
              clearTimeout(force);
              done();
            });
            server.closeIdleConnections();
          }),
      });
    });
  });
}
