/**
 * Why the server could not listen, said so that the next command works: a
 * port in use names another to try, a privileged port says why.
 *
 * @example
 *   startFailure(Object.assign(new Error("listen EADDRINUSE"), { code: "EADDRINUSE" }), { port: 8080, host: undefined })
 *   // "port 8080 is already in use on all interfaces: stop what is using it, or choose another port: --port 8081, or --port 0 for any free port"
 */
export function startFailure(error: unknown, at: { port: number; host: string | undefined; flag?: string }): string {
  const code = (error as { code?: unknown } | null)?.code;
  const flag = at.flag ?? "--port";
  const where = at.host === undefined ? "all interfaces" : at.host;
  const next = at.port === 65535 ? 8080 : at.port + 1;
  if (code === "EADDRINUSE") {
    return `port ${at.port} is already in use on ${where}: stop what is using it, or choose another port: ${flag} ${next}, or ${flag} 0 for any free port`;
  }
  if (code === "EACCES") {
    return `not allowed to listen on port ${at.port} (${where}): ports below 1024 need privileges; choose one above, e.g. ${flag} ${flag === "--port" ? 8080 : 8443}, or ${flag} 0 for any free port`;
  }
  if (code === "EADDRNOTAVAIL") {
    return `cannot listen on ${where}: it is not an address of this machine; leave out --host to listen on all interfaces, or give one of its addresses, e.g. --host 127.0.0.1`;
  }
  return (error as Error).message ?? String(error);
}
