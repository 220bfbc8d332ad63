import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type {
  AllergyIntolerance,
  Bundle,
  MedicationRequest,
  Observation,
  Patient,
  Practitioner,
  Resource,
  Task,
} from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type SandboxApp } from "../../src/app.js";
import type { SandboxOptions } from "../../src/config/options.js";
import {
  confirm,
  dispense,
  dispensesFor,
  medicationRequestsOf,
  newOrder,
  pushesSettled,
  quietLogger,
  receiveAllocation,
  resourcesOf,
  subscribe,
  taskOf,
} from "../orders/pharmacy-client.js";
import { OPERATION_CASES } from "../routing/operation-messages.js";
import { focusOf, messageBundle, post, type Reply, responseHeader } from "../support/messages.js";
import { startReceiver } from "../support/receiver.js";
import { referencesOutside, unresolvedReferences } from "../support/references.js";
import { emittedProblems } from "../support/validator.js";
import { versionProblems } from "../support/versions.js";

const EID = "urn:ae:emirates-id";
const SHIPPED = fileURLToPath(new URL("../../scenarios/", import.meta.url));
const LOINC = "http://loinc.org";

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function open(options: Partial<SandboxOptions> = {}): SandboxApp {
  const sandbox = createApp({ ...options }, { logger: quietLogger });
  cleanups.push(sandbox.close);
  return sandbox;
}

/**
 * What a strict R4 client checks of everything it receives: valid R4
 * (independent validator), and every reference inside the Bundle resolves
 * to an entry — but those the client itself sent pointing outside its message.
 */
class Received {
  readonly problems: string[] = [];
  readonly bundles: Bundle[] = [];
  readonly #echoes = new Set<string>();

  sent(request: Bundle): Bundle {
    for (const reference of referencesOutside(request)) this.#echoes.add(reference);
    return request;
  }

