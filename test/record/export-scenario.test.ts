import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllergyIntolerance, Bundle, MessageHeader, Patient, Resource, Task } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { createApp } from "../../src/app.js";
import { runCli } from "../../src/cli/main.js";
import { ScenarioExporter } from "../../src/record/export-scenario.js";
import type { RecordedCall } from "../../src/record/read-journal.js";
import { loadScenarioText } from "../../src/scenarios/load.js";
import { admin } from "../admin/admin-client.js";
import { example, messageBundle, post, responseHeader, STANDARD } from "../support/messages.js";

const EID = "urn:ae:emirates-id";
const PATIENT_KEY = `${EID}|784-1990-1234567-6`;
const AT = new Date("2026-01-31T10:00:00Z");

/** A recorded inbound call of `bundle` answered with `response` (null: no answer). */
function inbound(
  id: number,
  bundle: Bundle,
  response: { status: number; body: unknown; headers?: Record<string, string> } | null,
  extra: Partial<RecordedCall> = {},
): RecordedCall {
  const header = bundle.entry?.[0]?.resource as MessageHeader;
  return {
    id: String(id),
    direction: "inbound",
    at: AT.toISOString(),
    operation: header.eventCoding?.code ?? null,
    messageId: header.id ?? null,
    request: {
      method: "POST",
      url: `http://localhost${STANDARD}`,
      path: STANDARD,
      headers: { "content-type": "application/json" },
      body: { content: JSON.stringify(bundle) },
    },
    response: response && {
      status: response.status,
      headers: response.headers ?? { "content-type": "application/fhir+json; charset=utf-8" },
      body: response.body,
    },
    ...extra,
  };
}

/** An answer Bundle carrying resources with these ids. */
const answerWith = (...ids: string[]) => ({
  resourceType: "Bundle",
  id: "answer",
  type: "message",
  entry: ids.map((id) => ({ resource: { resourceType: "Task", id } })),
});

const task = (id: string): Task => ({
  resourceType: "Task",
  id,
  status: "in-progress",
  intent: "order",
  for: { identifier: { system: EID, value: "784-1990-1234567-6" } },
});

const uuid = () => crypto.randomUUID();

describe("ScenarioExporter: what a rule matches", () => {
  const SERVED = "3f1f9c1e-2a4b-4c5d-8e6f-7a8b9c0d1e2f";
  it.each<[string, string, RecordedCall[], boolean]>([
    ["an id the client chose", "task-42", [], true],
    ["a UUID no answer carried (generated fresh per message)", uuid(), [], false],
    [
      "a UUID an earlier answer carried",
      SERVED,
      [inbound(1, messageBundle("add-task", [task(uuid())]), { status: 200, body: answerWith(SERVED) })],
      true,
    ],
    [
      "a UUID an earlier push carried",
      SERVED,
      [
        {
          ...inbound(1, messageBundle("order-fulfillment-request", [task(SERVED)]), { status: 200, body: null }),
          direction: "outbound",
        },
      ],
      true,
    ],
  ])("matches the focus id when it is %s", (_name, id, before, matched) => {
    const exporter = new ScenarioExporter();
    for (const call of before) exporter.add(call);
    exporter.add(inbound(9, messageBundle("update-task", [task(id)]), { status: 200, body: answerWith(id) }));
    const rule = exporter.rules().find((r) => r.when?.operation === "update-task");
    expect(rule?.when?.patient).toBe(PATIENT_KEY);
    expect(rule?.when?.fhirpath).toEqual(
      matched ? `Bundle.entry.resource.ofType(Task).where(id = '${id}').exists()` : undefined,
    );
  });

  it("matches the sender pharmacy of drug-order messages by its licence", () => {
    const exporter = new ScenarioExporter();
    const org = { resourceType: "Organization", id: "org-1", identifier: [{ value: "PH-DXB-0001" }] } as Resource;
    const bundle = messageBundle("confirm-drugs-availability", [task("fulfil-1"), org], {
      focus: [0],
      header: { sender: { reference: "Organization/org-1" } },
    });
    exporter.add(inbound(1, bundle, { status: 200, body: answerWith("fulfil-1") }));
    expect(exporter.rules()[0]?.when?.fhirpath).toEqual([
      "Bundle.entry.resource.ofType(Task).where(id = 'fulfil-1').exists()",
      "Bundle.entry.resource.ofType(Organization).where(identifier.value = 'PH-DXB-0001').exists()",
    ]);
  });

  it("groups calls with the same key content into a sequence in recorded order; more specific rules first", () => {
    const exporter = new ScenarioExporter();
    const patient = { resourceType: "Patient", identifier: [{ system: EID, value: "784-1990-1234567-6" }] } as Patient;
    exporter.add(inbound(1, messageBundle("view-patient-profile", [patient]), { status: 200, body: answerWith("a") }));
    exporter.add(inbound(2, messageBundle("update-task", [task("t-1")]), { status: 200, body: answerWith("t-1") }));
    exporter.add(inbound(3, messageBundle("view-patient-profile", [patient]), { status: 200, body: answerWith("b") }));
    exporter.add(inbound(4, messageBundle("update-task", [task("t-1")]), { status: 200, body: answerWith("t-1") }));
    const [first, second] = exporter.rules();
    // update-task names the task as well as the patient: it goes first.
    expect(first).toMatchObject({ name: "recorded update-task 1", description: "recorded calls 2, 4" });
    expect(first?.respond?.body).toMatchObject({ entry: [{ resource: { id: "t-1" } }] });
    expect(first?.sequence).toBeUndefined();
    expect(second).toMatchObject({ name: "recorded view-patient-profile 1", afterSequence: "repeat-last" });
    expect(second?.sequence?.map((r) => (r.body as ReturnType<typeof answerWith>).entry[0]?.resource.id)).toEqual([
      "a",
      "b",
    ]);
  });
});

