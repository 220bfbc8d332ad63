import type { CallRecord } from "../journal/call-record.js";
import type { Workspace } from "../workspace/workspace.js";
import type { PlanStep } from "./plan-schema.js";
import type { Evidence } from "./session-report.js";

/**
 * What a step kind's implementation is given: the session's facts, its workspace, what it observed so far, and
 * how to wait for more. Kinds of both roles (kinds/sender.ts, kinds/receiver.ts) are written against this alone.
 */

/** A call of the session's workspace as the session saw it: its journal record and what redaction hides. */
export interface ObservedCall {
  record: CallRecord;
  /** SHA-256 (hex, first 16) of the request's Authorization header, before the journal redacts it; null: none. */
  authFingerprint: string | null;
  /** The request Bundle's content without its MessageHeader id and timestamps (null: no readable Bundle). */
  contentFingerprint: string | null;
  /** The answer's Retry-After, in ms (null: none). */
  retryAfterMs: number | null;
}

export interface CallWatch {
  /** Every call recorded in the workspace since the session started, oldest first. */
  all(): readonly ObservedCall[];
  /** How many calls `all()` holds now: a `from` for `next`. */
  readonly position: number;
  /**
   * The first call, from position `from` on (default: calls recorded from now on), that `test` holds for: one
   * already recorded at once, else the next one recorded; undefined when `timeoutMs` passes or the session stops.
   */
  next(test: (call: ObservedCall) => boolean, timeoutMs: number, from?: number): Promise<ObservedCall | undefined>;
}

/** What the session was started with. */
export interface SessionFacts {
  id: string;
  role: "sender" | "receiver";
  /** Operations the system declared (sender); empty: none declared. */
  operations: readonly string[];
  pharmacyUrl: string | null;
  pharmacyLicence: string | null;
  timeScale: number;
}

export interface StepContext {
  readonly session: SessionFacts;
  readonly workspace: Workspace;
  /** The sandbox parts a kind may use besides the workspace (pushes, URLs, time). */
  readonly sandbox: ConformanceSandbox;
  /** A plan duration in ms, multiplied by the time scale; `fallbackMs` (also scaled) when the plan gives none. */
  ms(duration: number | string | undefined, fallbackMs: number): number;
  /** Aborts when the session is stopped. */
  readonly signal: AbortSignal;
  /** What earlier steps found, for later ones (each role keeps its own keys). */
  readonly memory: Record<string, unknown>;
  readonly calls: CallWatch;
  /** A call as evidence, with a one-line note. */
  evidence(call: ObservedCall, note: string): Evidence;
  /**
   * Runs `cleanup` when the session ends (at once if it has): what a step set up in the workspace for the session
   * (a runtime rule) goes with it, however the session ends. Optional so that a test's fake context may leave it out.
   */
  onEnd?(cleanup: () => void): void;
}

/** A step's verdict; the runner makes a `fail` of a step that is not required a `warning`. */
export interface StepVerdict {
  status: "pass" | "fail" | "skip";
  /** On a pass, what was seen; on a failure, what was expected and what happened instead. */
  message: string;
  evidence: Evidence[];
}

/** One step kind's implementation: `spec` is the step's value under its kind key, parsed by the plan schema. */
export type StepRun = (ctx: StepContext, spec: never, step: PlanStep) => Promise<StepVerdict>;

/** The sandbox-wide parts the conformance sessions use. */
export interface ConformanceSandbox {
  now(): Date;
  newId(): string;
  /** The sandbox's URL as systems reach it (--public-url, or where it listens). */
  publicUrl(): string;
  /** The message path a system sends to in a workspace, e.g. http://127.0.0.1:8080/w/team-a/uae-fhir/r4/$process-message. */
  messageUrl(workspace: Workspace): string;
  /** Every operation id the sandbox knows (coverage). */
  operationIds(): readonly string[];
  /** Delivers a push as the order flow does (the push dispatcher, with its limits, retries and journal record). */
  deliver: import("../push/dispatcher.js").PushDispatcher["deliver"];
}
