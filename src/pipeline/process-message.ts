import type { Bundle, OperationOutcome } from "fhir/r4.js";
import { decodeEnvelope } from "../envelope/envelope.js";
import { readMessage } from "../envelope/message.js";
import { type Issue, issue, operationOutcome } from "../fhir/outcome.js";
import { type Correlation, errorMessage, okMessage } from "../fhir/response-message.js";
import type { HandlerContext, HandlerTable } from "../handlers/handler.js";
import type { Catalogue } from "../routing/catalogue.js";
import { routeMessage } from "../routing/route.js";
import type { ReplayCache } from "./replay-cache.js";

/** A POST to a message path, as the HTTP edge hands it over. */
export interface InboundMessage {
  /** Path without the base path, e.g. /uae-fhir/r4/$process-message. */
  path: string;
  contentType: string | undefined;
  body: string;
  /** Absolute URL the message was sent to (the response's source.endpoint). */
  endpoint: string;
  /** FHIR base URL for fullUrls, e.g. http://localhost:8080/uae-fhir/r4. */
  fhirBase: string;
}

/** The answer to one message, with what the journal needs to know about it. */
export interface Answer {
  status: number;
  body: Bundle | OperationOutcome;
  operation: string | null;
  messageId: string | null;
  /** True when this is the stored answer to a resent message. */
  duplicate: boolean;
}

export interface PipelineOptions {
  basePath: string;
  lenientEnvelope: boolean;
  businessErrors: "message" | "http";
}

export interface PipelineDeps extends HandlerContext {
  catalogue: Catalogue;
  handlers: HandlerTable;
  replays: ReplayCache<Answer>;
}

const JSON_TYPES = new Set(["application/json", "application/fhir+json"]);

/**
 * The message pipeline: envelope → message → operation → handler → response
 * message. Never throws for bad input: every problem becomes an issue.
 */
export function createMessagePipeline(options: PipelineOptions, deps: PipelineDeps) {
  const notProcessed = (status: number, issues: Issue[], found: Partial<Answer> = {}): Answer => ({
    status,
    body: operationOutcome(issues),
    operation: found.operation ?? null,
    messageId: found.messageId ?? null,
    duplicate: false,
  });

  return async function processMessage(inbound: InboundMessage): Promise<Answer> {
    const mediaType = inbound.contentType?.split(";")[0]?.trim().toLowerCase();
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

    const read = readMessage(envelope.bundle);
    const headerId = read.message?.header.id;
    const messageId = typeof headerId === "string" ? headerId : null;
    if (!read.message) return notProcessed(400, read.issues, { messageId });

    const message = read.message;
    const routed = routeMessage(message, deps.catalogue, inbound.path, options.basePath);
    const operation = routed.operation?.id ?? null;
    const issues = [...read.issues, ...routed.issues];
    if (routed.rightPath) return notProcessed(404, issues, { operation, messageId });
    if (issues.length > 0 || !routed.operation || messageId === null) {
      return notProcessed(400, issues, { operation, messageId });
    }

    const earlier = deps.replays.get(messageId);
    if (earlier) return { ...earlier, duplicate: true };

    const handler = deps.handlers[routed.operation.id];
    if (!handler) throw new Error(`no handler for operation ${routed.operation.id}`);
    const result = await handler({ operation: routed.operation, message, focus: routed.focus }, deps);
    if (result.kind === "invalid") return notProcessed(400, result.issues, { operation, messageId });

    const correlation: Correlation = {
      request: message.header,
      endpoint: inbound.endpoint,
      fhirBase: inbound.fhirBase,
    };
    const answer: Answer =
      result.kind === "ok"
        ? {
            status: 200,
            body: okMessage(correlation, result.resources, deps, result.focus),
            operation,
            messageId,
            duplicate: false,
          }
        : {
            status: options.businessErrors === "http" ? 422 : 200,
            body: errorMessage(correlation, "fatal-error", result.issues, deps),
            operation,
            messageId,
            duplicate: false,
          };
    deps.replays.remember(messageId, answer);
    return answer;
  };
}

export type MessagePipeline = ReturnType<typeof createMessagePipeline>;
