import type { AllergyIntolerance, Bundle, Patient, Task } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { admin } from "../admin/admin-client.js";
import { ALTERNATE, messageBundle, post, responseHeader } from "../support/messages.js";

// A generated patient's records exist on the exchange before the sandbox has met the patient: a message that names
// one of them (update, remove, a task moved on) finds it — and any other id changes nothing.

const EID = "urn:ae:emirates-id";
const KEY = "784-1990-1234567-6";
const patient = (): Patient => ({ resourceType: "Patient", identifier: [{ system: EID, value: KEY }] });

/** The records a sandbox lists for the patient once it has met it (a view, in another sandbox with the same seed). */
async function generatedRecords() {
  const { app } = createApp();
  const view = await post(app, messageBundle("view-patient-profile", [patient()]));
  const pending = await post(app, messageBundle("get-pending-tasks", [patient()]));
  const of = <R>(reply: { body: Bundle }, type: string) =>
    (reply.body.entry ?? []).map((e) => e.resource).filter((r) => r?.resourceType === type) as R[];
  return { allergies: of<AllergyIntolerance>(view, "AllergyIntolerance"), tasks: of<Task>(pending, "Task") };
}

/** A message about `record` naming the patient by its Emirates ID (a Patient entry), as a client would. */
function about(event: string, record: AllergyIntolerance | Task, field: "patient" | "for") {
  const bundle = messageBundle(event, [{ ...record, meta: undefined } as never, patient()], { focus: [0] });
  const resource = bundle.entry?.[1]?.resource as unknown as Record<string, unknown>;
  resource[field] = { reference: bundle.entry?.[2]?.fullUrl };
  return bundle;
}

describe("records of an unseen patient's generated profile", () => {
  it("update-allergy and remove-allergy find them on a fresh sandbox", async () => {
    const { allergies } = await generatedRecords();
    const [first] = allergies;
    expect(first?.id).toBeDefined();

    const { app } = createApp();
    const updated = await post(
      app,
      about("update-allergy", { ...(first as AllergyIntolerance), criticality: "low" }, "patient"),
    );
    expect(updated.status).toBe(200);
    expect(responseHeader(updated.body).response?.code).toBe("ok");
    const stored = updated.body.entry?.[1]?.resource as AllergyIntolerance;
    expect([stored.id, stored.meta?.versionId, stored.criticality]).toEqual([first?.id, "2", "low"]);

    const removed = await post(app, about("remove-allergy", stored, "patient"), { path: ALTERNATE });
    expect(responseHeader(removed.body).response?.code).toBe("ok");
  });

  it("update-task and cancel-task find the generated tasks", async () => {
    const { tasks } = await generatedRecords();
    const task = tasks.at(-1) as Task;
    const { app } = createApp();
    const cancelled = await post(app, about("cancel-task", { ...task, status: "cancelled" }, "for"));
    expect(responseHeader(cancelled.body).response?.code).toBe("ok");
    expect((cancelled.body.entry?.[1]?.resource as Task | undefined)?.status).toBe("cancelled");
  });

  it("an id the profile does not hold is refused as before, and the patient stays unmet", async () => {
    const { allergies } = await generatedRecords();
    const { app } = createApp();
    const bogus = { ...(allergies[0] as AllergyIntolerance), id: "not-a-generated-id" };
    const refused = await post(app, about("update-allergy", bogus, "patient"));
    expect(responseHeader(refused.body).response?.code).toBe("fatal-error");
    expect(JSON.stringify(refused.body)).toContain("AllergyIntolerance/not-a-generated-id is not in the sandbox");
    expect((await admin(app, "GET", `/patients/${encodeURIComponent(`${EID}|${KEY}`)}`)).status).toBe(404);
  });
});
