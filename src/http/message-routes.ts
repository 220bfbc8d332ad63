import type { Hono } from "hono";
import type { Access } from "../auth/bearer.js";
import { type Issue, issue, operationOutcome } from "../fhir/outcome.js";
import type { Answer, InboundMessage } from "../pipeline/process-message.js";
import type { AnswerPlace, ResponseDeliveries } from "../push/response-delivery.js";
import { STANDARD_FHIR_BASE } from "../routing/default-operations.js";
import { jsonText } from "../text/json-text.js";
import {
  acceptedIssue,
  acceptedResponseIssue,
  answeredLater,
  asyncNote,
  asyncPlan,
  tooManyAnswersIssue,
} from "./async-message.js";
import { callState, requestUrl } from "./call-context.js";
import type { CallState } from "./call-state.js";
import type { EdgeEnv } from "./edge-env.js";
import { delay, stageFault } from "./faults.js";
import { ENVELOPE_JSON, FHIR_JSON, fhirResponse, outcomeResponse } from "./fhir-response.js";
import { forwardToUpstream } from "./proxy.js";
import { type BodyRead, incompleteBody, readBody } from "./read-body.js";

export interface MessageRouteOptions {
  basePath: string;
  /** Upstream base URL (--proxy), or undefined. */
  proxy: string | undefined;
  maxBody: number;
  responseEnvelope: boolean;
  lenientEnvelope: boolean;
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
  /** Where asynchronous answers (`?async=true`) go out: the push dispatcher. */
  deliveries: ResponseDeliveries,
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
      if (!read.ok) {
        const refused = bodyRefusal(read);
        return outcomeResponse(c, refused.status, refused.issues);
      }
      const access = c.get("access");
      const url = requestUrl(c, call);
      // A caller without a usable token is refused (401) before its query counts.
      const plan =
        access && !access.ok ? undefined : asyncPlan(url.searchParams, read.text, options.lenientEnvelope, deliveries);
      if (plan?.kind === "refused") {
        call.bodyText = read.text;
        return outcomeResponse(c, 400, plan.issues);
      }
      // The answer's place among its workspace's (--max-async-answers), before anything of the message is processed.
      let place: AnswerPlace | undefined;
      if (plan?.kind === "async") {
        const workspace = c.get("workspace");
        place = deliveries.reserve(workspace.id) ?? undefined;
        if (!place) {
          call.bodyText = read.text;
          const retryAfterS = Math.max(1, Math.ceil(deliveries.retryAfterMs / 1000));
          const issues = [
            tooManyAnswersIssue(deliveries.held(workspace.id), deliveries.limits.perWorkspace, retryAfterS),
          ];
          return outcomeResponse(c, 429, issues, { "retry-after": String(retryAfterS) });
        }
      }
      try {
        // The URL the message came to, its workspace prefix included: the answer's source and fullUrls lead back.
        const base = `${url.origin}${c.get("workspacePrefix")}${options.basePath}`;
        const inbound = inboundMessage(path, base, read.text, call, access);
        if (plan?.kind === "async") inbound.async = true;
        const pending = c.get("workspace").processMessage(inbound);
        const answer = noteAnswer(call, pending instanceof Promise ? await pending : pending);
        const delayed = delay(c, answer.delayMs);
        if (delayed) await delayed;
        if (answer.fault) return stageFault(c, answer.fault, answer.status, answer.headers);
        if (answer.forward && options.proxy) {
          const forwarded = await forwardToUpstream(c, options.proxy, path, read.text, fetchImpl);
          // A builtIn rule adds its headers to whatever answers in its place: here the upstream.
          for (const [name, value] of Object.entries(answer.headers)) forwarded.headers.set(name, value);
          return forwarded;
        }
        if (plan?.kind === "response" && answeredLater(answer)) {
          // A response message is accepted and never answered: what a synchronous call would answer goes nowhere.
          keepOnlyRequest(call, answer);
          const accepted = jsonText(operationOutcome([acceptedResponseIssue(answer.messageId)]));
          return fhirResponse(c, 202, undefined, answer.headers, accepted, answer.dribble);
        }
        if (plan?.kind === "async" && plan.target !== undefined && answeredLater(answer)) {
          const later = responseBody(answer, options.responseEnvelope);
          // The journal keeps the 202's OperationOutcome as this call's answer; the response message is the outbound
          // call's.
          keepOnlyRequest(call, answer);
          call.asyncAnswer = asyncNote(plan.target, answer.asyncLeg);
          if (!answer.asyncLeg?.drop) {
            const workspace = c.get("workspace");
            // The place goes with the answer: it is free again once the answer is delivered or given up.
            const held = place;
            place = undefined;
            deliveries.send(
              {
                target: plan.target,
                body: later.text,
                contentType: later.contentType,
                operation: answer.operation ?? "",
                messageId: answer.messageId ?? "",
                respondsTo: call.id,
                workspace: workspace.id,
                events: workspace.events,
                delayMs: answer.asyncLeg?.delayMs ?? 0,
                withdrawn: () => call.asyncAnswer === undefined,
              },
              workspace.keepAnswer,
              held,
            );
          }
          const accepted = jsonText(operationOutcome([acceptedIssue(plan.target, answer.messageId)]));
          return fhirResponse(c, 202, undefined, answer.headers, accepted, answer.dribble);
        }
        return fhirResponse(
          c,
          answer.status,
          undefined,
          answerHeaders(answer, options.responseEnvelope),
          answerText(call, answer, options.responseEnvelope),
          answer.dribble,
        );
      } finally {
        // Not handed to an answer (refused, a fault, not accepted, dropped, an exception): the place is free again.
        place?.release();
      }
    });
  }
}

