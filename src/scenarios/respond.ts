import type { Resource } from "fhir/r4.js";
import type { Message } from "../envelope/message.js";
import { clientTargets } from "../fhir/client-targets.js";
import { type Issue, type IssueCode, issue, operationOutcome } from "../fhir/outcome.js";
import { type Correlation, errorMessage, okMessage } from "../fhir/response-message.js";
import type { RequestHeaders } from "../http/raw-headers.js";
import type { Scripted } from "./scenarios.js";
import type { Fault, OutcomeSpec } from "./schema.js";
import type { TemplateContext } from "./template.js";

/** What a scripted response makes of one message: a body to send, a fault to stage, or the built-in answer. */
export type ScriptedReply =
  | { kind: "answer"; status: number; body: unknown; headers: Record<string, string> }
  | { kind: "fault"; status: number; fault: Fault; headers: Record<string, string> }
  | { kind: "built-in"; headers: Record<string, string> };

export interface ScriptContext {
  message: Message;
  operation: string;
  path: string;
  headers: RequestHeaders;
  patientKeys: readonly string[];
  correlation: Correlation;
  businessErrors: "message" | "http";
  newId(): string;
  now(): Date;
}

function outcomeIssues(outcome: OutcomeSpec, transient: boolean): Issue[] {
  const code: IssueCode = outcome.code ?? (transient ? "transient" : "business-rule");
  return [issue(code, outcome.diagnostics, outcome.expression, outcome.severity ?? "error")];
}

/**
 * Renders the response a rule gives this time: templates filled from the
 * request, and the FHIR parts built by the same module as every other
 * answer (response messages correlated to the request, OperationOutcomes).
 */
export function scriptedReply(scripted: Scripted, ctx: ScriptContext): ScriptedReply {
  const { spec } = scripted.response;
  const template: TemplateContext = {
    values: {
      request: {
        messageId: ctx.message.header.id,
        event: ctx.message.event,
        operation: ctx.operation,
        path: ctx.path,
        source: ctx.message.header.source?.endpoint,
        url: ctx.correlation.endpoint,
        headers: Object.fromEntries(ctx.headers),
      },
      patient: { key: ctx.patientKeys[0] ?? null },
      rule: { name: scripted.rule.name, hit: scripted.hit },
    },
    bundle: ctx.message.bundle as unknown as Record<string, unknown>,
    newId: ctx.newId,
    now: ctx.now,
    named: new Map(),
  };
  const rendered = scripted.response.render(template) as {
    outcome?: OutcomeSpec;
    resources?: Resource[];
    body?: unknown;
    headers?: Record<string, string>;
  };
  // Lower-cased, so a rule's Content-Type replaces the default one instead of joining it.
  const headers = Object.fromEntries(
    Object.entries(rendered.headers ?? {}).map(([k, v]) => [k.toLowerCase(), String(v)]),
  );
  const deps = { newId: ctx.newId, now: ctx.now };

  if (spec.builtIn) return { kind: "built-in", headers };
  if (spec.fault) return { kind: "fault", status: spec.status ?? 200, fault: spec.fault, headers };
  if (rendered.outcome) {
    const outcome = rendered.outcome;
    const status = spec.status;
    const kind =
      outcome.response ??
      (status !== undefined && (status >= 500 || status === 429) ? "transient-error" : "fatal-error");
    if (kind === "none") {
      return { kind: "answer", status: status ?? 400, body: operationOutcome(outcomeIssues(outcome, false)), headers };
    }
    const transient = kind === "transient-error";
    const defaultStatus = transient || ctx.businessErrors === "message" ? 200 : 422;
    return {
      kind: "answer",
      status: status ?? defaultStatus,
      body: errorMessage(ctx.correlation, kind, outcomeIssues(outcome, transient), deps),
      headers,
    };
  }
  if (rendered.resources) {
    const resources = rendered.resources.map((r) => (r.id ? r : { ...r, id: ctx.newId() }));
    return {
      kind: "answer",
      status: spec.status ?? 200,
      body: okMessage(ctx.correlation, resources, deps, resources, clientTargets(resources, ctx.message)),
      headers,
    };
  }
  return { kind: "answer", status: spec.status ?? 200, body: rendered.body, headers };
}
