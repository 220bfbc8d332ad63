import type { Bundle, OperationOutcome } from "fhir/r4.js";
import { type Access, authorize, type Refusal } from "../auth/bearer.js";
import { type DecodedEnvelope, decodeEnvelope } from "../envelope/envelope.js";
import { type Message, readMessage } from "../envelope/message.js";
import { bundleJson } from "../fhir/bundle-json.js";
import { clientTargets } from "../fhir/client-targets.js";
import { type Issue, issue, operationOutcome } from "../fhir/outcome.js";
import { type Correlation, errorMessage, okMessage } from "../fhir/response-message.js";
import type { HandlerContext, HandlerResult, HandlerTable } from "../handlers/handler.js";
import type { Dribble } from "../http/dribble.js";
import type { RequestHeaders } from "../http/raw-headers.js";
import type { KeptBodies } from "../journal/call-record.js";
import type { RequestFacts } from "../matching/matcher.js";
import { patientKeysOf } from "../matching/patient-keys.js";
import type { Catalogue } from "../routing/catalogue.js";
import { routeMessage } from "../routing/route.js";
import { type ScriptedReply, scriptedReply } from "../scenarios/respond.js";
import type { RuleTrace } from "../scenarios/rule-trace.js";
import type { AsyncLeg } from "../scenarios/rules.js";
import type { Scripted } from "../scenarios/scenarios.js";
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
  /** `$process-message?async=true`: an operation whose answer is the data it reads is refused (synchronous only). */
  async?: true;
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
  /** Write the body in pieces over a time (a rule's `dribble`). */
  dribble?: Dribble | undefined;
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
  /** A rule's `async`: how the answer of an asynchronous call is sent later. */
  asyncLeg?: AsyncLeg | undefined;
  /**
   * The body's MessageHeader.response.code, for the request log: null when the body is no response message (an
   * OperationOutcome, nothing); undefined when the pipeline did not build the body (a scripted `body`, an
   * upstream's answer), which the log then reads from the text.
   */
  responseCode?: string | null;
}

/** What the scenario rules decided about a message that reached them: the rule that answered, if any, and how. */
interface Ruling {
  rule: string | null;
  delayMs: number;
  headers: Record<string, string>;
  trace: RuleTrace | undefined;
  dribble?: Dribble | undefined;
  asyncLeg?: AsyncLeg | undefined;
}

/**
 * An answer built in one go, every member in place from the start: the answers of the hot path share one shape,
 * and nothing is copied into a second object (an object spread per step, before).
 */
class PipelineAnswer implements Answer {
  duplicate = false;
  rule: string | null = null;
  delayMs = 0;
  headers: Record<string, string> = {};
  fault: Fault | undefined = undefined;
  forward: true | undefined = undefined;
  serialized: string | undefined = undefined;
  kept: KeptBodies | undefined = undefined;
  requestJson: true | undefined = undefined;
  trace: RuleTrace | undefined = undefined;
  dribble: Dribble | undefined = undefined;
  asyncLeg: AsyncLeg | undefined = undefined;

  constructor(
    public status: number,
    public body: unknown,
    public operation: string | null,
    public messageId: string | null,
    public responseCode: string | null | undefined,
  ) {}

  /** The rules' decision: who answered, the delay, their headers, how they decided. */
  ruledBy(ruling: Ruling | undefined): this {
    if (ruling) {
      this.rule = ruling.rule;
      this.delayMs = ruling.delayMs;
      this.headers = ruling.headers;
      this.trace = ruling.trace;
      this.dribble = ruling.dribble;
      this.asyncLeg = ruling.asyncLeg;
    }
    return this;
  }
}

