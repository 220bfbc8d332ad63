import { TOKEN_PATH } from "./discovery.js";

/** The names of this machine's loopback interface: the same sandbox, whichever a local client wrote. */
const LOOPBACK = ["localhost", "127.0.0.1", "[::1]"];

/**
 * The audiences a private_key_jwt assertion may name (RFC 7523 §3: the
 * authorization server; SMART: its token endpoint URL), never taken from the
 * request's Host header, which the client writes: an assertion minted for
 * another server would otherwise be accepted when sent with that server's
 * Host. With --public-url: its token endpoint and issuer. Without: the
 * listening URL's, under each loopback name with the same port (a client on
 * the same machine may write localhost, 127.0.0.1 or [::1]). A sandbox reached
 * under another name (a proxy, a container's service name) needs --public-url.
 *
 * @example
 *   assertionAudiences(undefined, "http://localhost:8080")
 *   // → ["http://localhost:8080/oauth2/token", "http://localhost:8080", "http://localhost:8080/",
 *   //    "http://127.0.0.1:8080/oauth2/token", …, "http://[::1]:8080/"]
 */
export function assertionAudiences(publicUrl: string | undefined, listeningUrl: string): string[] {
  const origins = publicUrl !== undefined ? [publicUrl.replace(/\/+$/, "")] : loopbackOrigins(listeningUrl);
  return origins.flatMap((origin) => [`${origin}${TOKEN_PATH}`, origin, `${origin}/`]);
}

function loopbackOrigins(listeningUrl: string): string[] {
  const url = new URL(listeningUrl);
  const port = url.port === "" ? "" : `:${url.port}`;
  return [...new Set([url.hostname, ...LOOPBACK])].map((host) => `${url.protocol}//${host}${port}`);
}
