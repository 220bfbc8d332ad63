import type { AllergyIntolerance, Bundle } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp, type SandboxApp, type SandboxDeps } from "../../src/app.js";
import { example, messageBundle, post, STANDARD } from "../support/messages.js";
import { admin, listCalls } from "./admin-client.js";

// GET /__admin/calls/{id} explains the decision: the rule that answered, or for every rule of the operation that
// did not, the first condition that failed and what the message had instead.

const quiet: Partial<SandboxDeps> = { logger: { info: () => undefined, error: () => undefined } };
const EID = "urn:ae:emirates-id";
const allergy = () =>
  ({
    ...example<AllergyIntolerance>("allergyintolerance-example.json"),
    patient: { identifier: { system: EID, value: "784-1990-1234567-6" } },
  }) as AllergyIntolerance;
const addAllergy = () => messageBundle("add-allergy", [allergy()]);

function sandbox(rules: string, options: Parameters<typeof createApp>[0] = {}): SandboxApp {
  const s = createApp({ watch: false, ...options }, quiet);
  const added = s.scenarios.add(rules);
  if (!added.ok) throw new Error(JSON.stringify(added.problems));
  return s;
}

async function explained(s: SandboxApp, bundle: Bundle | string, headers: Record<string, string> = {}) {
  const reply = await post(s.app, bundle, { headers });
  const id = reply.headers.get("x-sandbox-call-id");
  const call = await admin(s.app, "GET", `/calls/${id}`);
  expect(call.status).toBe(200);
  return { reply, explanation: call.body.explanation };
}