describe("ScenarioExporter: what a rule answers", () => {
  const bundle = () => messageBundle("update-task", [task("t-1")]);

  it.each<[string, RecordedCall, unknown]>([
    ["a connection reset", inbound(1, bundle(), null, { fault: "connection-reset" }), { fault: "connection-reset" }],
    ["an empty body", inbound(1, bundle(), { status: 204, body: null }), { status: 204, fault: "empty-body" }],
    [
      "a content type other than FHIR JSON",
      inbound(1, bundle(), {
        status: 503,
        body: { error: "busy" },
        headers: { "content-type": "application/json", date: "x" },
      }),
      { status: 503, headers: { "content-type": "application/json" }, body: { error: "busy" } },
    ],
    [
      // A live journal's answers carry the sandbox's own stamps: copied, each answer of a sequence would differ.
      "the sandbox's own X-Sandbox-* headers left out, a rule's own header kept",
      inbound(1, bundle(), {
        status: 200,
        body: { resourceType: "Bundle" },
        headers: {
          "content-type": "application/fhir+json; charset=utf-8",
          "x-sandbox-call-id": "17",
          "x-sandbox-rule": "UTF-8''%D8%AD",
          "x-sandbox-duplicate": "true",
          "x-team-note": "kept",
        },
      }),
      { status: 200, headers: { "x-team-note": "kept" }, body: { resourceType: "Bundle" } },
    ],
  ])("%s", (_name, call, expected) => {
    const exporter = new ScenarioExporter();
    exporter.add(call);
    expect(exporter.rules()[0]?.respond).toEqual({
      description: `recorded call 1 at ${AT.toISOString()}`,
      ...(expected as object),
    });
  });

  it.each<[string, RecordedCall, string]>([
    ["no operation", inbound(1, bundle(), { status: 400, body: {} }, { operation: null }), "no operation"],
    [
      "no readable message",
      {
        ...inbound(1, bundle(), { status: 400, body: {} }),
        request: { ...inbound(1, bundle(), null).request, body: "x" },
      },
      "no readable message Bundle",
    ],
    ["an answer that is not JSON", inbound(1, bundle(), { status: 502, body: "<html>Bad gateway</html>" }), "not JSON"],
    [
      'an answer holding "{{"',
      inbound(1, bundle(), { status: 200, body: { resourceType: "Basic", text: "{{ not a template }}" } }),
      "template",
    ],
  ])("leaves out a call with %s, saying why in the file", (_name, call, reason) => {
    const exporter = new ScenarioExporter();
    exporter.add(call);
    expect(exporter.rules()).toEqual([]);
    expect(exporter.skipped).toEqual([{ id: "1", reason: expect.stringContaining(reason) }]);
    const text = exporter.toYaml({ from: "calls.ndjson", at: AT });
    expect(text).toContain("# Not exported (1):");
    expect(text).toMatch(new RegExp(`#   call 1: .*${reason}`));
    expect(loadScenarioText(text, "recorded.yaml").ok).toBe(true);
  });
});

