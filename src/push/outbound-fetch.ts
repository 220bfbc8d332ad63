import { request as httpRequest, type RequestOptions } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP } from "node:net";
import { Readable } from "node:stream";
import type { SecureContext } from "node:tls";

/**
 * fetch's options plus `connectTo`: given the URL's host (IPv6 without brackets), the address to connect to —
 * resolved and checked by the caller — or a rejection, which becomes fetch's.
 */
export interface OutboundInit extends RequestInit {
  connectTo?: (host: string) => Promise<string>;
  /**
   * For an https URL: the TLS context to connect with (a client certificate to present, the CAs to verify the
   * receiver against: see PushTls). Ignored for http.
   */
  secureContext?: SecureContext;
}

/**
 * The sandbox's outbound HTTP (`SandboxDeps.fetch`): the global fetch, except that a request given `connectTo`
 * (a push under `--auth oauth2`) is made with node:http(s) to exactly the address `connectTo` gave. The address
 * checked is then the address connected to: a name that resolves (or re-resolves) elsewhere between a check and
 * the connection cannot slip through, which fetch (undici, whose DNS lookup cannot be replaced without the
 * undici package) does not allow. So is a request given `secureContext` (a push presenting a client certificate or
 * verifying its receiver against --push-ca), which fetch cannot take either. Redirects are never followed (each
 * answer is the receiver's own).
 *
 * @example
 *   await outboundFetch("http://pharmacy.test/hook", { method: "POST", body, connectTo: async () => "203.0.113.5" })
 */
export const outboundFetch: typeof fetch = (input, init) => {
  const { connectTo, secureContext } = (init as OutboundInit | undefined) ?? {};
  if (!connectTo && !secureContext) return fetch(input, init);
  if (typeof input !== "string" && !(input instanceof URL)) {
    return Promise.reject(new TypeError("outboundFetch with connectTo or secureContext takes a URL, not a Request"));
  }
  // Without an address check the name is connected to as it is: Node resolves it, as fetch would.
  return requestAt(new URL(input), init ?? {}, connectTo ?? (async (host) => host), secureContext);
};

async function requestAt(
  url: URL,
  init: RequestInit,
  connectTo: (host: string) => Promise<string>,
  secureContext: SecureContext | undefined,
): Promise<Response> {
  const secure = url.protocol === "https:";
  if (!secure && url.protocol !== "http:") throw new TypeError(`only http and https URLs, not ${url.protocol}`);
  // As fetch does: credentials in a URL are refused, never sent.
  if (url.username || url.password) throw new TypeError(`the URL ${url.href} includes credentials`);
  if (init.body !== undefined && init.body !== null && typeof init.body !== "string") {
    throw new TypeError("outboundFetch with connectTo or secureContext takes a string body");
  }
  const signal = init.signal ?? undefined;
  signal?.throwIfAborted();
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const address = await connectTo(host);
  signal?.throwIfAborted();
  const headers: Record<string, string> = {};
  new Headers(init.headers).forEach((value, name) => {
    headers[name] = value;
  });
  headers.host = url.host;
  const body = init.body ?? undefined;
  if (body !== undefined) headers["content-length"] = String(Buffer.byteLength(body));
  const options: RequestOptions & { servername?: string; secureContext?: SecureContext } = {
    host: address,
    port: url.port || (secure ? 443 : 80),
    path: `${url.pathname}${url.search}`,
    method: init.method ?? "GET",
    headers,
    // A fresh connection each time: a pooled socket would be a connection whose address nobody checked now.
    agent: false,
    ...(signal ? { signal } : {}),
    // TLS checks the certificate against the name asked for, not the address connected to.
    ...(secure && isIP(host) === 0 ? { servername: host } : {}),
    ...(secure && secureContext ? { secureContext } : {}),
  };
  return new Promise<Response>((resolve, reject) => {
    const req = (secure ? httpsRequest : httpRequest)(options, (res) => {
      const status = res.statusCode ?? 0;
      if (status < 200 || status > 599) {
        res.destroy();
        reject(new Error(`the receiver answered with status ${status}, which is not a final HTTP status`));
        return;
      }
      const answer = new Headers();
      for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
        try {
          answer.append(res.rawHeaders[i] as string, res.rawHeaders[i + 1] as string);
        } catch {
          // A header fetch could not carry either: left out, the rest kept.
        }
      }
      const empty = status === 204 || status === 205 || status === 304 || options.method === "HEAD";
      if (empty) res.resume();
      const stream = empty ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>);
      try {
        resolve(new Response(stream, { status, headers: answer }));
      } catch (error) {
        res.destroy();
        reject(error);
      }
    });
    req.on("error", reject);
    req.end(body);
  });
}
