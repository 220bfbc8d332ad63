/** FHIR R4 Task statuses. */
export type TaskStatus =
  | "draft"
  | "requested"
  | "received"
  | "accepted"
  | "rejected"
  | "ready"
  | "cancelled"
  | "in-progress"
  | "on-hold"
  | "failed"
  | "completed"
  | "entered-in-error";

/** CONTRACT §6: the health-program Task state machine, as a table. */
export const TASK_TRANSITIONS: Readonly<Record<TaskStatus, readonly TaskStatus[]>> = {
  draft: ["requested", "ready", "cancelled"],
  requested: ["received", "accepted", "rejected", "ready", "cancelled"],
  received: ["accepted", "rejected", "cancelled"],
  accepted: ["ready", "in-progress", "cancelled"],
  ready: ["in-progress", "on-hold", "cancelled"],
  "in-progress": ["completed", "failed", "on-hold", "ready", "cancelled"],
  "on-hold": ["in-progress", "ready", "cancelled"],
  rejected: [],
  cancelled: [],
  failed: [],
  completed: [],
  "entered-in-error": [],
};

/** Statuses a new task may start in. */
export const INITIAL_TASK_STATUSES: readonly TaskStatus[] = ["draft", "requested", "ready"];

/** A task in one of these is no longer pending. */
export const CLOSED_TASK_STATUSES: readonly TaskStatus[] = [
  "completed",
  "cancelled",
  "failed",
  "rejected",
  "entered-in-error",
];

const TERMINAL: readonly TaskStatus[] = ["completed", "failed", "rejected", "cancelled"];

export type TransitionCheck = { allowed: true } | { allowed: false; allowedNext: readonly TaskStatus[] };

/**
 * Whether a task may go from one status to another: along the table, staying
 * in a non-terminal status (reassign, reprioritise, add a note), or to
 * entered-in-error from anywhere.
 */
export function checkTransition(from: TaskStatus, to: TaskStatus): TransitionCheck {
  if (to === "entered-in-error" && from !== "entered-in-error") return { allowed: true };
  if (from === to && !TERMINAL.includes(from) && from !== "entered-in-error") return { allowed: true };
  if (TASK_TRANSITIONS[from]?.includes(to)) return { allowed: true };
  const next = [...(TASK_TRANSITIONS[from] ?? [])];
  if (from !== "entered-in-error") next.push("entered-in-error");
  return { allowed: false, allowedNext: next };
}

export function isTaskStatus(value: unknown): value is TaskStatus {
  return typeof value === "string" && value in TASK_TRANSITIONS;
}
