import type { Bundle, Patient, Task } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { focusOf, messageBundle, post, responseHeader } from "../support/messages.js";

const EID = "urn:ae:emirates-id";

/** The twelve FHIR R4 Task statuses (hl7.org/fhir/R4/valueset-task-status.html). */
type TaskStatus =
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

const newTask = (status: TaskStatus, extra: Partial<Task> = {}): Task => ({
  resourceType: "Task",
  status: status as Task["status"],
  intent: "order",
  priority: "routine",
  code: { coding: [{ system: "urn:uae-fhir-sandbox:task-kind", code: "measure" }], text: "Measure blood pressure" },
  description: "Measure blood pressure at home for 7 days",
  for: { identifier: { system: EID, value: "784-1980-2222222-2" } },
  performerType: [{ coding: [{ system: "http://snomed.info/sct", code: "224535009", display: "Registered nurse" }] }],
  ...extra,
});

function sandbox(options: Parameters<typeof createApp>[0] = {}) {
  const { app } = createApp(options);
  const send = async (event: string, task: Task) => post(app, messageBundle(event, [task]));
  const add = async (task: Task) => {
    const reply = await send("add-task", task);
    expect(reply.status).toBe(200);
    return focusOf(reply.body)[0] as Task;
  };
  /** Brings a task to `status` through allowed transitions, from a start status. */
  const taskIn = async (status: TaskStatus): Promise<Task> => {
    const path: Record<TaskStatus, TaskStatus[]> = {
      draft: ["draft"],
      requested: ["requested"],
      ready: ["ready"],
      received: ["requested", "received"],
      accepted: ["requested", "accepted"],
      rejected: ["requested", "rejected"],
      "in-progress": ["ready", "in-progress"],
      "on-hold": ["ready", "on-hold"],
      completed: ["ready", "in-progress", "completed"],
      failed: ["ready", "in-progress", "failed"],
      cancelled: ["ready", "cancelled"],
      "entered-in-error": ["ready", "entered-in-error"],
    };
    const [first, ...rest] = path[status];
    let task = await add(newTask(first as TaskStatus));
    for (const next of rest) {
      const reply = await send("update-task", { ...task, status: next as Task["status"] });
      expect(responseHeader(reply.body).response?.code).toBe("ok");
      task = focusOf(reply.body)[0] as Task;
    }
    return task;
  };
  const pending = async (value: string) => {
    const reply = await post(
      app,
      messageBundle("get-pending-tasks", [
        { resourceType: "Patient", identifier: [{ system: EID, value }] } as Patient,
      ]),
    );
    expect(reply.status).toBe(200);
    // The Patient follows the Tasks so that Task.for resolves (CONTRACT §11); the list is the Tasks.
    return ((reply.body as Bundle).entry ?? [])
      .slice(1)
      .map((e) => e.resource as Task)
      .filter((r) => r.resourceType === "Task");
  };
  return { app, send, add, taskIn, pending };
}

/**
 * CONTRACT §6, copied by hand (not imported from src/): the transitions of a
 * health-program Task. Besides these rows: any status but entered-in-error
 * may go to entered-in-error; a non-terminal status may be kept (an update
 * that reassigns, reprioritises or adds a note); a terminal task (completed,
 * failed, rejected, cancelled) accepts nothing else.
 */
