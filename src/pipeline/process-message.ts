import type { Bundle, OperationOutcome } from "fhir/r4.js";
import { type Access, authorize, type Refusal } from "../auth/bearer.js";
import { type DecodedEnvelope, decodeEnvelope } from "../envelope/envelope.js";
import { type Message, readMessage } from "../envelope/message.js";
import { bundleJson } from "../fhir/bundle-json.js";
import { clientTargets } from "../fhir/client-targets.js";
import { type Issue, issue, operationOutcome } from "../fhir/outcome.js";
import { type Correlation, errorMessage, okMessage } from "../fhir/response-message.js";
import type { HandlerContext, HandlerTable } from "../handlers/handler.js";
import type { RequestHeaders } from "../http/raw-headers.js";
import type { KeptBodies } from "../journal/call-record.js";
import type { RequestFacts } from "../matching/matcher.js";
import { patientKeysOf } from "../matching/patient-keys.js";
import type { Catalogue } from "../routing/catalogue.js";
import { routeMessage } from "../routing/route.js";
import { scriptedReply } from "../scenarios/respond.js";
import type { RuleTrace, Scripted } from "../scenarios/scenarios.js";
import type { Fault } from "../scenarios/schema.js";
import { escapeJsonText } from "../text/json-text.js";
import type { KeptText, PackedTexts } from "../text/packed-texts.js";
import { mergeIssues, type ValidationPolicy, validateMessage } from "../validation/validate-message.js";
import { type MessageIdentity, messageIdentity, sameMessage } from "./fingerprint.js";
import type { ReplayCache } from "./replay-cache.js";

/** A POST to a message path, as the HTTP edge hands it over. */
export interface InboundMessage {
  /** Path without the base path, e.g. /uae-fhir/r4/$process-message. */
  path: string;
  headers: RequestHeaders;
  body: string;
  /** Absolute URL the message was sent to (the response's source.endpoint). */
  endpoint: string;
  /** FHIR base URL for fullUrls, e.g. http://localhost:8080/uae-fhir/r4. */
  fhirBase: string;
  /** The journal's call for this message (id and start), for naming it to a later reuse of its MessageHeader id. */
  call?: { id: string; at: Date };
  /** With --auth oauth2: who the bearer token speaks for, or why there is none usable. */
  access?: Access;
}

/** The answer to one message, with what the edge and the journal need to know about it. */
export interface Answer {
  status: number;
  /** The FHIR body; a scripted `body` may be any JSON, or absent with a fault. */
  body: Bundle | OperationOutcome | unknown;
  operation: string | null;
  messageId: string | null;
  /** True when this is the stored answer to a resent message. */
  duplicate: boolean;
  /** The scenario rule that matched and answered (or let the built-in behaviour answer). */
  rule: string | null;
  /** Wait this long before answering. */
  delayMs: number;
  /** Extra response headers a rule adds. */
  headers: Record<string, string>;
  /** A transport fault a rule stages instead of an answer. */
  fault?: Fault;
  /** With --proxy: no rule answered, so the upstream service answers instead of the sandbox. */
  forward?: true;
  /** `body` as JSON text, when the pipeline serialized it already. */
  serialized?: string;
  /** The request body and `serialized` as the duplicate memory kept them, for the journal to share. */
  kept?: KeptBodies;
  /** The request body was JSON (the envelope could be read). */
  requestJson?: true;
  /** How the scenario rules decided, when they were consulted (for explaining the call later). */
  trace?: RuleTrace;
}

/**
 * A processed answer as the duplicate memory keeps it: the serialized body
 * (the same string the journal holds for the call, so no second copy), what
 * tells an exact resend of the message, and the call that brought it.
 */
export interface StoredAnswer {
  status: number;
  /** The answer's JSON text, packed with the journal's bodies. */
  body: KeptText;
  /** The message answered, as messageIdentity took it. */
  identity: MessageIdentity;
  /** Journal id of the call, when known. */
  callId: string | undefined;
  at: Date;
}

export interface PipelineOptions extends ValidationPolicy {
  /** With --proxy, what no rule answers is forwarded, not answered by the sandbox. */
  proxy: boolean;
  basePath: string;
  lenientEnvelope: boolean;
  businessErrors: "message" | "http";
}

export interface PipelineDeps extends HandlerContext {
  catalogue: Catalogue;
  handlers: HandlerTable;
  replays: ReplayCache<StoredAnswer>;
  /** Where the duplicate memory keeps answers and messages: the journal's PackedTexts. */
  texts: PackedTexts;
  /** Scenario rules: which one, if any, answers a message; the trace records how, for explaining it. */
  scenarios: { decide(facts: RequestFacts, trace?: RuleTrace): Scripted | undefined; newTrace(): RuleTrace };
  random(): number;
}

const JSON_TYPES = new Set(["application/json", "application/fhir+json"]);