  check(label: string, body: unknown): void {
    const resource = body as Resource;
    this.problems.push(...emittedProblems(resource).map((p) => `${label}: ${p}`));
    this.problems.push(
      ...unresolvedReferences(body, this.#echoes).map((u) => `${label}: ${u.path} → ${u.reference} does not resolve`),
    );
    if (resource?.resourceType === "Bundle") this.bundles.push(body as Bundle);
  }

  async post(label: string, app: SandboxApp["app"], request: Bundle, path?: string): Promise<Reply> {
    const reply = await post(app, this.sent(request), path ? { path } : {});
    this.check(label, reply.body);
    return reply;
  }
}

describe("answers a strict R4 client accepts whole (CONTRACT §11)", () => {
  // Budget: 3.0 s alone at a load average of 12, 5.8 s in a serial run before the validator was indexed at import (2026-11-27).
  it("the answers to all 18 operations, ok and refused: valid R4, every reference resolves in the Bundle", async () => {
    const got = new Received();
    const { app } = open();
    const who = { identifier: { system: EID, value: "784-1985-1234568-1" } };
    for (const c of OPERATION_CASES) {
      const reply = await got.post(c.id, app, await c.request(app), c.path);
      expect(reply.status, c.id).toBe(200);
    }
    // Refusals: an unknown record or task, and the drug-order messages of a pharmacy without a subscription.
    for (const [event, resource] of [
      [
        "update-allergy",
        {
          resourceType: "AllergyIntolerance",
          id: "nope",
          clinicalStatus: {
            coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", code: "active" }],
          },
          code: { text: "x" },
          patient: who,
        },
      ],
      ["remove-history", { resourceType: "Condition", id: "nope", subject: who }],
      ["update-task", { resourceType: "Task", id: "nope", status: "ready", intent: "order" }],
      ["cancel-task", { resourceType: "Task", id: "nope", status: "cancelled", intent: "order" }],
    ] as const) {
      const reply = await got.post(`${event} refused`, app, messageBundle(event, [resource as unknown as Resource]));
      expect(reply.body.resourceType, JSON.stringify(reply.body)).toBe("Bundle");
      expect(responseHeader(reply.body).response?.code, event).toBe("fatal-error");
    }
    expect(got.bundles.length).toBeGreaterThanOrEqual(22);
    expect(got.problems).toEqual([]);
  }, 15_000);

  it("the Patient follows the records and tasks that name it, so Patient/{id} resolves", async () => {
    const { app } = open();
    const who = { identifier: { system: EID, value: "784-1985-1234568-1" } };
    const allergy = await post(
      app,
      messageBundle("add-allergy", [
        {
          resourceType: "AllergyIntolerance",
          clinicalStatus: {
            coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", code: "active" }],
          },
          code: { text: "peanut" },
          patient: who,
        } as AllergyIntolerance,
      ]),
    );
    const [stored] = focusOf(allergy.body) as AllergyIntolerance[];
    const patients = resourcesOf<Patient>(allergy.body, "Patient");
    expect(patients).toHaveLength(1);
    expect(`Patient/${patients[0]?.id}`).toBe(stored?.patient.reference);
    expect(patients[0]?.identifier).toContainEqual(who.identifier);

    const pending = await post(
      app,
      messageBundle("get-pending-tasks", [{ resourceType: "Patient", identifier: [who.identifier] } as Patient]),
    );
    const tasks = focusOf(pending.body) as Task[];
    expect(tasks.length).toBeGreaterThan(0);
    expect(new Set(tasks.map((t) => t.for?.reference))).toEqual(new Set([`Patient/${patients[0]?.id}`]));
    expect(resourcesOf<Patient>(pending.body, "Patient").map((p) => p.id)).toEqual([patients[0]?.id]);
  });

  it("a client's reference to an entry of its own message brings that entry; one to outside its message is echoed", async () => {
    const got = new Received();
    const { app } = open();
    const practitionerUrl = `urn:uuid:${crypto.randomUUID()}`;
    const practitioner: Practitioner = { resourceType: "Practitioner", name: [{ family: "Haddad", given: ["Omar"] }] };
    const allergy = {
      resourceType: "AllergyIntolerance",
      clinicalStatus: {
        coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", code: "active" }],
      },
      code: { text: "latex" },
      patient: { identifier: { system: EID, value: "784-1985-1234568-1" } },
      recorder: { reference: practitionerUrl },
      asserter: { reference: "Practitioner/example" },
    } as AllergyIntolerance;
    const request = messageBundle("add-allergy", [allergy], {});
    request.entry?.push({ fullUrl: practitionerUrl, resource: practitioner });

    const reply = await got.post("add-allergy", app, request);

    expect(reply.status).toBe(200);
    const [stored] = focusOf(reply.body) as AllergyIntolerance[];
    expect(stored?.recorder).toEqual({ reference: practitionerUrl });
    expect(stored?.asserter).toEqual({ reference: "Practitioner/example" });
    const entry = (reply.body as Bundle).entry?.find((e) => e.fullUrl === practitionerUrl);
    expect(entry?.resource).toEqual(practitioner);
    // Practitioner/example was not in the message: echoed, with no entry made up for it.
    expect(unresolvedReferences(reply.body).map((u) => u.reference)).toEqual(["Practitioner/example"]);
    expect(got.problems).toEqual([]);
  });

  it("scripted answers: outcomes, transient errors and scripted resources naming the request's Patient", async () => {
    const dir = mkdtempSync(join(tmpdir(), "answers-rules-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(
      join(dir, "rules.yaml"),
      `
rules:
  - name: scripted-task-for-the-patient
    when: { operation: get-pending-tasks, headers: { X-Sandbox-Scenario: scripted-for } }
    respond:
      resources:
        - resourceType: Task
          status: ready
          intent: order
          for: { reference: "{{ fhirpath('Bundle.entry.where(resource is Patient).fullUrl') }}" }
`,
    );
    const got = new Received();
    const shipped = open({ scenarios: SHIPPED });
    const patient = (value: string) => ({ resourceType: "Patient", identifier: [{ system: EID, value }] }) as Patient;
    for (const [value, status] of [
      ["784-1900-0000422-7", 200],
      ["784-1900-0000500-0", 500],
      ["784-1900-0000503-4", 503],
    ] as const) {
      const reply = await got.post(value, shipped.app, messageBundle("view-patient-profile", [patient(value)]));
      expect(reply.status, value).toBe(status);
    }
    const scripted = await post(
      shipped.app,
      got.sent(messageBundle("get-pending-tasks", [patient("784-1985-1234568-1")])),
      { headers: { "X-Sandbox-Scenario": "scripted-tasks" } },
    );
    got.check("scripted-tasks", scripted.body);

    const custom = open({ scenarios: dir });
    const request = messageBundle("get-pending-tasks", [patient("784-1985-1234568-1")]);
    const reply = await post(custom.app, got.sent(request), { headers: { "X-Sandbox-Scenario": "scripted-for" } });
    got.check("scripted-for", reply.body);
    const [task] = focusOf(reply.body) as Task[];
    expect(task?.for?.reference).toBe(request.entry?.[1]?.fullUrl);
    expect((reply.body as Bundle).entry?.find((e) => e.fullUrl === task?.for?.reference)?.resource).toEqual(
      patient("784-1985-1234568-1"),
    );
    expect(got.problems).toEqual([]);
  });

  it("pushes to a real receiver and the pharmacy's answers: references resolve, versions follow content", async () => {
    const got = new Received();
    const sandbox = open();
    const { app } = sandbox;
    const receivers = { a: await startReceiver(), b: await startReceiver() };
    cleanups.push(receivers.a.close, receivers.b.close);
    expect((await subscribe(app, "PH-A", receivers.a.url)).status).toBe(200);
    expect((await subscribe(app, "PH-B", receivers.b.url)).status).toBe(200);

    const order = await newOrder(app, {
      items: [
        { medication: { code: "861007" }, quantity: 60 },
        { medication: { code: "314077" }, quantity: 30 },
      ],
      patient: `${EID}|784-1990-7654322-4`,
    });
    const pushA = (await receivers.a.next()).bundle as Bundle;
    const pushB = (await receivers.b.next()).bundle as Bundle;
    got.check("order-fulfillment-request to PH-A", pushA);
    got.check("order-fulfillment-request to PH-B", pushB);
    const anonymous = resourcesOf<Patient>(pushA, "Patient");
    expect(anonymous).toHaveLength(1);
    expect([anonymous[0]?.identifier, anonymous[0]?.name]).toEqual([undefined, undefined]);
    const fulfillmentRequests = medicationRequestsOf(pushA);
    expect(fulfillmentRequests.map((r) => r.subject.reference)).toEqual([
      `Patient/${anonymous[0]?.id}`,
      `Patient/${anonymous[0]?.id}`,
    ]);

    const confirmed = await confirm(app, "PH-A", taskOf(pushA), { availability: "available" });
    got.check("confirm (allocates)", confirmed.body);
    const allocation = (await receivers.a.next()).bundle as Bundle;
    got.check("order-allocation", allocation);
    await pushesSettled(sandbox, order.id);
    const allocated = await receiveAllocation(app, "PH-A", taskOf(pushA).id as string);
    got.check("receive-allocation (allocated)", allocated.body);
    const notAllocated = await receiveAllocation(app, "PH-B", taskOf(pushB).id as string);
    got.check("receive-allocation (not allocated)", notAllocated.body);
    const dispensed = await dispense(app, "PH-A", dispensesFor(medicationRequestsOf(allocation)));
    got.check("send-dispense-summary", dispensed.body);
    expect(responseHeader(dispensed.body).response?.code).toBe("ok");
    expect(got.problems).toEqual([]);

    // The requests about the identified patient are another version than those about the anonymous one.
    const identified = medicationRequestsOf(allocation);
    const patient = resourcesOf<Patient>(allocation, "Patient");
    expect(patient[0]?.identifier).toContainEqual({ system: EID, value: "784-1990-7654322-4" });
    expect(identified.map((r) => r.subject.reference)).toEqual([
      `Patient/${patient[0]?.id}`,
      `Patient/${patient[0]?.id}`,
    ]);
    const versions = (rs: MedicationRequest[]) => rs.map((r) => r.meta?.versionId);
    expect(versions(fulfillmentRequests)).toEqual(["1", "1"]);
    expect(versions(identified)).toEqual(["2", "2"]);
    expect(medicationRequestsOf(allocated.body)).toEqual(identified);
    expect(medicationRequestsOf(notAllocated.body)).toEqual(fulfillmentRequests);
    // The Task: a new version at each status change, the same one wherever its content is the same.
    expect(taskOf(pushA).meta?.versionId).not.toBe(taskOf(allocation).meta?.versionId);
    expect(taskOf(allocated.body)).toEqual(taskOf(allocation));
    expect(versionProblems(got.bundles)).toEqual([]);
  });

  it("generated SpO2 observations carry LOINC 2708-6 (vital-signs profile) and 59408-5; a client's are kept as sent", async () => {
    const { app } = open();
    const who = { identifier: { system: EID, value: "784-1985-1234568-1" } };
    const clientSpO2: Observation = {
      resourceType: "Observation",
      status: "final",
      category: [
        { coding: [{ system: "http://terminology.hl7.org/CodeSystem/observation-category", code: "vital-signs" }] },
      ],
      code: { coding: [{ system: LOINC, code: "59408-5" }] },
      subject: who,
      effectiveDateTime: "2026-11-20T10:00:00Z",
      valueQuantity: { value: 97, unit: "%", system: "http://unitsofmeasure.org", code: "%" },
    };
    const added = await post(app, messageBundle("add-measurement", [clientSpO2]));
    expect((focusOf(added.body)[0] as Observation).code).toEqual(clientSpO2.code);

    // Another patient, whose profile is all generated (the view lists the latest measurement per code).
    const other = { system: EID, value: "784-1972-7654321-8" };
    const view = await post(
      app,
      messageBundle("view-patient-profile", [{ resourceType: "Patient", identifier: [other] } as Patient]),
    );
    const observations = resourcesOf<Observation>(view.body, "Observation");
    const spo2 = observations.filter((o) => o.code.coding?.some((c) => c.system === LOINC && c.code === "59408-5"));
    expect(spo2.length).toBeGreaterThan(0);
    for (const o of spo2) {
      expect(o.code.coding?.filter((c) => c.system === LOINC).map((c) => c.code)).toEqual(
        expect.arrayContaining(["2708-6", "59408-5"]),
      );
    }
  });

  it("a body over the limit is a 413 with IssueType too-long", async () => {
    const { app } = open({ maxBody: 100 });
    const reply = await post(app, messageBundle("add-allergy", [{ resourceType: "AllergyIntolerance" } as Resource]));
    expect(reply.status).toBe(413);
    expect(reply.body).toMatchObject({ resourceType: "OperationOutcome", issue: [{ code: "too-long" }] });
    expect(emittedProblems(reply.body)).toEqual([]);
  });
});
