import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllergyIntolerance, Bundle, Observation, OperationOutcome, Patient, Task } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type SandboxApp, type SandboxDeps } from "../../src/app.js";
import { envelope, focusOf, messageBundle, post, responseHeader } from "../support/messages.js";

const EID = "urn:ae:emirates-id";
const NOW = "2026-03-01T08:30:00.000Z";
const quiet: Partial<SandboxDeps> = { logger: { info: () => undefined, error: () => undefined } };

const dirs: string[] = [];
const open: SandboxApp[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function scenarioDir(yaml: string): string {
  const dir = mkdtempSync(join(tmpdir(), "templates-test-"));
  dirs.push(dir);
  writeFileSync(join(dir, "templates.yaml"), yaml);
  return dir;
}

/** A sandbox with a fixed clock and recognisable ids, serving one scenario file. */
function sandbox(yaml: string) {
  let n = 0;
  const sandbox = createApp(
    { scenarios: scenarioDir(yaml) },
    {
      ...quiet,
      now: () => new Date(NOW),
      newId: () => `00000000-0000-4000-8000-${String(++n).padStart(12, "0")}`,
    },
  );
  open.push(sandbox);
  return sandbox;
}

const weighing = (kg: number, id: string) =>
  messageBundle(
    "add-measurement",
    [
      {
        resourceType: "Observation",
        status: "final",
        code: { coding: [{ system: "http://loinc.org", code: "29463-7", display: "Body weight" }] },
        subject: { identifier: { system: EID, value: "784-1980-1111111-3" } },
        valueQuantity: { value: kg, unit: "kg", system: "http://unitsofmeasure.org", code: "kg" },
      } as Observation,
    ],
    { id },
  );

const ECHO = `
rules:
  - name: echo
    respond:
      status: 200
      body:
        messageId: "{{ request.messageId }}"
        event: "{{ request.event }}"
        operation: "{{ request.operation }}"
        path: "{{ request.path }}"
        headerLower: "{{ request.headers.x-echo }}"
        headerMixed: "{{ request.headers.X-Echo }}"
        missingHeader: "{{ request.headers.x-not-sent }}"
        patient: "{{ patient.key }}"
        rule: "{{ rule.name }}"
        hit: "{{ rule.hit }}"
        hitText: "hit #{{rule.hit}}"
        id: "{{ uuid() }}"
        otherId: "{{ uuid() }}"
        now: "{{ now() }}"
        entries: "{{ fhirpath('Bundle.entry.count()') }}"
        weight: "{{ fhirpath('Bundle.entry.resource.ofType(Observation).valueQuantity.value') }}"
        quantity: "{{ fhirpath('Bundle.entry.resource.ofType(Observation).valueQuantity') }}"
        nothing: "{{ fhirpath('Bundle.entry.resource.ofType(Task).id') }}"
        sentence: "Weight {{ fhirpath('Bundle.entry.resource.ofType(Observation).valueQuantity.value') }} kg for {{ patient.key }}{{ fhirpath('Bundle.entry.resource.ofType(Task).id') }}."
        name: "{{ faker('person.fullName') }}"
        plain: "no templates here"
        number: 7
        list: ["{{ request.event }}", 1]
`;

describe("response templates (CONTRACT §7)", () => {
  it("fills request, patient, rule, uuid(), now(), fhirpath() and faker() values", async () => {
    const { app } = sandbox(ECHO);
    const reply = await post(app, weighing(82.5, "msg-echo-1"), { headers: { "X-Echo": "echoed" } });
    expect(reply.status).toBe(200);
    const body = reply.body;
    expect(body).toMatchObject({
      messageId: "msg-echo-1",
      event: "add-measurement",
      operation: "add-measurement",
      path: "/uae-fhir/r4/$process-message",
      headerLower: "echoed",
      headerMixed: "echoed",
      missingHeader: null,
      patient: `${EID}|784-1980-1111111-3`,
      rule: "echo",
      hit: 1,
      hitText: "hit #1",
      now: NOW,
      entries: 2,
      weight: 82.5,
      quantity: { value: 82.5, unit: "kg", system: "http://unitsofmeasure.org", code: "kg" },
      nothing: null,
      sentence: `Weight 82.5 kg for ${EID}|784-1980-1111111-3.`,
      plain: "no templates here",
      number: 7,
      list: ["add-measurement", 1],
    });
    expect(body.id).toMatch(/^00000000-0000-4000-8000-\d{12}$/);
    expect(body.otherId).toMatch(/^00000000-0000-4000-8000-\d{12}$/);
    expect(body.otherId).not.toBe(body.id);
    expect(typeof body.name).toBe("string");
    expect(body.name).toMatch(/^\S.*\s.*\S$/);
  });

  it("renders afresh for every answer: rule.hit counts, the request values change", async () => {
    const { app } = sandbox(ECHO);
    const first = await post(app, weighing(60, "msg-a"));
    const second = await post(app, weighing(61, "msg-b"));
    expect([first.body.hit, first.body.messageId, first.body.weight]).toEqual([1, "msg-a", 60]);
    expect([second.body.hit, second.body.messageId, second.body.weight]).toEqual([2, "msg-b", 61]);
    expect(second.body.id).not.toBe(first.body.id);
  });

  it("fills templates in outcomes, resources and headers too", async () => {
    const { app } = sandbox(`
rules:
  - name: templated-outcome
    when: { operation: add-measurement }
    respond:
      headers: { X-Rule: "{{ rule.name }}-{{ rule.hit }}", X-Message: "{{ request.messageId }}" }
      outcome:
        diagnostics: "{{ fhirpath('Bundle.entry.resource.ofType(Observation).valueQuantity.value') }} kg refused for {{ patient.key }}"
  - name: templated-resources
    when: { operation: view-patient-profile }
    respond:
      resources:
        - resourceType: Task
          id: "{{ uuid() }}"
          status: ready
          intent: order
          description: "For {{ patient.key }}"
          authoredOn: "{{ now() }}"
`);
    const refused = await post(app, weighing(450, "msg-outcome"));
    expect(refused.headers.get("x-rule")).toBe("templated-outcome-1");
    expect(refused.headers.get("x-message")).toBe("msg-outcome");
    const bundle = refused.body as Bundle;
    const outcome = bundle.entry?.find((e) => e.resource?.resourceType === "OperationOutcome")
      ?.resource as OperationOutcome;
    expect(outcome.issue[0]?.diagnostics).toBe(`450 kg refused for ${EID}|784-1980-1111111-3`);

    const listed = await post(
      app,
      messageBundle("view-patient-profile", [
        { resourceType: "Patient", identifier: [{ system: EID, value: "784-1970-5555555-7" }] } as Patient,
      ]),
    );
    expect(responseHeader(listed.body as Bundle).response?.code).toBe("ok");
    const [task] = focusOf(listed.body as Bundle) as Task[];
    expect(task).toMatchObject({ description: `For ${EID}|784-1970-5555555-7`, authoredOn: NOW });
    expect(task?.id).toMatch(/^00000000-0000-4000-8000-\d{12}$/);
  });

  it("patient.key is null when the message names no patient key", async () => {
    const { app } = sandbox(`
rules:
  - respond: { body: { patient: "{{ patient.key }}", text: "[{{ patient.key }}]" } }
`);
    const reply = await post(
      app,
      messageBundle("add-allergy", [
        {
          resourceType: "AllergyIntolerance",
          clinicalStatus: {
            coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", code: "active" }],
          },
          code: { text: "Cashew" },
          patient: { display: "a patient without a key" },
        } as AllergyIntolerance,
      ]),
    );
    expect(reply.body).toEqual({ patient: null, text: "[]" });
  });
});

describe("templates that name the answer itself", () => {
  it("request.url is the URL the message was sent to; uuid('<name>') is one id per name and answer", async () => {
    const { app } = sandbox(`
rules:
  - name: self
    respond:
      body:
        url: "{{ request.url }}"
        fullUrl: "urn:uuid:{{ uuid('header') }}"
        id: "{{ uuid('header') }}"
        other: "{{ uuid('other') }}"
        fresh: "{{ uuid() }}"
`);
    // An absolute URL: what request.url gives is the URL the client used, host included.
    const reply = await app.request("http://sandbox.test/uae-fhir/r4/$process-message", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: envelope(weighing(70, "msg-self-1")),
    });
    const body = (await reply.json()) as Record<string, string>;
    expect(body.url).toBe("http://sandbox.test/uae-fhir/r4/$process-message");
    expect(body.fullUrl).toBe(`urn:uuid:${body.id}`);
    expect(new Set([body.id, body.other, body.fresh]).size).toBe(3);
    const next = (await post(app, weighing(71, "msg-self-2"))).body;
    // A new answer, new ids: the name holds within one answer only.
    expect(next.id).not.toBe(body.id);
    expect(next.fullUrl).toBe(`urn:uuid:${next.id}`);
  });
});

