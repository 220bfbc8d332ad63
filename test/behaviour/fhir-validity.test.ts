import type { AllergyIntolerance, Bundle, Observation, Patient, Resource, Task } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { ALTERNATE, example, exampleFiles, focusOf, messageBundle, post, responseHeader } from "../support/messages.js";
import { referencesOutside, unresolvedReferences } from "../support/references.js";
import { emittedProblems } from "../support/validator.js";

const EID = "urn:ae:emirates-id";
const who = { identifier: { system: EID, value: "784-1991-3333333-8" } };

/** References clients sent to resources outside their messages: the sandbox may only echo these. */
const echoes = new Set<string>();

/**
 * Sends a message and returns the response body after checking it is valid R4
 * and that every reference the sandbox wrote resolves inside the response Bundle.
 */
async function validReply(app: ReturnType<typeof createApp>["app"], bundle: Bundle, path?: string) {
  for (const reference of referencesOutside(bundle)) echoes.add(reference);
  const reply = await post(app, bundle, path ? { path } : {});
  const label = `response of ${responseHeader(bundle).eventCoding?.code}`;
  expect(emittedProblems(reply.body as Resource), label).toEqual([]);
  expect(unresolvedReferences(reply.body, echoes), label).toEqual([]);
  return reply;
}

const withPatient = (file: string, field: "patient" | "subject") => ({ ...example(file), [field]: who }) as Resource;

describe("every resource the sandbox emits is valid FHIR R4 (independent validator)", () => {
  // Budget: 1.8 s alone at a load average of 12, 7.4 s in a serial run before the validator was indexed at import (2026-11-27).
  it("the responses of all 18 operations, refusals and errors", async () => {
    const { app } = createApp();
    const patient = { resourceType: "Patient", identifier: [who.identifier] } as Patient;
    await validReply(app, messageBundle("view-patient-profile", [patient]));
    await validReply(app, messageBundle("get-pending-tasks", [patient]));

    for (const [kind, file, field] of [
      ["allergy", "allergyintolerance-example.json", "patient"],
      ["history", "condition-example.json", "subject"],
      ["history", "procedure-example.json", "subject"],
      ["measurement", "observation-example-bloodpressure.json", "subject"],
    ] as const) {
      const added = focusOf(
        (await validReply(app, messageBundle(`add-${kind}`, [withPatient(file, field)]))).body,
      )[0] as Resource;
      await validReply(app, messageBundle(`update-${kind}`, [{ ...added, [field]: who } as Resource]));
      const removal = messageBundle(`remove-${kind}`, [added]);
      await validReply(app, removal, kind === "allergy" ? ALTERNATE : undefined);
    }

    const task = focusOf(
      (
        await validReply(
          app,
          messageBundle("add-task", [
            {
              resourceType: "Task",
              status: "ready",
              intent: "order",
              priority: "urgent",
              code: { coding: [{ system: "urn:uae-fhir-sandbox:task-kind", code: "assessment" }] },
              description: "Diabetic foot assessment",
              for: who,
              performerType: [
                { coding: [{ system: "http://snomed.info/sct", code: "309343006", display: "Physician" }] },
              ],
            } as Task,
          ]),
        )
      ).body,
    )[0] as Task;
    await validReply(app, messageBundle("update-task", [{ ...task, status: "in-progress" } as Task]));
    await validReply(app, messageBundle("update-task", [{ ...task, status: "draft" } as Task])); // refused
    await validReply(
      app,
      messageBundle("cancel-task", [
        { ...task, status: "cancelled", statusReason: { text: "no longer needed" } } as Task,
      ]),
    );
    await validReply(app, messageBundle("update-task", [{ ...task, id: "unknown-task" }])); // not found

    const subscription = {
      ...example("subscription-example.json"),
      channel: { type: "rest-hook", endpoint: "https://pharmacy.example.ae/hook", payload: "application/fhir+json" },
    } as Resource;
    const pharmacy = {
      resourceType: "Organization",
      id: "ph1",
      identifier: [{ system: "urn:ae:pharmacy-licence", value: "PH-1" }],
      name: "Pharmacy",
    } as Resource;
    await validReply(app, messageBundle("subscribe-order-notifications", [subscription, pharmacy]));
    const fulfillment = {
      resourceType: "Task",
      id: "fulfil-1",
      status: "accepted",
      intent: "order",
      businessStatus: { coding: [{ system: "urn:uae-fhir-sandbox:availability", code: "available" }] },
    } as Resource;
    await validReply(app, messageBundle("confirm-drugs-availability", [fulfillment]));
    await validReply(app, messageBundle("receive-allocation", [fulfillment]));
    await validReply(app, messageBundle("send-dispense-summary", [example("medicationdispense0301.json")]));

    // Not processed: bare OperationOutcomes.
    await validReply(app, messageBundle("no-such-event", [patient]));
    const bad = await post(app, "not json");
    expect(emittedProblems(bad.body)).toEqual([]);
  }, 15_000);

  // Budget: 2.1 s alone at a load average of 12 (2026-11-27).
  it("a profile built from every official example of the four record kinds", async () => {
    const { app } = createApp();
    const chalmers = example<Patient>("patient-example.json");
    const files = exampleFiles();
    const kinds = [
      ["allergyintolerance-", "add-allergy", "patient"],
      ["condition-", "add-history", "subject"],
      ["procedure-", "add-history", "subject"],
      ["observation-", "add-measurement", "subject"],
    ] as const;
    for (const [prefix, event, field] of kinds) {
      for (const file of files.filter((f) => f.startsWith(prefix))) {
        const record = { ...example(file), [field]: { reference: "Patient/example" } } as Resource;
        const reply = await validReply(app, messageBundle(event, [record, chalmers], { focus: [0] }));
        expect(reply.status, file).toBe(200);
      }
    }
    const view = await validReply(app, messageBundle("view-patient-profile", [chalmers]));
    const resources = ((view.body as Bundle).entry ?? []).map((e) => e.resource as Resource);
    // The patient's generated records are listed too; each example must be among them.
    const allergies = resources.filter((r) => r.resourceType === "AllergyIntolerance") as AllergyIntolerance[];
    for (const file of files.filter((f) => f.startsWith("allergyintolerance-"))) {
      expect(
        allergies.map((a) => JSON.stringify(a.code)),
        file,
      ).toContain(JSON.stringify(example<AllergyIntolerance>(file).code));
    }
    expect(resources.filter((r) => r.resourceType === "Observation") as Observation[]).not.toHaveLength(0);
    expect(resources.find((r) => r.resourceType === "Patient")).toMatchObject({ name: chalmers.name });
  }, 10_000);
});
