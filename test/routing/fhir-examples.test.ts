import type { Patient, Resource, Task } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { example, exampleFiles, messageBundle, post, responseHeader, STANDARD } from "../support/messages.js";
import { fromPharmacy, pharmacy, taskCode } from "./operation-messages.js";
import { expectOk, journalledCall, stored } from "./response-checks.js";

/** Which operation each kind of clinical example belongs to (test/fixtures/fhir-examples/README.md). */
const CLINICAL: Array<[prefix: string, type: string, event: string]> = [
  ["allergyintolerance-", "AllergyIntolerance", "add-allergy"],
  ["condition-", "Condition", "add-history"],
  ["procedure-", "Procedure", "add-history"],
  ["observation-", "Observation", "add-measurement"],
];

const clinicalCases = CLINICAL.flatMap(([prefix, type, event]) =>
  exampleFiles()
    .filter((file) => file.startsWith(prefix))
    .map((file) => [file, type, event] as [string, string, string]),
);

describe("the HL7 R4 examples are accepted by the operation they fit", () => {
  it("finds every AllergyIntolerance, Condition, Procedure and Observation example", () => {
    const counts = Object.fromEntries(
      CLINICAL.map(([, type]) => [type, clinicalCases.filter(([, t]) => t === type).length]),
    );
    expect(counts).toEqual({ AllergyIntolerance: 6, Condition: 4, Procedure: 4, Observation: 8 });
  });

  it.each(clinicalCases)("%s (%s) via %s", async (file, type, event) => {
    const { app } = createApp();
    const resource = example(file);
    expect(resource.resourceType).toBe(type);
    // Their references (Patient/example, Practitioner/f201, …) point outside the Bundle; that is fine.
    const request = messageBundle(event, [resource]);

    const reply = await post(app, request);

    const [saved] = expectOk(reply, request, STANDARD);
    expect(saved?.resourceType).toBe(type);
    expect((await journalledCall(app, responseHeader(request).id as string)).operation).toBe(event);
  });

  it.each(["view-patient-profile", "get-pending-tasks"])("the Patient example via %s", async (event) => {
    const { app } = createApp();
    const request = messageBundle(event, [example<Patient>("patient-example.json")]);

    const reply = await post(app, request);

    const focus = expectOk(reply, request, STANDARD);
    if (event === "view-patient-profile") {
      const patient = focus.find((r): r is Patient => r.resourceType === "Patient");
      expect(patient?.identifier).toEqual(
        expect.arrayContaining([expect.objectContaining({ system: "urn:oid:1.2.36.146.595.217.0.1", value: "12345" })]),
      );
    } else {
      for (const r of focus) expect(r.resourceType).toBe("Task");
    }
  });

  it("the Subscription example via subscribe-order-notifications", async () => {
    const { app } = createApp();
    const subscription = example<Resource & { channel: { type: string; endpoint: string } }>(
      "subscription-example.json",
    );
    // The example already is a rest-hook on an https URL; only the host is moved to this machine.
    expect(subscription.channel.type).toBe("rest-hook");
    expect(subscription.channel.endpoint).toMatch(/^https:\/\//);
    subscription.channel.endpoint = "http://127.0.0.1:9/customers/mount-auburn-miu/on-result";
    const request = fromPharmacy("subscribe-order-notifications", [subscription, pharmacy()], [0], 1);

    const focus = expectOk(await post(app, request), request, STANDARD);

    expect(focus.map((r) => r.resourceType)).toContain("Subscription");
  });
});

/**
 * The Task examples as health-program tasks: a new task starts as draft,
 * requested or ready (CONTRACT §3), so an example in a later state is added
 * in a starting state and then brought to its own state with update-task,
 * along transitions the Task state machine allows (§6).
 */
const TASK_PATHS: Array<[file: string, addAs: Task["status"], via: Task["status"][]]> = [
  ["task-example1.json", "ready", []],
  ["task-example2.json", "requested", []],
  ["task-example3.json", "draft", []],
  ["task-example4.json", "ready", ["in-progress"]],
  ["task-example5.json", "ready", []],
  ["task-example6.json", "ready", ["in-progress"]],
];

describe("the HL7 R4 Task examples via add-task and update-task", () => {
  it.each(TASK_PATHS)("%s: added as %s, then updated to its own status", async (file, addAs, via) => {
    const { app } = createApp();
    const hl7 = example<Task>(file);
    // A health-program task codes its kind in Task.code (CONTRACT §3), which the examples do not;
    // task-example3 (a refill request) also names no performer type.
    const task: Task = {
      ...hl7,
      code: taskCode("order", hl7.code?.text ?? ""),
      performerType: hl7.performerType ?? [{ text: "Pharmacist" }],
    };
    const added: Task = { ...task, status: addAs };
    let saved = await stored<Task>(app, messageBundle("add-task", [added]));
    expect(saved.status).toBe(addAs);

    for (const status of [...via, task.status]) {
      if (status === addAs) continue;
      const change = status === task.status ? task : saved;
      const sent: Task = { ...change, id: saved.id, meta: saved.meta, status };
      const request = messageBundle("update-task", [sent]);
      const reply = await post(app, request);
      const [updated] = expectOk(reply, request, STANDARD) as Task[];
      expect(updated?.id).toBe(saved.id);
      expect(updated?.status).toBe(status);
      saved = updated as Task;
    }
    expect(saved.status).toBe(task.status);
  });
});