/**
 * The message pipeline: envelope → message → operation → scenario rule or
 * built-in handler → response message. Never throws for bad input: every
 * problem becomes an issue.
 */
export function createMessagePipeline(options: PipelineOptions, deps: PipelineDeps) {
  const answer = (status: number, body: unknown, found: Partial<Answer> = {}): Answer => ({
    status,
    body,
    operation: found.operation ?? null,
    messageId: found.messageId ?? null,
    duplicate: false,
    rule: null,
    delayMs: 0,
    headers: {},
  });
  const notProcessed = (status: number, issues: Issue[], found: Partial<Answer> = {}): Answer =>
    options.proxy ? forward(found) : answer(status, operationOutcome(issues), found);
  // Recording from a real service: it judges bad messages too, so they are forwarded as well.
  const forward = (found: Partial<Answer>): Answer => ({ ...answer(0, undefined, found), ...found, forward: true });
  // Never forwarded with --proxy: the sandbox is the one that holds the credentials.
  const refused = (refusal: Refusal, found: Partial<Answer>): Answer => ({
    ...answer(refusal.status, operationOutcome(refusal.issues), found),
    headers: refusal.headers,
  });

  /** The operation and message id a message names, when they can be told: for the journal of a call refused unread. */
  const named = (inbound: InboundMessage): Partial<Answer> => {
    const envelope = decodeEnvelope(inbound.body, options.lenientEnvelope);
    const message = envelope.ok ? readMessage(envelope.bundle).message : undefined;
    if (!message) return {};
    const id = message.header.id;
    const operation = routeMessage(message, deps.catalogue, inbound.path, options.basePath).operation;
    return { operation: operation?.id ?? null, messageId: typeof id === "string" ? id : null };
  };

  const factsOf = (inbound: InboundMessage, message: Message, operation: string, invalid = false): RequestFacts => {
    let keys: string[] | undefined;
    return {
      operation,
      invalid,
      direction: "inbound",
      path: inbound.path,
      header: (name) => inbound.headers.get(name) ?? undefined,
      bundle: () => message.bundle as unknown as Record<string, unknown>,
      patientKeys: () => {
        keys ??= patientKeysOf(message);
        return keys;
      },
    };
  };

  const scriptContext = (inbound: InboundMessage, message: Message, operation: string, correlation: Correlation) => ({
    message,
    operation,
    path: inbound.path,
    headers: inbound.headers,
    patientKeys: patientKeysOf(message),
    correlation,
    businessErrors: options.businessErrors,
    newId: deps.newId,
    now: deps.now,
  });

  return async function processMessage(inbound: InboundMessage): Promise<Answer> {
    // No usable token: a 401 before anything of the message counts (CONTRACT §13).
    if (inbound.access && !inbound.access.ok) return refused(inbound.access.refusal, named(inbound));

    const mediaType = inbound.headers.get("content-type")?.split(";")[0]?.trim().toLowerCase();
    // A missing Content-Type is read as JSON; a declared other type is refused.
    if (mediaType && !JSON_TYPES.has(mediaType)) {
      return notProcessed(415, [
        issue(
          "not-supported",
          `Content-Type ${mediaType} is not supported; send application/json (or application/fhir+json) with body {"content": "<Bundle JSON>"}.`,
        ),
      ]);
    }

    const envelope = decodeEnvelope(inbound.body, options.lenientEnvelope);
    if (!envelope.ok) return notProcessed(400, envelope.issues);
    return { ...(await processEnvelope(inbound, envelope)), requestJson: true };
  };

  async function processEnvelope(inbound: InboundMessage, envelope: DecodedEnvelope & { ok: true }): Promise<Answer> {
    // Every resource of the message against R4, before anything else (CONTRACT §11).
    const checked = validateMessage(envelope.bundle, options);
    const read = readMessage(envelope.bundle);
    const headerId = read.message?.header.id;
    const messageId = typeof headerId === "string" ? headerId : null;
    if (!read.message) return notProcessed(400, mergeIssues({ envelope: read.issues }, checked.errors), { messageId });

    const message = read.message;
    const routed = routeMessage(message, deps.catalogue, inbound.path, options.basePath);
    const operation = routed.operation?.id ?? null;
    const issues = mergeIssues({ envelope: read.issues, operation: routed.issues }, checked.errors);
    if (routed.rightPath) return notProcessed(404, issues, { operation, messageId });
    // A token without the operation's scope: 403, before the message's own problems.
    const forbidden = inbound.access && routed.operation ? authorize(inbound.access, routed.operation) : undefined;
    if (forbidden) return refused(forbidden, { operation, messageId });
    const correlation: Correlation = {
      request: message.header,
      endpoint: inbound.endpoint,
      fhirBase: inbound.fhirBase,
    };
    if (issues.length > 0 || !routed.operation || operation === null || messageId === null) {
      // Only a rule that says `invalid: true` may answer a message the sandbox refuses.
      const consulted = operation !== null && messageId !== null && issues.length > 0;
      const trace = consulted ? deps.scenarios.newTrace() : undefined;
      const scripted = consulted ? deps.scenarios.decide(factsOf(inbound, message, operation, true), trace) : undefined;
      const reply =
        scripted && operation !== null
          ? scriptedReply(scripted, scriptContext(inbound, message, operation, correlation))
          : undefined;
      if (scripted && reply && reply.kind !== "built-in") {
        const ruled = {
          rule: scripted.rule.name,
          delayMs: scripted.response.delayMs(deps.random),
          headers: reply.headers,
          trace,
        };
        if (reply.kind === "answer") return { ...answer(reply.status, reply.body, { operation, messageId }), ...ruled };
        return { ...answer(reply.status, undefined, { operation, messageId }), ...ruled, fault: reply.fault };
      }
      return { ...notProcessed(400, issues, { operation, messageId }), ...(trace ? { trace } : {}) };
    }

    const facts = factsOf(inbound, message, operation);
    // Rules come before the duplicate check: a scripted 503 must not be replayed to the client's retry.
    const trace = deps.scenarios.newTrace();
    const scripted = deps.scenarios.decide(facts, trace);
    const reply = scripted
      ? scriptedReply(scripted, scriptContext(inbound, message, operation, correlation))
      : undefined;
    const ruled = {
      rule: scripted?.rule.name ?? null,
      delayMs: scripted?.response.delayMs(deps.random) ?? 0,
      headers: reply?.headers ?? {},
      trace,
    };
    if (reply?.kind === "answer") return { ...answer(reply.status, reply.body, { operation, messageId }), ...ruled };
    if (reply?.kind === "fault") {
      return { ...answer(reply.status, undefined, { operation, messageId }), ...ruled, fault: reply.fault };
    }

    if (options.proxy) return forward({ operation, messageId, ...ruled });

    // Before a handler could touch the message.
    const bundle = message.bundle as unknown as Record<string, unknown>;
    const earlier = deps.replays.get(messageId);
    if (earlier && sameMessage(earlier.identity, bundle, inbound.body)) {
      // Escaped again: a state file written before answers were escaped may hold the text as it was then.
      const serialized = escapeJsonText(earlier.body.text);
      return {
        ...answer(earlier.status, JSON.parse(serialized), { operation, messageId }),
        duplicate: true,
        ...ruled,
        headers: { ...ruled.headers, "X-Sandbox-Duplicate": "true" },
        serialized,
        // Escaping lengthens what it changes: the same length is the same text.
        ...(serialized.length === earlier.body.length ? { kept: { response: earlier.body } } : {}),
      };
    }
    if (earlier)
      return { ...answer(409, operationOutcome([reusedId(messageId, earlier)]), { operation, messageId }), ...ruled };
    const identity = messageIdentity(bundle, inbound.body, deps.texts);

    const handler = deps.handlers[routed.operation.id];
    if (!handler) throw new Error(`no handler for operation ${routed.operation.id}`);
    const result = await handler({ operation: routed.operation, message, focus: routed.focus }, deps);
    if (result.kind === "invalid") return { ...notProcessed(400, result.issues, { operation, messageId }), ...ruled };

    // Warnings never refuse: an ok answer carries them in an OperationOutcome that response.details names.
    const built =
      result.kind === "ok"
        ? answer(
            200,
            okMessage(
              correlation,
              result.resources,
              deps,
              result.focus,
              clientTargets(result.resources, message),
              checked.warnings,
            ),
            { operation, messageId },
          )
        : answer(
            options.businessErrors === "http" ? 422 : 200,
            errorMessage(correlation, "fatal-error", [...result.issues, ...checked.warnings], deps),
            {
              operation,
              messageId,
            },
          );
    const serialized = bundleJson(built.body);
    const body = deps.texts.keep(serialized);
    deps.replays.remember(messageId, {
      status: built.status,
      body,
      identity,
      callId: inbound.call?.id,
      at: inbound.call?.at ?? deps.now(),
    });
    // The journal keeps these very texts of the call (not a second copy).
    const kept = { response: body, ...("body" in identity ? { request: identity.body } : {}) };
    return { ...built, ...ruled, serialized, kept };
  }
}

export type MessagePipeline = ReturnType<typeof createMessagePipeline>;

/** R4 lets a MessageHeader id repeat only for the same message: another content under it is a 409 (CONTRACT §5). */
function reusedId(messageId: string, earlier: StoredAnswer): Issue {
  const call = earlier.callId ? `call ${earlier.callId}` : "an earlier call";
  return issue(
    "duplicate",
    `MessageHeader id ${messageId} was already used by ${call} at ${earlier.at.toISOString()} for a message with different content; send a new MessageHeader id (only an exact resend may repeat one).`,
    "Bundle.entry[0].resource.id",
  );
}
