/**
 * What a conformance session found, as the admin API and report.json show it: every report format (the R4
 * TestReport, JUnit XML) and the dashboard page are made from this alone. It imports nothing: the dashboard's client,
 * built without the server's modules, reads these same types.
 */

/** A step's or a test's result. `warning`: a step that is not required failed; `skip`: it could not be checked. */
export type Outcome = "pass" | "fail" | "warning" | "skip";
export type StepStatus = "pending" | "running" | Outcome;
export type SessionState = "running" | "passed" | "failed" | "stopped";

/** A journal call that decided a step: the dashboard links it, the TestReport names it. */
export interface Evidence {
  /** The journal call id (GET {workspace prefix}/__admin/calls/{callId}). */
  callId: string;
  direction: "inbound" | "outbound";
  operation: string | null;
  messageId: string | null;
  /** The HTTP status it was answered with (null: no answer: a fault, a timeout, a refused connection). */
  status: number | null;
  at: string;
  /** One line: what this call shows, e.g. "retry of 6f1c… 1.2 s after the 503". */
  note: string;
}

export interface StepResult {
  id: string;
  title: string;
  /** The step kind (answerNext, expectRetry, …). */
  kind: string;
  /** An action of the sandbox, or an expectation of the system under test. */
  type: "action" | "expectation";
  required: boolean;
  status: StepStatus;
  /** What was expected, in one sentence (set from the plan before the step runs). */
  expected: string;
  /** What happened: on a failure, what was seen instead; null until the step ends. */
  message: string | null;
  /** What to change in the system, from the plan, shown on a failure or warning. */
  fix: string | null;
  evidence: Evidence[];
  startedAt: string | null;
  endedAt: string | null;
}

export interface TestResult {
  id: string;
  title: string;
  description: string | null;
  /** The rule it checks, with its id in the plan. */
  rule: { id: string; source: "fhir-r4" | "sandbox" | "host"; ref: string; text: string };
  required: boolean;
  status: StepStatus;
  steps: StepResult[];
}

export interface SessionReport {
  id: string;
  role: "sender" | "receiver";
  plan: { id: string; title: string; version: string; source: string };
  workspace: string;
  state: SessionState;
  startedAt: string;
  endedAt: string | null;
  /** Why the session stopped early (DELETE, a reset, the workspace dropped), or null. */
  stopReason: string | null;
  /** Who took part: the sandbox, and the system under test as the session knows it. */
  participants: {
    sandbox: { messageUrl: string };
    system: {
      /** The operations it declared (sender role); empty: none declared. */
      operations: string[];
      /** The pharmacy's push endpoint and licence (receiver role). */
      pharmacyUrl: string | null;
      pharmacyLicence: string | null;
    };
  };
  /** Every wait and window of the plan is multiplied by this (1: as written). */
  timeScale: number;
  tests: TestResult[];
  summary: { tests: number; passed: number; failed: number; warnings: number; skipped: number };
  coverage: {
    /** Of the sandbox's operations: those the session's calls carried, and the rest. */
    operations: { exercised: string[]; notExercised: string[] };
    /** Of the plan's rules: those a finished test checked, and the rest. */
    rules: { checked: string[]; notChecked: string[] };
  };
}