// The message route's steps without a framework: the Hono route's and the Node message path's.

/** The answer to a body that could not be read: 408 (it did not arrive in full) or 413 (over --max-body). */
export function bodyRefusal(read: Exclude<BodyRead, { ok: true }>): { status: number; issues: Issue[] } {
  if (!read.tooLarge) return { status: 408, issues: [issue("timeout", incompleteBody(read.error))] };
  return {
    status: 413,
    issues: [
      issue(
        "too-long",
        `The body is larger than ${read.limit} bytes, the sandbox's limit (--max-body). Send a smaller message or raise the limit.`,
      ),
    ],
  };
}

/**
 * A read message as the pipeline takes it. `base`: the URL it came to up to the catalogue's path (origin, workspace
 * prefix, base path).
 */
export function inboundMessage(
  path: string,
  base: string,
  body: string,
  call: CallState,
  access: Access | undefined,
): InboundMessage {
  call.bodyText = body;
  return {
    path,
    headers: call.headers,
    body,
    endpoint: `${base}${path}`,
    fhirBase: `${base}${STANDARD_FHIR_BASE}`,
    call,
    ...(access ? { access } : {}),
  };
}

/**
 * A call answered 202: the journal keeps the 202's OperationOutcome as its answer, so of what the duplicate memory
 * kept it may share the request only, and the answer's response code is not the call's.
 */
function keepOnlyRequest(call: CallState, answer: Answer): void {
  call.kept = answer.kept?.request ? { request: answer.kept.request } : undefined;
  call.responseCode = null;
}

/** What the journal keeps of an answer, noted in the call's state; returns the answer. */
export function noteAnswer(call: CallState, answer: Answer): Answer {
  call.requestJson = answer.requestJson === true;
  call.operation = answer.operation;
  call.messageId = answer.messageId;
  call.duplicate = answer.duplicate;
  call.rule = answer.rule;
  call.trace = answer.trace;
  // The sandbox's own response code, for the request log: it need not read the answer's body for it.
  call.responseCode = answer.responseCode;
  return answer;
}

/**
 * The answer's body text; `--response-envelope` wraps a response message as {"content": "..."}. Tells the call which
 * texts the duplicate memory kept that the journal may share: the request as read, the answer when sent as kept.
 */
export function answerText(call: CallState, answer: Answer, responseEnvelope: boolean): string {
  const wrap = enveloped(answer, responseEnvelope);
  const text = answer.serialized ?? jsonText(answer.body);
  const request = answer.kept?.request;
  call.kept = wrap ? (request ? { request } : undefined) : answer.kept;
  return wrap ? jsonText({ content: text }) : text;
}

/**
 * An answer's body as the synchronous call would have sent it, and its Content-Type (the rule's headers aside): what
 * an asynchronous answer POSTs.
 */
export function responseBody(answer: Answer, responseEnvelope: boolean): { text: string; contentType: string } {
  const text = answer.serialized ?? jsonText(answer.body);
  return enveloped(answer, responseEnvelope)
    ? { text: jsonText({ content: text }), contentType: ENVELOPE_JSON }
    : { text, contentType: FHIR_JSON };
}

/** Whether `--response-envelope` wraps this answer: a response message (a Bundle) is wrapped, an OperationOutcome not. */
function enveloped(answer: Answer, responseEnvelope: boolean): boolean {
  return responseEnvelope && (answer.body as { resourceType?: unknown } | undefined)?.resourceType === "Bundle";
}

/**
 * The answer's headers: an enveloped answer is labelled application/json (it is JSON holding FHIR, not a resource),
 * unless its rule says otherwise; a FHIR body keeps the edge's application/fhir+json.
 */
export function answerHeaders(answer: Answer, responseEnvelope: boolean): Record<string, string> {
  return enveloped(answer, responseEnvelope) ? { "content-type": ENVELOPE_JSON, ...answer.headers } : answer.headers;
}