const CONTRACT_TABLE: Record<TaskStatus, TaskStatus[]> = {
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
const ALL = Object.keys(CONTRACT_TABLE) as TaskStatus[];
const TERMINAL: TaskStatus[] = ["completed", "failed", "rejected", "cancelled"];

const allowedByContract = (from: TaskStatus, to: TaskStatus): boolean =>
  CONTRACT_TABLE[from].includes(to) ||
  (to === "entered-in-error" && from !== "entered-in-error") ||
  (from === to && !TERMINAL.includes(from) && from !== "entered-in-error");

/** Every (from, to) pair, 12 × 12, and whether CONTRACT §6 allows it. */
const transitions = ALL.flatMap((from) => ALL.map((to) => ({ from, to, allowed: allowedByContract(from, to) })));

describe("the test's own transition table", () => {
  it("covers all 144 pairs, and allows what the contract spells out", () => {
    expect(transitions).toHaveLength(144);
    const allowed = (from: TaskStatus) => transitions.filter((t) => t.from === from && t.allowed).map((t) => t.to);
    // A few rows written out in full, as CONTRACT §6 reads with its two sentences below the table.
    expect(allowed("draft").sort()).toEqual(["cancelled", "draft", "entered-in-error", "ready", "requested"]);
    expect(allowed("completed")).toEqual(["entered-in-error"]);
    expect(allowed("entered-in-error")).toEqual([]);
    // 25 rows of the table, 11 statuses that may go to entered-in-error, 7 non-terminal statuses that may stay.
    expect(transitions.filter((t) => t.allowed)).toHaveLength(25 + 11 + 7);
  });
});

describe("health-program tasks (CONTRACT §6)", () => {
  it.each(transitions)("update-task $from → $to: allowed $allowed", async ({ from, to, allowed }) => {
    const s = sandbox();
    const task = await s.taskIn(from);
    const reply = await s.send("update-task", { ...task, status: to as Task["status"] });
    expect(reply.status).toBe(200);
    const header = responseHeader(reply.body);
    if (allowed) {
      expect(header.response?.code).toBe("ok");
      expect(focusOf(reply.body)[0]).toMatchObject({ id: task.id, status: to });
    } else {
      expect(header.response?.code).toBe("fatal-error");
      const outcome = reply.body.entry.find(
        (e: { resource: { resourceType: string } }) => e.resource.resourceType === "OperationOutcome",
      );
      expect(outcome.resource.issue[0]).toMatchObject({ code: "business-rule" });
      expect(outcome.resource.issue[0].diagnostics).toContain(`from ${from} to ${to}`);
    }
  });

  it.each(["draft", "requested", "ready"] as TaskStatus[])("a new task may start as %s", async (status) => {
    const task = await sandbox().add(newTask(status));
    expect(task).toMatchObject({ status, meta: { versionId: "1" } });
    expect(task.id).toBeTruthy();
  });

  it.each(["in-progress", "completed", "accepted"] as TaskStatus[])(
    "a new task may not start as %s",
    async (status) => {
      const reply = await sandbox().send("add-task", newTask(status));
      expect(reply.status).toBe(400);
      expect(reply.body.issue[0].expression).toEqual(["Bundle.entry[1].resource.status"]);
    },
  );

  it("add-task needs the kind in Task.code", async () => {
    const reply = await sandbox().send("add-task", newTask("ready", { code: { text: "something" } }));
    expect(reply.status).toBe(400);
    expect(reply.body.issue[0].diagnostics).toMatch(/order, measure, assessment/);
  });

  it("updates assignment, priority and notes while staying in a status", async () => {
    const s = sandbox();
    const task = await s.add(newTask("ready"));
    const reply = await s.send("update-task", {
      ...task,
      priority: "urgent",
      owner: { display: "Nurse Amna" },
      note: [{ text: "called the patient" }],
    });
    expect(focusOf(reply.body)[0]).toMatchObject({
      status: "ready",
      priority: "urgent",
      owner: { display: "Nurse Amna" },
      meta: { versionId: "2" },
    });
  });

  it("cancel-task cancels with a reason; a closed task cannot be cancelled", async () => {
    const s = sandbox();
    const open = await s.add(newTask("requested"));
    const reason = { text: "done at another clinic" };
    const reply = await s.send("cancel-task", { ...open, status: "cancelled", statusReason: reason });
    expect(focusOf(reply.body)[0]).toMatchObject({ status: "cancelled", statusReason: reason });
    for (const closed of ["completed", "failed", "cancelled"] as TaskStatus[]) {
      const task = await s.taskIn(closed);
      const refused = await s.send("cancel-task", { ...task, status: "cancelled" });
      expect(responseHeader(refused.body).response?.code).toBe("fatal-error");
    }
  });

  it("refuses an unknown task id, naming it; 422 with --business-errors http", async () => {
    for (const [options, status] of [
      [{}, 200],
      [{ businessErrors: "http" as const }, 422],
    ] as const) {
      const reply = await sandbox(options).send("update-task", { ...newTask("ready"), id: "no-such-task" });
      expect(reply.status).toBe(status);
      const outcome = reply.body.entry[1].resource;
      expect(outcome.issue[0]).toMatchObject({ code: "not-found", expression: ["Bundle.entry[1].resource.id"] });
      expect(outcome.issue[0].diagnostics).toContain("Task/no-such-task");
    }
  });

  it("get-pending-tasks lists open tasks, most urgent first then oldest", async () => {
    const s = sandbox();
    const value = "784-1980-2222222-2";
    const generated = await s.pending(value);
    expect(generated.length).toBeGreaterThan(0);
    for (const t of generated) await s.send("cancel-task", { ...t, status: "cancelled" });
    expect(await s.pending(value)).toEqual([]);

    const at = (day: number) => `2030-01-0${day}T00:00:00Z`;
    const routineOld = await s.add(newTask("ready", { priority: "routine", authoredOn: at(1) }));
    const routineNew = await s.add(newTask("ready", { priority: "routine", authoredOn: at(2) }));
    const stat = await s.add(newTask("requested", { priority: "stat", authoredOn: at(3) }));
    const urgent = await s.add(newTask("draft", { priority: "urgent", authoredOn: at(4) }));
    const asap = await s.add(newTask("ready", { priority: "asap", authoredOn: at(5) }));
    const done = await s.taskIn("completed");
    const list = await s.pending(value);
    expect(list.map((t) => t.id)).toEqual([stat.id, asap.id, urgent.id, routineOld.id, routineNew.id]);
    expect(list.map((t) => t.id)).not.toContain(done.id);
  });
});
