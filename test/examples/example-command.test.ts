import type { Bundle, MessageHeader } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type SandboxDeps } from "../../src/app.js";
import { runCli } from "../../src/cli/main.js";
import { createSandbox, type Sandbox } from "../../src/index.js";
import { CONTRACT_OPERATIONS } from "../support/contract-operations.js";
import { STANDARD } from "../support/messages.js";
import { startReceiver } from "../support/receiver.js";
import { r4Problems } from "../support/validator.js";

// `uae-fhir-sandbox example <operation>` prints a message the sandbox itself accepts, for every operation; the
// pharmacy's answers carry the ids of a real order read from a running sandbox.

const quiet: Partial<SandboxDeps> = { logger: { info: () => undefined, error: () => undefined } };
const PATIENT = "784-1990-1234567-6";

const OPERATIONS = CONTRACT_OPERATIONS;
const PHARMACY_SIDE = ["confirm-drugs-availability", "receive-allocation", "send-dispense-summary"];

async function example(args: string[], env: NodeJS.ProcessEnv = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(["example", ...args], { out: (l) => out.push(l), err: (l) => err.push(l), env });
  return { code, stdout: out.join("\n"), stderr: err.join("\n") };
}

/** The Bundle inside the printed envelope. */
function bundleOf(stdout: string): Bundle {
  const envelope = JSON.parse(stdout) as { content: unknown };
  expect(Object.keys(envelope)).toEqual(["content"]);
  expect(typeof envelope.content).toBe("string");
  return JSON.parse(envelope.content as string) as Bundle;
}

const header = (bundle: Bundle) => bundle.entry?.[0]?.resource as MessageHeader;

const open: Sandbox[] = [];
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
  await Promise.all(closers.splice(0).map((c) => c()));
});

async function send(
  app: { request: (path: string, init: RequestInit) => Response | Promise<Response> },
  path: string,
  body: string,
) {
  const res = await app.request(path, { method: "POST", headers: { "content-type": "application/json" }, body });
  return { status: res.status, body: (await res.json()) as Bundle };
}

describe("uae-fhir-sandbox example: a message the sandbox accepts, for each patient-side operation", () => {
  // Budget: a CLI process each, up to 1.4 s in a serial run at a load average of 12 (2026-11-27).
  it.each(OPERATIONS.filter(([id]) => !PHARMACY_SIDE.includes(id)))(
    "%s: valid R4, answered 200 ok by a fresh sandbox (on %s)",
    async (operation, path) => {
      const printed = await example([operation, "--patient", PATIENT]);
      expect(printed.code, printed.stderr).toBe(0);
      const bundle = bundleOf(printed.stdout);
      expect(header(bundle).eventCoding?.code).toBe(operation);
      expect(r4Problems(bundle)).toEqual([]);
      expect(printed.stderr).toContain(`POST it to http://localhost:8080${path}`);

      const sandbox = createApp({ watch: false }, quiet);
      const reply = await send(sandbox.app, path, printed.stdout);
      sandbox.close();
      expect(reply.status, JSON.stringify(reply.body).slice(0, 600)).toBe(200);
      expect(header(reply.body).response).toMatchObject({ identifier: header(bundle).id, code: "ok" });
    },
    15_000,
  );

  it("--bundle prints the Bundle alone; without --patient, the same generated patient every time", async () => {
    const a = await example(["get-pending-tasks", "--bundle"]);
    const b = await example(["get-pending-tasks", "--bundle"]);
    const patientOf = (text: string) =>
      (JSON.parse(text) as Bundle).entry?.find((e) => e.resource?.resourceType === "Patient")?.resource;
    expect((JSON.parse(a.stdout) as Bundle).resourceType).toBe("Bundle");
    expect(patientOf(a.stdout)).toEqual(patientOf(b.stdout));
    // Each run is a new message: a new MessageHeader id, so it is never taken for a resend.
    expect(header(JSON.parse(a.stdout)).id).not.toBe(header(JSON.parse(b.stdout)).id);
    const other = await example(["get-pending-tasks", "--bundle", "--seed", "another-seed"]);
    expect(patientOf(other.stdout)).not.toEqual(patientOf(a.stdout));
  });

  it("an event code or alias of --operations names its operation, and is the code sent", async () => {
    const ops = "test/fixtures/operations/rename-add-allergy.yaml";
    const byId = await example(["add-allergy", "--operations", ops, "--bundle"]);
    expect(header(JSON.parse(byId.stdout)).eventCoding?.code).toBe("AllergyIntolerance-Create");
    const byAlias = await example(["ALLERGY-ADD", "--bundle"], { OPERATIONS: ops });
    expect(header(JSON.parse(byAlias.stdout)).eventCoding?.code).toBe("allergy-add");

    const sandbox = createApp({ watch: false, operationsFile: ops }, quiet);
    const reply = await send(sandbox.app, STANDARD, JSON.stringify({ content: byAlias.stdout }));
    sandbox.close();
    expect(reply.status).toBe(200);
  });

  it.each([
    [["add-alergy"], /unknown operation "add-alergy"; did you mean "add-allergy"\?/],
    [[], /example needs an operation/],
    [["add-allergy", "--patient", "784-1990-1234567-5"], /--patient "784-1990-1234567-5": expected an Emirates ID/],
    [
      ["add-allergy", "--order", "1"],
      /--order is for confirm-drugs-availability, receive-allocation, send-dispense-summary/,
    ],
    [["add-allergy", "--colour", "red"], /^unknown option --colour\n/],
  ])("bad usage %j: exit 2, saying what is wrong", async (args, says) => {
    const run = await example(args);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(says);
  });

  it("--help: exit 0, the options", async () => {
    const run = await example(["--help"]);
    expect(run.code).toBe(0);
    for (const option of [
      "--bundle",
      "--patient",
      "--seed",
      "--operations",
      "--pharmacy",
      "--order",
      "--url",
      "--token",
    ]) {
      expect(run.stdout).toContain(option);
    }
  });

  it("without --order, a pharmacy's answer is valid but its ids are placeholders, and it says so", async () => {
    const run = await example(["confirm-drugs-availability", "--bundle"]);
    expect(run.code).toBe(0);
    expect(r4Problems(JSON.parse(run.stdout))).toEqual([]);
    expect(run.stderr).toMatch(/note: Task\/\S+ is a placeholder: give --order <id>/);
  });

  it("an order the sandbox does not have, or a sandbox that is not there: exit 1", async () => {
    const sandbox = await createSandbox({ deps: quiet, watch: false });
    open.push(sandbox);
    const missing = await example(["receive-allocation", "--order", "99", "--url", sandbox.url]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^Order "99": the sandbox at \S+ has no such order/);
    const url = sandbox.url;
    await sandbox.close();
    const gone = await example(["receive-allocation", "--order", "1", "--url", url]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/Could not reach the sandbox/);
  });
});

