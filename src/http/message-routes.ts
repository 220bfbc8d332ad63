import type { Hono } from "hono";
import { issue } from "../fhir/outcome.js";
import { STANDARD_FHIR_BASE } from "../routing/default-operations.js";
import { jsonText } from "../text/json-text.js";
import { callState, requestUrl } from "./call-context.js";
import type { EdgeEnv } from "./edge-env.js";
import { delay, stageFault } from "./faults.js";
import { fhirResponse, outcomeResponse } from "./fhir-response.js";
import { forwardToUpstream } from "./proxy.js";
import { incompleteBody, readBody } from "./read-body.js";

export interface MessageRouteOptions {
  basePath: string;
  /** Upstream base URL (--proxy), or undefined. */
  proxy: string | undefined;
  maxBody: number;
  responseEnvelope: boolean;
}

/**
 * The HTTP edge of the message paths: method and size checks, then the
 * pipeline of the request's workspace (with what its bearer token allows,
 * under --auth oauth2); `--response-envelope` wraps response messages as
 * {"content": "..."}.
 */
export function mountMessageRoutes(
  app: Hono<EdgeEnv>,
  paths: readonly string[],
  options: MessageRouteOptions,
  fetchImpl: typeof fetch,
): void {
  for (const path of paths) {
    app.all(`${options.basePath}${path}`, async (c) => {
      if (c.req.method !== "POST") {
        return outcomeResponse(
          c,
          405,
          [
            issue(
              "not-supported",
              `${c.req.method} is not allowed on ${options.basePath}${path}: send messages with POST.`,
            ),
          ],
          { allow: "POST" },
        );
      }
      const call = callState(c);
      const read = await readBody(c.req.raw, options.maxBody, call.headers.get("content-length"));
      if (!read.ok && !read.tooLarge) return outcomeResponse(c, 408, [issue("timeout", incompleteBody(read.error))]);
      if (!read.ok) {
        return outcomeResponse(c, 413, [
          issue(
            "too-long",
            `The body is larger than ${read.limit} bytes, the sandbox's limit (--max-body). Send a smaller message or raise the limit.`,
          ),
        ]);
      }
      call.bodyText = read.text;
      const access = c.get("access");
      // The URL the message came to, its workspace prefix included: the answer's source and fullUrls lead back.
      const base = `${requestUrl(c, call).origin}${c.get("workspacePrefix")}${options.basePath}`;
      const answer = await c.get("workspace").processMessage({
        path,
        headers: call.headers,
        body: read.text,
        endpoint: `${base}${path}`,
        fhirBase: `${base}${STANDARD_FHIR_BASE}`,
        call,
        ...(access ? { access } : {}),
      });
      call.requestJson = answer.requestJson === true;
      call.operation = answer.operation;
      call.messageId = answer.messageId;
      call.duplicate = answer.duplicate;
      call.rule = answer.rule;
      call.trace = answer.trace;
      await delay(c, answer.delayMs);
      if (answer.fault) return stageFault(c, answer.fault, answer.status, answer.headers);
      if (answer.forward && options.proxy) {
        const forwarded = await forwardToUpstream(c, options.proxy, path, read.text, fetchImpl);
        // A builtIn rule adds its headers to whatever answers in its place: here the upstream.
        for (const [name, value] of Object.entries(answer.headers)) forwarded.headers.set(name, value);
        return forwarded;
      }
      const body = answer.body as { resourceType?: unknown } | undefined;
      const wrap = options.responseEnvelope && body?.resourceType === "Bundle";
      const text = answer.serialized ?? jsonText(body);
      // The journal shares what the duplicate memory kept: the request as read, the answer when sent as serialized.
      const request = answer.kept?.request;
      call.kept = wrap ? (request ? { request } : undefined) : answer.kept;
      return fhirResponse(c, answer.status, undefined, answer.headers, wrap ? jsonText({ content: text }) : text);
    });
  }
}
