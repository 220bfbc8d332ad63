import type { MedicationDispense } from "fhir/r4.js";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { SandboxApp } from "../../src/app.js";
import {
  confirm,
  dispense,
  medicationRequestsOf,
  newOrder,
  pushInbox,
  quietLogger,
  receiveAllocation,
  subscribe,
  taskOf,
} from "../orders/pharmacy-client.js";
import { schemaProblems } from "../support/json-schema.js";
import { example, exampleFiles, messageBundle, post, responseHeader } from "../support/messages.js";
import { exampleOperations, sandboxWith } from "../support/validation-app.js";
import { r4Problems } from "../support/validator.js";

/**
 * No false positives on real data (CONTRACT §11): every HL7 R4 example that
 * is the focus of an inbound operation is accepted when sent through it.
 * Independent validators agree the examples are valid R4 in the first place.
 */

const open: SandboxApp[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.close();
});

const operations = exampleOperations(exampleFiles());
const stateless = operations.filter((o) => o.event !== "send-dispense-summary");
const dispenses = operations.filter((o) => o.event === "send-dispense-summary");

describe("the HL7 examples are valid R4 by the independent validators", () => {
  beforeAll(() => {
    // Indexing Medplum's definitions and compiling the schema take seconds, once.
    r4Problems(example("patient-example.json"));
    schemaProblems(example("patient-example.json"));
  }, 60_000);

  it.each(exampleFiles())("%s", (file) => {
    const resource = example(file);
    expect(r4Problems(resource), "Medplum").toEqual([]);
    expect(schemaProblems(resource), "HL7 JSON Schema").toEqual([]);
  });
});

describe("every HL7 example that fits an operation is accepted through it", () => {
  it("covers every example of the kinds the operations take", () => {
    const counts: Record<string, number> = {};
    for (const o of operations) counts[o.event] = (counts[o.event] ?? 0) + 1;
    expect(counts).toEqual({
      "add-allergy": 6,
      "add-history": 8,
      "add-measurement": 8,
      "view-patient-profile": 1,
      "add-task": 6,
      "subscribe-order-notifications": 2,
      "send-dispense-summary": 2,
    });
  });

  it.each(stateless.map((o) => [o.file, o.event, o] as const))("%s via %s", async (_file, _event, operation) => {
    const sandbox = sandboxWith();
    open.push(sandbox);
    const request = operation.message(operation.resource());

    const reply = await post(sandbox.app, request);

    expect(reply.status, JSON.stringify(reply.body).slice(0, 600)).toBe(200);
    expect(responseHeader(reply.body).response?.code, JSON.stringify(reply.body).slice(0, 600)).toBe("ok");
  });

  it("the Patient example via get-pending-tasks", async () => {
    const sandbox = sandboxWith();
    open.push(sandbox);
    const request = messageBundle("get-pending-tasks", [example("patient-example.json")]);

    const reply = await post(sandbox.app, request);

    expect(reply.status, JSON.stringify(reply.body).slice(0, 600)).toBe(200);
    expect(responseHeader(reply.body).response?.code).toBe("ok");
  });

  it.each(dispenses.map((o) => [o.file] as const))(
    "%s via send-dispense-summary, for a drug order allocated to the pharmacy",
    async (file) => {
      const licence = "PH-HL7";
      const inbox = pushInbox();
      const sandbox = sandboxWith({}, { fetch: inbox.fetch, logger: quietLogger });
      open.push(sandbox);
      const { app } = sandbox;
      const channel = inbox.channel(licence);
      expect((await subscribe(app, licence, channel.url)).status).toBe(200);
      await newOrder(app);
      const push = await channel.next();
      const task = taskOf(push.bundle);
      const confirmed = await confirm(app, licence, task, {
        availability: "available",
        options: [{ method: "home-delivery" }],
      });
      expect(responseHeader(confirmed.body).response?.code, JSON.stringify(confirmed.body)).toBe("ok");
      await channel.next(); // the allocation
      expect(responseHeader((await receiveAllocation(app, licence, task.id as string)).body).response?.code).toBe("ok");
      const [ordered] = medicationRequestsOf(push.bundle);
      // The HL7 dispense as a summary of this order: authorised by the order's MedicationRequest (its own names one
      // the sandbox never issued), handed over (a summary reports a completed dispense with whenHandedOver, §3).
      const hl7: MedicationDispense = {
        ...example<MedicationDispense>(file),
        status: "completed",
        whenHandedOver: "2026-01-15T10:00:00+04:00",
        authorizingPrescription: [{ reference: `MedicationRequest/${ordered?.id}` }],
      };

      const reply = await dispense(app, licence, [hl7]);

      expect(reply.status, JSON.stringify(reply.body).slice(0, 600)).toBe(200);
      expect(responseHeader(reply.body).response?.code, JSON.stringify(reply.body).slice(0, 900)).toBe("ok");
    },
  );
});