describe("an exported rule, served", () => {
  const NOW = new Date("2030-05-06T07:08:09.000Z");
  const allergy = () =>
    ({
      ...example<AllergyIntolerance>("allergyintolerance-example.json"),
      id: "client-allergy",
      patient: { identifier: { system: EID, value: "784-1990-1234567-6" } },
    }) as AllergyIntolerance;

  it.each([
    ["a response message", false],
    ["a response message in a response envelope", true],
  ])("answers %s correlated with the new request, stamped now", async (_name, wrapped) => {
    // Record an answer from a sandbox, export it, serve it from another one with a fixed clock.
    const recorder = createApp({ responseEnvelope: wrapped });
    await post(recorder.app, messageBundle("add-allergy", [allergy()], { source: "https://a.example/fhir" }));
    const yaml = await admin(recorder.app, "GET", "/calls/export?format=scenario");
    expect(yaml.status).toBe(200);
    expect(yaml.headers.get("content-type")).toMatch(/^application\/yaml/);

    // Served elsewhere (another base path): the answer names the sandbox that sends it, not the recorded one.
    const served = createApp({ basePath: "/replayed" }, { now: () => NOW });
    expect(served.scenarios.add(yaml.body as string).ok).toBe(true);
    const request = messageBundle("add-allergy", [allergy()], { source: "https://b.example/fhir" });
    const reply = await post(served.app, request, { path: `/replayed${STANDARD}` });
    expect(reply.status).toBe(200);
    const body = wrapped ? JSON.parse(reply.body.content) : reply.body;
    const recorded = (recorder.journal.list()[0]?.response?.body ?? "") as string;
    const recordedBody = wrapped ? JSON.parse(JSON.parse(recorded).content) : JSON.parse(recorded);
    const header = responseHeader(body);
    expect(header.response?.identifier).toBe(request.entry?.[0]?.resource?.id);
    expect(header.destination).toEqual([{ endpoint: "https://b.example/fhir" }]);
    expect(responseHeader(recordedBody).source?.endpoint).toBe(`http://localhost${STANDARD}`);
    expect(header.source?.endpoint).toBe(`http://localhost/replayed${STANDARD}`);
    // The header's fullUrl names its id (R4 Bundle rules), as in the recorded answer.
    expect(body.entry[0].fullUrl).toBe(`urn:uuid:${header.id}`);
    expect(body.timestamp).toBe(NOW.toISOString());
    expect(body.entry[1].resource.meta.lastUpdated).toBe(NOW.toISOString());
    expect(body.id).not.toBe(recordedBody.id);
    expect(header.id).not.toBe(responseHeader(recordedBody).id);
    // What the recording said about the allergy is kept as it was, the server's id included.
    expect(body.entry[1].resource).toEqual({ ...recordedBody.entry[1].resource, meta: body.entry[1].resource.meta });
    expect(served.journal.list()[0]?.rule).toBe("recorded add-allergy 1");
  });

  it("the admin export refuses an unknown format", async () => {
    const reply = await admin(createApp().app, "GET", "/calls/export?format=xml");
    expect(reply.status).toBe(400);
    expect(reply.body.issue[0].diagnostics).toContain("ndjson (default) or scenario");
  });

  it("an empty journal exports a file with no rules that still loads", async () => {
    const reply = await admin(createApp().app, "GET", "/calls/export?format=scenario");
    expect(parse(reply.body as string)).toMatchObject({ name: "recorded", rules: [] });
    expect(loadScenarioText(reply.body as string, "recorded.yaml").ok).toBe(true);
  });
});

describe("uae-fhir-sandbox export", () => {
  async function exportCli(args: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(["export", ...args], { out: (l) => out.push(l), err: (l) => err.push(l), env: {} });
    return { code, stdout: out.join("\n"), stderr: err.join("\n") };
  }

  it.each([
    ["no journal", [], "export needs the recorded calls"],
    ["a missing journal", ["--from", "/no/such/calls.ndjson"], "no such file"],
    ["the journal as the output", ["--from", "JOURNAL", "--to", "JOURNAL"], "is the journal itself"],
    ["an unknown option", ["--from", "JOURNAL", "--fast"], "unknown option --fast"],
  ])("exits 2 on %s", async (_name, args, message) => {
    const dir = mkdtempSync(join(tmpdir(), "export-cli-"));
    try {
      const journal = join(dir, "calls.ndjson");
      writeFileSync(journal, "");
      const result = await exportCli(args.map((a) => (a === "JOURNAL" ? journal : a)));
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(message);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("prints the scenario when no --to is given, keeping the summary on stderr", async () => {
    const dir = mkdtempSync(join(tmpdir(), "export-cli-"));
    try {
      const journal = join(dir, "calls.ndjson");
      const call = inbound(1, messageBundle("update-task", [task("t-1")]), { status: 200, body: answerWith("t-1") });
      writeFileSync(journal, `${JSON.stringify(call)}\n`);
      const result = await exportCli([journal, "--operation", "update-task"]);
      expect(result.code, result.stderr).toBe(0);
      expect(parse(result.stdout).rules.map((r: { name: string }) => r.name)).toEqual(["recorded update-task 1"]);
      expect(result.stderr).toContain("1 rule from 1 of 1 inbound call; 0 not exported");
      // Nothing to export is a failure, not an empty scenario (issue 21).
      const none = await exportCli([journal, "--operation", "add-task"]);
      expect(none.code).toBe(1);
      expect(none.stdout).toBe("");
      expect(none.stderr).toContain(`${journal} holds no inbound calls of add-task`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