describe("GET /__admin/calls/{id} explains why a rule did or did not answer", () => {
  it("a header that differed: the rule, the header and the value it had", async () => {
    const s = sandbox(`
rules:
  - name: allergy-service-down
    when: { operation: add-allergy, headers: { X-Sandbox-Scenario: allergy-down } }
    respond: { status: 503, outcome: { diagnostics: down } }
`);
    const { reply, explanation } = await explained(s, addAllergy(), { "X-Sandbox-Scenario": "allergy-dwn" });

    expect(reply.status).toBe(200);
    expect(explanation).toEqual({
      summary: "No rule answered; the built-in behaviour did.",
      answeredBy: null,
      rules: [
        {
          rule: "allergy-service-down",
          id: "runtime-1#1",
          source: "runtime-1",
          line: 3,
          outcome: "not-matched",
          failed: 'header X-Sandbox-Scenario was "allergy-dwn", expected "allergy-down"',
        },
      ],
      otherOperations: 0,
    });
    s.close();
  });

  it("a FHIRPath that found nothing, and one that was false, are told apart", async () => {
    const s = sandbox(`
rules:
  - name: only-for-amina
    when:
      operation: add-allergy
      fhirpath: "Bundle.entry.resource.ofType(Patient).name.where(given = 'Amina')"
    respond: { builtIn: true }
  - name: only-low-criticality
    when:
      operation: add-allergy
      fhirpath: "Bundle.entry.resource.ofType(AllergyIntolerance).criticality = 'low'"
    respond: { builtIn: true }
`);
    // The message has no Patient entry (the allergy names its patient by identifier), and criticality high.
    const { explanation } = await explained(s, addAllergy());

    expect(explanation.rules.map((r: { failed: string }) => r.failed)).toEqual([
      `fhirpath "Bundle.entry.resource.ofType(Patient).name.where(given = 'Amina')" found nothing in the request Bundle (an empty result counts as false)`,
      `fhirpath "Bundle.entry.resource.ofType(AllergyIntolerance).criticality = 'low'" is false for the request Bundle`,
    ]);
    s.close();
  });

  it("times used up: the rule matched, but let the built-in behaviour answer", async () => {
    const s = sandbox(`
rules:
  - name: once
    when: { operation: add-allergy }
    times: 1
    respond: { status: 503, outcome: { diagnostics: down } }
`);
    const first = await explained(s, addAllergy());
    expect(first.reply.status).toBe(503);
    expect(first.explanation).toMatchObject({
      summary: 'Rule "once" (runtime-1, line 3) answered.',
      answeredBy: "once",
      rules: [{ rule: "once", outcome: "answered" }],
    });

    const second = await explained(s, addAllergy());
    expect(second.reply.status).toBe(200);
    expect(second.explanation.answeredBy).toBeNull();
    expect(second.explanation.rules).toEqual([
      expect.objectContaining({
        rule: "once",
        outcome: "used-up",
        note: expect.stringMatching(/times: 1 were used up \(it had answered 1 times\)/),
      }),
    ]);
    s.close();
  });

  it("a sequence used up with fall-through is told as such", async () => {
    const s = sandbox(`
rules:
  - name: two-then-through
    when: { operation: add-allergy }
    sequence: [{ status: 503, outcome: { diagnostics: a } }]
    afterSequence: fall-through
`);
    await post(s.app, addAllergy());
    const { explanation } = await explained(s, addAllergy());
    expect(explanation.rules[0]).toMatchObject({
      outcome: "used-up",
      note: expect.stringMatching(/sequence of 1 responses was used up and afterSequence is fall-through/),
    });
    s.close();
  });

  it("rules after the one that answered were not reached; rules of other operations are only counted", async () => {
    const s = sandbox(`
rules:
  - name: first
    when: { operation: add-allergy }
    respond: { status: 503, outcome: { diagnostics: a } }
  - name: for-tasks
    when: { operation: add-task }
    respond: { builtIn: true }
  - name: second-would-match
    when: { operation: add-allergy }
    respond: { builtIn: true }
  - name: second-would-not
    when: { headers: { X-Other: "yes" } }
    respond: { builtIn: true }
`);
    const { explanation } = await explained(s, addAllergy());
    expect(explanation.answeredBy).toBe("first");
    expect(explanation.rules).toEqual([
      expect.objectContaining({ rule: "first", outcome: "answered" }),
      {
        rule: "second-would-match",
        id: "runtime-1#3",
        source: "runtime-1",
        line: 9,
        outcome: "not-reached",
        note: 'not tried: rule "first" answered first',
      },
      expect.objectContaining({
        rule: "second-would-not",
        outcome: "not-reached",
        failed: 'header X-Other was absent, expected "yes"',
      }),
    ]);
    expect(explanation.otherOperations).toBe(1);
    s.close();
  });

  it("a message the sandbox refuses: rules without invalid: true did not see it, and say so", async () => {
    const s = sandbox(`
rules:
  - name: any-allergy
    when: { operation: add-allergy }
    respond: { status: 503, outcome: { diagnostics: a } }
`);
    const bad = messageBundle("add-allergy", [{ ...allergy(), criticality: "very" } as unknown as AllergyIntolerance]);
    const { reply, explanation } = await explained(s, bad);
    expect(reply.status).toBe(400);
    expect(explanation.summary).toBe(
      "No rule answered; the sandbox refused the message (400): only rules with invalid: true see a message it refuses.",
    );
    expect(explanation.rules).toEqual([
      expect.objectContaining({
        rule: "any-allergy",
        outcome: "not-matched",
        failed: "the message was invalid, expected a valid one",
      }),
    ]);
    s.close();
  });

  it("is explained against the rules as they were: removing them afterwards changes nothing", async () => {
    const s = sandbox(`
rules:
  - name: gone-later
    when: { operation: add-allergy, patient: "${EID}|784-1900-0000422-7" }
    respond: { builtIn: true }
`);
    const reply = await post(s.app, addAllergy());
    expect((await admin(s.app, "DELETE", "/scenarios")).body).toEqual({ removed: 1 });
    s.scenarios.add("rules:\n  - name: added-later\n    respond: { builtIn: true }\n");

    const call = await admin(s.app, "GET", `/calls/${reply.headers.get("x-sandbox-call-id")}`);
    expect(call.body.explanation.rules).toEqual([
      expect.objectContaining({
        rule: "gone-later",
        failed: `patient was ${EID}|784-1990-1234567-6, expected ${EID}|784-1900-0000422-7`,
      }),
    ]);
    s.close();
  });

  it("a path condition is read without --base-path, as rules see it", async () => {
    const s = sandbox(
      `
rules:
  - name: on-the-alternate-path
    when: { path: /fhir/$process-message }
    respond: { builtIn: true }
`,
      { basePath: "/sandbox" },
    );
    const reply = await post(s.app, addAllergy(), { path: `/sandbox${STANDARD}` });
    const call = await admin(s.app, "GET", `/calls/${reply.headers.get("x-sandbox-call-id")}`);
    expect(call.body.explanation.rules[0].failed).toBe(`path was ${STANDARD}, expected /fhir/$process-message`);
    s.close();
  });

  it("a message that never met the rules, and a push, say why no rule was consulted", async () => {
    const s = sandbox("rules: []\n");
    const { explanation } = await explained(s, "not json");
    expect(explanation).toEqual({
      summary:
        "No scenario rule was consulted: rules meet only messages that can be read and routed, and this one was answered 400 before that (see response.body).",
    });
    s.close();

    // A push to a pharmacy (fixture with an endpoint; the receiver is a fake fetch that answers 200).
    const pushing = createApp(
      { watch: false },
      { ...quiet, fetch: (async () => new Response(null, { status: 200 })) as unknown as typeof fetch },
    );
    pushing.scenarios.add(
      "fixtures:\n  pharmacies:\n    - { licence: PH-TEST-1, endpoint: http://pharmacy.test/hook }\n",
    );
    pushing.applyFixtures(pushing.scenarios.scenarios);
    expect((await admin(pushing.app, "POST", "/orders", { body: {} })).status).toBe(201);
    const waited = await admin(pushing.app, "POST", "/calls/wait", {
      body: { direction: "outbound", operation: "order-fulfillment-request", timeoutMs: 5000 },
    });
    const push = await admin(pushing.app, "GET", `/calls/${waited.body.callIds[0]}`);
    expect(push.body.explanation).toEqual({
      summary: "A message the sandbox sent to a pharmacy: scenario rules answer inbound messages only.",
    });
    pushing.close();
  });

  it("the call list and the journal file carry no explanation or trace (only GET /calls/{id} explains)", async () => {
    const s = sandbox("rules:\n  - name: r\n    respond: { builtIn: true }\n");
    await post(s.app, addAllergy());
    const [listed] = await listCalls(s.app);
    expect(listed).not.toHaveProperty("trace");
    expect(listed).not.toHaveProperty("explanation");
    s.close();
  });
});
