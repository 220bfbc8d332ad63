import type { JsonStep } from "./components/fhir-view.js";

/** The admin API's answers, as far as the dashboard reads them (README, "Admin API"). */

export interface CallSummary {
  id: string;
  at: string;
  direction: "inbound" | "outbound";
  method: string;
  path: string;
  operation: string | null;
  messageId: string | null;
  status: number | null;
  code: "ok" | "transient-error" | "fatal-error" | null;
  rule: string | null;
  durationMs: number;
  duplicate?: boolean;
  fault?: string;
  error?: string;
  target?: string;
  attempt?: number;
  asyncAnswer?: AsyncAnswerNote;
  respondsTo?: string;
}

/** An inbound call answered 202 (async=true): where its response message goes, after a delay or never. */
export interface AsyncAnswerNote {
  to: string;
  delayMs?: number;
  dropped?: true;
}

export interface CallPage {
  calls: CallSummary[];
  next: string | null;
}

export interface RuleOutcome {
  rule: string;
  id: string;
  source: string;
  line: number;
  outcome: "answered" | "used-up" | "not-matched" | "not-reached";
  failed?: string;
  note?: string;
}

export interface CallDetail {
  id: string;
  at: string;
  direction: "inbound" | "outbound";
  durationMs: number;
  operation: string | null;
  messageId: string | null;
  rule: string | null;
  duplicate?: boolean;
  fault?: string;
  upstream?: string;
  error?: string;
  target?: string;
  attempt?: number;
  asyncAnswer?: AsyncAnswerNote;
  respondsTo?: string;
  request: { method: string; url: string; path: string; headers: Record<string, string>; body: unknown };
  response: { status: number; headers: Record<string, string>; body: unknown } | null;
  explanation: { summary: string; answeredBy?: string | null; rules?: RuleOutcome[]; otherOperations?: number };
  issues: Array<{
    severity: string | null;
    code: string | null;
    diagnostics: string | null;
    expression: string[];
    locations: JsonStep[][];
  }>;
}

export interface Operations {
  operations: Array<{ id: string; area: string; path: string; event: string }>;
  pushes: Array<{ id: string }>;
}

export interface Delivery {
  attempts: number;
  status: number | null;
  error: string | null;
  deliveredAt: string | null;
}

export interface OrderView {
  id: string;
  state: string;
  kind: string;
  createdAt: string;
  deadline: string;
  allocatedTo: string | null;
  patient: { id: string; identifier: Array<{ system?: string; value?: string }> };
  items: Array<{ requestId: string; resourceType: string; code: string | null; display: string | null }>;
  pharmacies: Array<{
    licence: string;
    state: string;
    taskId: string;
    taskStatus: string;
    businessStatus: string | null;
    delivery: Delivery;
    allocationDelivery: Delivery | null;
    confirmation: { availability: string; at: string; options: Array<{ method: string }> } | null;
  }>;
  history: Array<{ at: string; event: string }>;
}

export interface Pharmacy {
  licence: string;
  name: string | null;
  active: boolean;
  endpoint: string | null;
  headers: Record<string, string>;
  source: string;
  subscriptionId: string | null;
  lastDelivery: {
    callId: string;
    at: string;
    operation: string | null;
    attempt: number | null;
    status: number | null;
    error: string | null;
  } | null;
}

/** A conformance session's report, as GET /__admin/conformance/sessions/{id} answers it: the server's own types. */
export type { SessionReport, StepResult, TestResult } from "../../conformance/session-report.js";