describe("uae-fhir-sandbox example: a pharmacy's answers to a real order", () => {
  async function pharmacySandbox() {
    const receiver = await startReceiver();
    closers.push(() => receiver.close());
    const sandbox = await createSandbox({ deps: quiet, watch: false, adminToken: "admin-secret" });
    open.push(sandbox);
    const post = (body: string) =>
      fetch(`${sandbox.url}${STANDARD}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      }).then(async (res) => ({ status: res.status, body: (await res.json()) as Bundle }));
    const subscribe = await example([
      "subscribe-order-notifications",
      "--pharmacy",
      "PH-TEST-0042",
      "--endpoint",
      receiver.url,
    ]);
    expect((await post(subscribe.stdout)).status).toBe(200);
    return { sandbox, post, receiver };
  }

  async function createOrder(sandbox: Sandbox, body: unknown): Promise<string> {
    const res = await fetch(`${sandbox.url}/__admin/orders`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer admin-secret" },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(201);
    return ((await res.json()) as { id: string }).id;
  }

  it("confirm, receive-allocation and dispense of a medication order: each 200 ok, the order dispensed", async () => {
    const { sandbox, post, receiver } = await pharmacySandbox();
    const order = await createOrder(sandbox, {
      items: [{ medication: { code: "861007" }, quantity: 60 }, { medication: { code: "314077" } }],
    });
    const pushed = await receiver.next();
    const taskId = pushed.bundle.entry.find(
      (e: { resource: { resourceType: string } }) => e.resource.resourceType === "Task",
    ).resource.id;

    for (const operation of PHARMACY_SIDE) {
      const args = [operation, "--order", order, "--url", sandbox.url, "--token", "admin-secret"];
      const printed = await example(args);
      expect(printed.code, printed.stderr).toBe(0);
      expect(printed.stderr).not.toMatch(/placeholder/);
      const bundle = bundleOf(printed.stdout);
      expect(r4Problems(bundle)).toEqual([]);
      if (operation !== "send-dispense-summary") {
        // The Task of the push it answers, as the pharmacy received it.
        expect(bundle.entry?.map((e) => e.resource?.id)).toContain(taskId);
      }
      const reply = await post(printed.stdout);
      expect(reply.status, JSON.stringify(reply.body).slice(0, 800)).toBe(200);
      expect(header(reply.body).response?.code, JSON.stringify(reply.body).slice(0, 800)).toBe("ok");
    }
    const view = await fetch(`${sandbox.url}/__admin/orders/${order}`, {
      headers: { authorization: "Bearer admin-secret" },
    });
    expect(((await view.json()) as { state: string }).state).toBe("dispensed");
  });

  it("a device order is dispensed with the completed Task", async () => {
    const { sandbox, post } = await pharmacySandbox();
    const order = await createOrder(sandbox, {
      items: [{ device: { system: "http://snomed.info/sct", code: "43252007", display: "Cane" }, quantity: 1 }],
    });
    for (const operation of PHARMACY_SIDE) {
      const printed = await example([operation, "--order", order, "--pharmacy", "PH-TEST-0042", "--url", sandbox.url], {
        ADMIN_TOKEN: "admin-secret",
      });
      expect(printed.code, printed.stderr).toBe(0);
      const reply = await post(printed.stdout);
      expect(header(reply.body).response?.code, JSON.stringify(reply.body).slice(0, 800)).toBe("ok");
    }
  });

  it("--pharmacy must be one the order was sent to: exit 2, naming those it was sent to", async () => {
    const { sandbox } = await pharmacySandbox();
    const order = await createOrder(sandbox, {});
    const wrong = await example(
      ["receive-allocation", "--order", order, "--pharmacy", "PH-NOPE", "--url", sandbox.url],
      {
        ADMIN_TOKEN: "admin-secret",
      },
    );
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain(`order ${order} was not sent to pharmacy PH-NOPE; it was sent to PH-TEST-0042`);
  });
});
