import type { Bundle, Resource } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type SandboxApp } from "../../src/app.js";
import { RawHeaders } from "../../src/http/raw-headers.js";
import type { Answer } from "../../src/pipeline/process-message.js";
import { quietLogger } from "../orders/pharmacy-client.js";
import { OPERATION_CASES } from "../routing/operation-messages.js";
import { ALTERNATE, envelope, example, exampleFiles, messageBundle, STANDARD } from "../support/messages.js";

// The answer's text is written around the kept texts of stored records (bundleJson, fixed-resources): it must be
// exactly the text of the answer object serialized whole, as written out here, independently of src/text.

/** JSON.stringify, then `<`, `>`, `&` escaped (CONTRACT §15). */
const reference = (body: unknown) =>
  JSON.stringify(body).replace(/</g, "\\u003c").replace(/>/g, "\\u003e").replace(/&/g, "\\u0026");

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function open(): SandboxApp {
  const sandbox = createApp({}, { logger: quietLogger });
  cleanups.push(sandbox.close);
  return sandbox;
}

async function answer(sandbox: SandboxApp, bundle: Bundle, path = STANDARD): Promise<Answer> {
  return sandbox.workspace.processMessage({
    path,
    headers: new RawHeaders(["Content-Type", "application/fhir+json"]),
    body: envelope(bundle),
    endpoint: `http://localhost${path}`,
    fhirBase: "http://localhost/uae-fhir/r4",
  });
}

function expectSameText(label: string, got: Answer): void {
  expect(got.serialized, `${label}: ${got.status} ${JSON.stringify(got.body).slice(0, 600)}`).toBeDefined();
  expect(got.serialized === reference(got.body), label).toBe(true);
}

const patientOf = (r: Resource) => ({ ...r, patient: { reference: "Patient/example" } });
const subjectOf = (r: Resource) => ({ ...r, subject: { reference: "Patient/example" } });

describe("the answer's text is the answer serialized whole", () => {
  it("for every operation, ok and refused, each three times (the stored records' texts kept from the second)", async () => {
    const sandbox = open();
    for (const c of OPERATION_CASES) {
      for (let round = 0; round < 3; round++) {
        const got = await answer(sandbox, await c.request(sandbox.app), c.path);
        expect(got.status, c.id).toBe(200);
        expectSameText(`${c.id} #${round}`, got);
      }
    }
    const refused = await answer(
      sandbox,
      messageBundle("remove-history", [
        { resourceType: "Condition", id: "nope", subject: { reference: "Patient/x" } } as Resource,
      ]),
    );
    expectSameText("a refusal", refused);
  });

  it("for the HL7 examples the store keeps: added, viewed in the patient's profile, changed and removed", async () => {
    const sandbox = open();
    const kinds: Array<[RegExp, string, (r: Resource) => Resource]> = [
      [/^allergyintolerance-/, "add-allergy", patientOf],
      [/^(condition|procedure)-/, "add-history", subjectOf],
      [/^observation-/, "add-measurement", subjectOf],
    ];
    const stored: Array<[string, Resource]> = [];
    for (const file of exampleFiles()) {
      const kind = kinds.find(([pattern]) => pattern.test(file));
      if (!kind) continue;
      const [, event, named] = kind;
      const got = await answer(sandbox, messageBundle(event, [named(example(file))]));
      expectSameText(file, got);
      if (got.status === 200) stored.push([event, (got.body as Bundle).entry?.[1]?.resource as Resource]);
    }
    expect(stored.length).toBeGreaterThan(20);
    for (let round = 0; round < 3; round++) {
      const view = await answer(sandbox, messageBundle("view-patient-profile", [example("patient-example.json")]));
      expect((view.body as Bundle).entry?.length).toBeGreaterThan(20);
      expectSameText(`view #${round}`, view);
    }
    for (const [event, resource] of stored.slice(0, 6)) {
      const changed = await answer(sandbox, messageBundle(event.replace("add", "update"), [{ ...resource }]));
      expectSameText(`${event} updated`, changed);
      const remove = event.replace("add", "remove");
      const path = remove === "remove-allergy" ? ALTERNATE : STANDARD;
      const removed = await answer(sandbox, messageBundle(remove, [{ ...resource }]), path);
      expectSameText(`${event} removed`, removed);
    }
    expectSameText(
      "view after",
      await answer(sandbox, messageBundle("view-patient-profile", [example("patient-example.json")])),
    );
  });
});