/** A handler's result, now or later (a handler given to createApp may be async; the built-in ones are not). */
const isPending = (value: HandlerResult | Promise<HandlerResult>): value is Promise<HandlerResult> =>
  typeof (value as { then?: unknown }).then === "function";

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
  /** An answer with an OperationOutcome of `issues`: the message was not processed (with --proxy, forwarded). */
  const notProcessed = (
    status: number,
    issues: Issue[],
    operation: string | null = null,
    messageId: string | null = null,
  ): PipelineAnswer => (options.proxy ? forward(operation, messageId) : outcome(status, issues, operation, messageId));
  const outcome = (status: number, issues: Issue[], operation: string | null, messageId: string | null) =>
    new PipelineAnswer(status, operationOutcome(issues), operation, messageId, null);
  // Recording from a real service: it judges bad messages too, so they are forwarded as well.
  const forward = (operation: string | null, messageId: string | null): PipelineAnswer => {
    const forwarded = new PipelineAnswer(0, undefined, operation, messageId, undefined);
    forwarded.forward = true;
    return forwarded;
  };
  // Never forwarded with --proxy: the sandbox is the one that holds the credentials.
  const refused = (refusal: Refusal, operation: string | null, messageId: string | null): PipelineAnswer => {
    const answer = outcome(refusal.status, refusal.issues, operation, messageId);
    answer.headers = refusal.headers;
    return answer;
  };
  /** A rule's scripted reply: its body as the rule gave it (the log reads its code), or a fault with no body. */
  const scriptedAnswer = (
    reply: ScriptedReply & { kind: "answer" | "fault" },
    operation: string,
    messageId: string,
    ruling: Ruling,
  ): PipelineAnswer => {
    if (reply.kind === "answer") {
      return new PipelineAnswer(reply.status, reply.body, operation, messageId, undefined).ruledBy(ruling);
    }
    const answer = new PipelineAnswer(reply.status, undefined, operation, messageId, null).ruledBy(ruling);
    answer.fault = reply.fault;
    return answer;
  };

  /** A call refused unread: the operation and message id it names, when they can be told, for its journal. */
  const refusedUnread = (inbound: InboundMessage, refusal: Refusal): PipelineAnswer => {
    const envelope = decodeEnvelope(inbound.body, options.lenientEnvelope);
    const message = envelope.ok ? readMessage(envelope.bundle).message : undefined;
    if (!message) return refused(refusal, null, null);
    const id = message.header.id;
    const operation = routeMessage(message, deps.catalogue, inbound.path, options.basePath).operation;
    return refused(refusal, operation?.id ?? null, typeof id === "string" ? id : null);
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

  /**
   * The answer to one message: returned as it is when nothing waits (the built-in handlers answer at once), a
   * promise only when a handler does.
   */
  return function processMessage(inbound: InboundMessage): Answer | Promise<Answer> {
    // No usable token: a 401 before anything of the message counts (CONTRACT §13).
    if (inbound.access && !inbound.access.ok) return refusedUnread(inbound, inbound.access.refusal);

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
    const answer = processEnvelope(inbound, envelope);
    return answer instanceof PipelineAnswer ? readJson(answer) : answer.then(readJson);
  };

  function processEnvelope(
    inbound: InboundMessage,
    envelope: DecodedEnvelope & { ok: true },
  ): PipelineAnswer | Promise<PipelineAnswer> {
    // Every resource of the message against R4, before anything else (CONTRACT §11).
    const checked = validateMessage(envelope.bundle, options);
    const read = readMessage(envelope.bundle);
    const headerId = read.message?.header.id;
    const messageId = typeof headerId === "string" ? headerId : null;
    if (!read.message)
      return notProcessed(400, mergeIssues({ envelope: read.issues }, checked.errors), null, messageId);

    const message = read.message;
    const routed = routeMessage(message, deps.catalogue, inbound.path, options.basePath);
    const operation = routed.operation?.id ?? null;
    const issues = mergeIssues({ envelope: read.issues, operation: routed.issues }, checked.errors);
    if (routed.rightPath) return notProcessed(404, issues, operation, messageId);
    // A token without the operation's scope: 403, before the message's own problems.
    const forbidden = inbound.access && routed.operation ? authorize(inbound.access, routed.operation) : undefined;
    if (forbidden) return refused(forbidden, operation, messageId);
    // Before the rules and the duplicate memory: a refused asynchronous read changes nothing, not even a counter.
    if (inbound.async && routed.operation?.category === "currency") {
      return outcome(400, [synchronousOnly(routed.operation.id)], operation, messageId);
    }
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
      if (scripted && reply && reply.kind !== "built-in" && operation !== null && messageId !== null) {
        const ruling = {
          rule: scripted.rule.name,
          delayMs: scripted.response.delayMs(deps.random),
          headers: reply.headers,
          trace,
          dribble: scripted.response.dribble,
          asyncLeg: scripted.response.asyncLeg?.(deps.random),
        };
        return scriptedAnswer(reply, operation, messageId, ruling);
      }
      const refusal = notProcessed(400, issues, operation, messageId);
      if (trace) refusal.trace = trace;
      return refusal;
    }

    const facts = factsOf(inbound, message, operation);
    // Rules come before the duplicate check: a scripted 503 must not be replayed to the client's retry.
    const trace = deps.scenarios.newTrace();
    const scripted = deps.scenarios.decide(facts, trace);
    const reply = scripted
      ? scriptedReply(scripted, scriptContext(inbound, message, operation, correlation))
      : undefined;
    const ruling: Ruling = {
      rule: scripted?.rule.name ?? null,
      delayMs: scripted?.response.delayMs(deps.random) ?? 0,
      headers: reply?.headers ?? {},
      trace,
      dribble: scripted?.response.dribble,
      asyncLeg: scripted?.response.asyncLeg?.(deps.random),
    };
    if (reply && reply.kind !== "built-in") return scriptedAnswer(reply, operation, messageId, ruling);

    if (options.proxy) return forward(operation, messageId).ruledBy(ruling);

    // Before a handler could touch the message.
    const bundle = message.bundle as unknown as Record<string, unknown>;
    const earlier = deps.replays.get(messageId);
    if (earlier && sameMessage(earlier.identity, bundle, inbound.body)) {
      // Escaped again: a state file written before answers were escaped may hold the text as it was then.
      const serialized = escapeJsonText(earlier.body.text);
      const body = JSON.parse(serialized);
      const replayed = new PipelineAnswer(earlier.status, body, operation, messageId, responseCodeOf(body));
      replayed.ruledBy(ruling);
      replayed.duplicate = true;
      replayed.headers = { ...ruling.headers, "X-Sandbox-Duplicate": "true" };
      replayed.serialized = serialized;
      // Escaping lengthens what it changes: the same length is the same text, which the journal may share.
      if (serialized.length === earlier.body.length) replayed.kept = { response: earlier.body };
      return replayed;
    }
    if (earlier) return outcome(409, [reusedId(messageId, earlier)], operation, messageId).ruledBy(ruling);
    const identity = messageIdentity(bundle, inbound.body, deps.texts);

    const handler = deps.handlers[routed.operation.id];
    if (!handler) throw new Error(`no handler for operation ${routed.operation.id}`);
    const result = handler({ operation: routed.operation, message, focus: routed.focus }, deps);
    // Promise.resolve: a handler's thenable becomes a real promise, which the edge tells from an answer.
    return isPending(result) ? Promise.resolve(result).then(handled) : handled(result);

    function handled(result: HandlerResult): PipelineAnswer {
      if (result.kind === "invalid") return outcome(400, result.issues, operation, messageId).ruledBy(ruling);

      // Warnings never refuse: an ok answer carries them in an OperationOutcome that response.details names.
      const built =
        result.kind === "ok"
          ? new PipelineAnswer(
              200,
              okMessage(
                correlation,
                result.resources,
                deps,
                result.focus,
                clientTargets(result.resources, message),
                checked.warnings,
              ),
              operation,
              messageId,
              "ok",
            )
          : new PipelineAnswer(
              options.businessErrors === "http" ? 422 : 200,
              errorMessage(correlation, "fatal-error", [...result.issues, ...checked.warnings], deps),
              operation,
              messageId,
              "fatal-error",
            );
      const serialized = bundleJson(built.body);
      const body = deps.texts.keep(serialized);
      deps.replays.remember(messageId as string, {
        status: built.status,
        body,
        identity,
        callId: inbound.call?.id,
        at: inbound.call?.at ?? deps.now(),
      });
      built.serialized = serialized;
      // The journal keeps these very texts of the call (not a second copy).
      built.kept = { response: body, ...("body" in identity ? { request: identity.body } : {}) };
      return built.ruledBy(ruling);
    }
  }
}

/** The request body was JSON: the envelope could be read. */
function readJson(answer: PipelineAnswer): Answer {
  answer.requestJson = true;
  return answer;
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

/** `async=true` on an operation that only reads: its answer is the data the caller waits for. */
function synchronousOnly(operation: string): Issue {
  return issue(
    "not-supported",
    `${operation} only reads: its answer is the data asked for, so it is answered synchronously only. Send it without async=true (and without response-url).`,
  );
}

/** The response.code of a response message's MessageHeader (its first entry), else null. */
function responseCodeOf(body: unknown): string | null {
  const entry = (body as { entry?: Array<{ resource?: { response?: { code?: unknown } } }> } | null)?.entry;
  const code = Array.isArray(entry) ? entry[0]?.resource?.response?.code : undefined;
  return typeof code === "string" ? code : null;
}
