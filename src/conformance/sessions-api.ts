import type { Issue } from "../fhir/outcome.js";
import type { Workspace } from "../workspace/workspace.js";
import type { Plan } from "./plan-schema.js";
import type { SessionReport } from "./session-report.js";

/** A plan as loaded: where it came from (shipped, or a --conformance folder). */
export interface LoadedPlan {
  plan: Plan;
  /** e.g. "conformance/sender.yaml", or the host folder's relative path. */
  source: string;
}

/** What starts a session (POST /__admin/conformance/sessions, `conformance run`). */
export interface SessionRequest {
  role: "sender" | "receiver";
  /** A plan id; default the shipped plan of the role. */
  plan?: string;
  /** Sender: the operations the system declares it sends. */
  operations?: string[];
  /** Receiver: the pharmacy's push endpoint, registered in the workspace for the session. */
  pharmacyUrl?: string;
  /** Receiver: the pharmacy's licence (default PH-CONFORMANCE-0001). */
  pharmacyLicence?: string;
  /** Every wait and window of the plan is multiplied by it (default 1; 0.01 to 10). */
  timeScale?: number;
}

export interface ConformanceSession {
  readonly id: string;
  readonly workspace: string;
  /** The report as it stands (a copy): live while it runs. */
  report(): SessionReport;
  /** Resolves with the final report when the session ends (every test run, or stopped). */
  readonly done: Promise<SessionReport>;
  /** Stops it: the step running ends as skipped, the rest stay pending; the state is `stopped`. */
  stop(reason: string): void;
  /** Hears every change of the report (a step started or ended, the session ended); returns the unsubscribe. */
  onUpdate(listener: (report: SessionReport) => void): () => void;
}

export type StartResult =
  | { ok: true; session: ConformanceSession }
  | { ok: false; status: 400 | 404 | 409 | 429; issues: Issue[] };

/** The conformance sessions of a sandbox, each in a workspace: at most one running per workspace. */
export interface ConformanceSessions {
  plans(): readonly LoadedPlan[];
  start(workspace: Workspace, request: SessionRequest): StartResult;
  get(workspace: string, id: string): ConformanceSession | undefined;
  /** A workspace's sessions, newest first (the finished ones it keeps too, up to a few). */
  list(workspace: string): readonly ConformanceSession[];
  /** Stops every running session (the sandbox closes). */
  close(): void;
}
