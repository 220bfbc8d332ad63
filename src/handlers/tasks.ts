import type { Patient, Task } from "fhir/r4.js";
import { CLOSED_TASK_STATUSES, checkTransition, isTaskStatus } from "../domain/task-transitions.js";
import { type Issue, issue } from "../fhir/outcome.js";
import { identityOfEntry, identityOfReference } from "../store/patient-identity.js";
import { type Handler, type HandlerTable, invalid, refuse, withPatients } from "./handler.js";
import { patientReference } from "./profile-records.js";

const PRIORITY_ORDER = ["stat", "asap", "urgent", "routine"] as const;

const addTask: Handler = ({ focus, message }, { store, now }) => {
  // Kind, initial status and required elements are catalogue checks (src/routing/default-operations.ts).
  const problems: Issue[] = [];
  const identities = focus.map((e) => {
    const task = e.resource as unknown as Task;
    const identity = identityOfReference(task.for, message);
    if (!identity) {
      problems.push(
        issue(
          "invalid",
          "Task.for must name the patient: a Patient entry, Patient/{id}, or an identifier.",
          `${e.path}.for`,
        ),
      );
    }
    return identity;
  });
  if (problems.length > 0) return invalid(...problems);
  const at = now().toISOString();
  const owners: string[] = [];
  const created = focus.map((e, i) => {
    const patient = store.ensurePatient(identities[i] as NonNullable<(typeof identities)[number]>);
    owners.push(patient.id as string);
    const { id: _clientId, ...task } = e.resource as unknown as Task;
    return store.create<Task>(
      { ...task, for: patientReference(patient), authoredOn: task.authoredOn ?? at, lastModified: at },
      patient.id as string,
    );
  });
  return withPatients(created, owners, store);
};

/**
 * Looks up the stored tasks a message's focus names (a generated task of a
 * patient not met yet too, by `Task.for`); not-found issues for the others.
 */
function storedTasks(
  focus: Parameters<Handler>[0]["focus"],
  store: Parameters<Handler>[1]["store"],
  message: Parameters<Handler>[0]["message"],
) {
  const issues: Issue[] = [];
  const owners: string[] = [];
  const tasks = focus.map((e) => {
    const id = e.resource.id as string;
    const patient = identityOfReference((e.resource as unknown as Task).for, message);
    const found =
      store.get<Task>("Task", id) ?? (patient ? store.generatedRecord<Task>(patient, "Task", id) : undefined);
    if (found) owners.push(found.patientId);
    if (!found) {
      issues.push(
        issue(
          "not-found",
          `Task/${e.resource.id} is not in the sandbox: use the id returned by add-task.`,
          `${e.path}.id`,
        ),
      );
    }
    return found?.resource;
  });
  return { issues, tasks, owners };
}

function transitionIssue(from: Task["status"], to: Task["status"], id: string | undefined, path: string): Issue[] {
  if (!isTaskStatus(to)) return [issue("value", `Task.status "${to}" is not an R4 Task status.`, `${path}.status`)];
  const check = checkTransition(from, to);
  if (check.allowed) return [];
  const next =
    check.allowedNext.length > 0 ? `allowed from ${from}: ${check.allowedNext.join(", ")}` : `${from} is final`;
  return [issue("business-rule", `Task/${id} cannot go from ${from} to ${to} (${next}).`, `${path}.status`)];
}

/** update-task: fields sent replace the stored ones; status moves only along the state machine. */
const updateTask: Handler = ({ focus, message }, { store, now }) => {
  const { issues, tasks, owners } = storedTasks(focus, store, message);
  focus.forEach((e, i) => {
    const before = tasks[i];
    if (before)
      issues.push(...transitionIssue(before.status, (e.resource as unknown as Task).status, before.id, e.path));
  });
  if (issues.length > 0) return refuse(...issues);
  const updated = focus.map((e, i) => {
    const before = tasks[i] as Task;
    const { meta: _m, ...sent } = e.resource as unknown as Task;
    // The task stays with its patient, whatever `for` the update carries.
    return store.update<Task>({ ...before, ...sent, for: before.for, lastModified: now().toISOString() });
  });
  return withPatients(updated, owners, store);
};

/** cancel-task: to cancelled with the reason given; a closed task cannot be cancelled. */
const cancelTask: Handler = ({ focus, message }, { store, now }) => {
  const { issues, tasks, owners } = storedTasks(focus, store, message);
  focus.forEach((e, i) => {
    const before = tasks[i];
    if (before) issues.push(...transitionIssue(before.status, "cancelled", before.id, e.path));
  });
  if (issues.length > 0) return refuse(...issues);
  const cancelled = focus.map((e, i) => {
    const sent = e.resource as unknown as Task;
    const before = tasks[i] as Task;
    const task: Task = { ...before, status: "cancelled", lastModified: now().toISOString() };
    if (sent.statusReason) task.statusReason = sent.statusReason;
    if (sent.note) task.note = [...(before.note ?? []), ...sent.note];
    return store.update(task);
  });
  return withPatients(cancelled, owners, store);
};

/** Most urgent first (stat, asap, urgent, routine), then oldest. */
export function pendingOrder(a: Task, b: Task): number {
  const rank = (t: Task) => PRIORITY_ORDER.indexOf(t.priority ?? "routine");
  return rank(a) - rank(b) || (Date.parse(a.authoredOn ?? "") || 0) - (Date.parse(b.authoredOn ?? "") || 0);
}

const pendingTasks: Handler = ({ focus, message }, { store }) => {
  const patient = store.ensurePatient(identityOfEntry(focus[0]?.resource as Patient, message));
  const pending = store
    .records<Task>(patient.id as string, ["Task"])
    .filter((t) => !(CLOSED_TASK_STATUSES as readonly string[]).includes(t.status))
    .sort(pendingOrder);
  // The Patient follows even when nothing is pending: the answer says whose list it is.
  return withPatients(pending, [patient.id as string], store);
};

export const taskHandlers: HandlerTable = {
  "get-pending-tasks": pendingTasks,
  "add-task": addTask,
  "update-task": updateTask,
  "cancel-task": cancelTask,
};
