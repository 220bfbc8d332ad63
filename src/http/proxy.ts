import type { Context } from "hono";
import { issue } from "../fhir/outcome.js";
import { callState } from "./call-context.js";
import type { EdgeEnv } from "./edge-env.js";
import { outcomeResponse } from "./fhir-response.js";

/** Headers that belong to one connection, never forwarded (RFC 9110 §7.6.1), plus ones fetch sets itself. */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
  "content-length",
  "accept-encoding",
  "content-encoding",
]);

const UPSTREAM_TIMEOUT_MS = 30_000;

function forwardable(headers: Headers): Headers {
  // Headers the Connection header names are hop-by-hop too (RFC 9110 §7.6.1).
  const named = new Set((headers.get("connection") ?? "").split(",").map((n) => n.trim().toLowerCase()));
  const out = new Headers();
  headers.forEach((value, name) => {
    if (!HOP_BY_HOP.has(name.toLowerCase()) && !named.has(name.toLowerCase())) out.set(name, value);
  });
  return out;
}

/**
 * `--proxy`: sends a message no scenario rule answered to the upstream
 * service (the real exchange, or another sandbox) and returns its answer
 * unchanged, keeping the text for the journal.
 */
export async function forwardToUpstream(
  c: Context<EdgeEnv>,
  upstream: string,
  path: string,
  body: string,
  fetchImpl: typeof fetch,
): Promise<Response> {
  const target = `${upstream.replace(/\/+$/, "")}${path}`;
  callState(c).upstream = target;
  let res: Response;
  try {
    res = await fetchImpl(target, {
      method: c.req.method,
      headers: forwardable(c.req.raw.headers),
      body,
      redirect: "manual",
      signal: AbortSignal.any([c.req.raw.signal, AbortSignal.timeout(UPSTREAM_TIMEOUT_MS)]),
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
    return outcomeResponse(c, 502, [
      issue("transient", `The upstream ${target} (--proxy) did not answer: ${cause}.`, undefined, "error"),
    ]);
  }
  const text = await res.text();
  callState(c).responseText = text;
  return new Response(text, { status: res.status, headers: forwardable(res.headers) });
}