describe("templates are checked when the file loads (CONTRACT §7)", () => {
  const BAD: Array<[string, string, RegExp]> = [
    ["an unknown function", "{{ shout() }}", /unknown function shout\(\)/],
    ["an unknown value root", "{{ message.id }}", /unknown value "message\.id"/],
    ["something not an expression", "{{ 1 + 1 }}", /is not a template expression/],
    [
      "an invalid FHIRPath inside fhirpath()",
      "{{ fhirpath('Bundle.entry[') }}",
      /fhirpath\('…'\) needs a valid FHIRPath/,
    ],
    ["fhirpath() without an expression", "{{ fhirpath() }}", /fhirpath\('…'\) needs a valid FHIRPath/],
    [
      "an unknown faker generator",
      "{{ faker('person.noSuchThing') }}",
      /faker\('person\.noSuchThing'\) is not a faker generator/,
    ],
    ["a faker module outside the list", "{{ faker('helpers.arrayElement') }}", /is not a faker generator/],
    ["a faker path too deep", "{{ faker('person.fullName.length') }}", /is not a faker generator/],
    // A misspelt value rendered as an empty string before: now refused, naming the one meant.
    [
      "a value in the wrong case",
      "{{ request.messageid }}",
      /unknown value "request\.messageid"; did you mean "request\.messageId"\?/,
    ],
    ["a misspelt value", "{{ request.opration }}", /did you mean "request\.operation"\?/],
    ["a value the request model does not have", "{{ request.bundle }}", /unknown value "request\.bundle"\. Known/],
    ["a step under a leaf value", "{{ rule.name.first }}", /unknown value "rule\.name\.first"/],
    [
      "a header without a name",
      "{{ request.headers }}",
      /unknown value "request\.headers"\. Known values: .*request\.headers\.<name>/,
    ],
  ];

  it.each(BAD)("rejects %s with file:line:column", (_kind, template, message) => {
    const yaml = [
      "name: bad templates",
      "rules:",
      "  - name: fine",
      "    respond: { builtIn: true }",
      "  - name: broken",
      "    respond:",
      "      status: 200",
      "      body:",
      "        fine: ok",
      `        broken: "${template}"`,
      "",
    ].join("\n");
    const dir = scenarioDir(yaml);
    let error: unknown;
    try {
      createApp({ scenarios: dir }, quiet);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(Error);
    const text = (error as Error).message;
    // Line 10, column 17: the templated string itself.
    expect(text).toMatch(/templates\.yaml:10:17: rules\.1\.respond\.body\.broken: /);
    expect(text).toMatch(message);
  });

  it("locates a bad template in a sequence item, an outcome and a header", () => {
    const yaml = [
      "rules:",
      "  - sequence:",
      "      - builtIn: true",
      "      - outcome: { diagnostics: 'Refused {{ nope() }}' }",
      "  - respond:",
      "      headers: { X-A: '{{ rule.nope.deeper }}', X-B: '{{ uuid(1) }}' }",
      "      builtIn: true",
      "",
    ].join("\n");
    expect(() => createApp({ scenarios: scenarioDir(yaml) }, quiet)).toThrow(
      /templates\.yaml:4:33: rules\.0\.sequence\.1\.outcome\.diagnostics: .*unknown function nope\(\)[\s\S]*templates\.yaml:6:54: rules\.1\.respond\.headers\.X-B: .*uuid\(1\)/,
    );
  });
});
