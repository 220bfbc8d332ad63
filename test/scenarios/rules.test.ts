import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type {
  AllergyIntolerance,
  Bundle,
  Observation,
  OperationOutcome,
  Patient,
  Reference,
  Resource,
  Task,
} from "fhir/r4.js";
import type { Hono } from "hono";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp, type SandboxApp, type SandboxDeps } from "../../src/app.js";
import type { SandboxOptions } from "../../src/config/options.js";
import { admin, listCalls } from "../admin/admin-client.js";
import { OPERATION_CASES } from "../routing/operation-messages.js";
import { ALTERNATE, example, focusOf, messageBundle, post, type Reply, responseHeader } from "../support/messages.js";

const EID = "urn:ae:emirates-id";
const SHIPPED = fileURLToPath(new URL("../../scenarios/", import.meta.url));
const FIXTURES = fileURLToPath(new URL("../fixtures/scenarios/rules/", import.meta.url));
const quiet: Partial<SandboxDeps> = { logger: { info: () => undefined, error: () => undefined } };

const dirs: string[] = [];
const open: SandboxApp[] = [];
afterEach(() => {
  vi.useRealTimers();
  for (const s of open.splice(0)) s.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** createApp, closed after the test. */
function start(options: Partial<SandboxOptions>, deps: Partial<SandboxDeps> = {}): SandboxApp {
  const sandbox = createApp(options, { ...quiet, ...deps });
  open.push(sandbox);
  return sandbox;
}

/** A sandbox serving one scenario file with this YAML. */
function sandbox(yaml: string, options: Partial<SandboxOptions> = {}, deps: Partial<SandboxDeps> = {}) {
  const dir = mkdtempSync(join(tmpdir(), "rules-test-"));
  dirs.push(dir);
  writeFileSync(join(dir, "rules.yaml"), yaml);
  return start({ scenarios: dir, ...options }, deps);
}

// --- messages -------------------------------------------------------------

const byEid = (value: string): Reference => ({ identifier: { system: EID, value } });
const patient = (value: string): Patient => ({ resourceType: "Patient", identifier: [{ system: EID, value }] });
const allergy = (subject: Reference): AllergyIntolerance => ({
  ...example<AllergyIntolerance>("allergyintolerance-example.json"),
  patient: subject,
});
const weight = (kg: number, subject: Reference = byEid("784-1980-1111111-3")): Observation => ({
  resourceType: "Observation",
  status: "final",
  code: { coding: [{ system: "http://loinc.org", code: "29463-7", display: "Body weight" }] },
  subject,
  effectiveDateTime: "2026-01-10T09:00:00+04:00",
  valueQuantity: { value: kg, unit: "kg", system: "http://unitsofmeasure.org", code: "kg" },
});
const bloodPressure = (): Observation => ({
  ...example<Observation>("observation-example-bloodpressure.json"),
  subject: byEid("784-1980-1111111-3"),
});

interface Send {
  label: string;
  bundle(): Bundle;
  path?: string;
  headers?: Record<string, string>;
}
const send = (app: Hono, s: Send, id?: string) => {
  const bundle = s.bundle();
  if (id !== undefined) (bundle.entry?.[0]?.resource as { id: string }).id = id;
  return post(app, bundle, { ...(s.path ? { path: s.path } : {}), ...(s.headers ? { headers: s.headers } : {}) });
};
/** The same message on every send: resends of it are exact resends (CONTRACT §5). */
const once = (s: Send): Send => {
  const bundle = s.bundle();
  return { ...s, bundle: () => structuredClone(bundle) };
};
const viewProfile = (value = "784-1980-1111111-3"): Send => ({
  label: `view-patient-profile of ${value}`,
  bundle: () => messageBundle("view-patient-profile", [patient(value)]),
});
const addAllergy = (subject: Reference = byEid("784-1980-1111111-3"), headers?: Record<string, string>): Send => ({
  label: `add-allergy for ${JSON.stringify(subject)}${headers ? ` with ${JSON.stringify(headers)}` : ""}`,
  bundle: () => messageBundle("add-allergy", [allergy(subject)]),
  ...(headers ? { headers } : {}),
});
const withHeaders = (headers: Record<string, string>): Send => addAllergy(undefined, headers);
const addWeight = (kg: number): Send => ({
  label: `add-measurement of ${kg} kg`,
  bundle: () => messageBundle("add-measurement", [weight(kg)]),
});
const addBloodPressure: Send = {
  label: "add-measurement of a blood-pressure panel (component values only)",
  bundle: () => messageBundle("add-measurement", [bloodPressure()]),
};
const removeAllergy = (id: string, path = ALTERNATE, patient = "Patient/example"): Send => ({
  label: `remove-allergy ${id} on ${path}`,
  // Valid R4: patient is required, and a record marked entered-in-error has no clinicalStatus (ait-1, ait-2).
  bundle: () =>
    messageBundle("remove-allergy", [
      {
        resourceType: "AllergyIntolerance",
        id,
        verificationStatus: {
          coding: [
            {
              system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-verification",
              code: "entered-in-error",
            },
          ],
        },
        patient: { reference: patient },
      } as AllergyIntolerance,
    ]),
  path,
});

// --- answers ----------------------------------------------------------------

/** The built-in answer: a response message (never the rule's scripted 418). */
function builtIn(reply: Reply, code: "ok" | "fatal-error" = "ok") {
  expect(reply.status).toBe(200);
  expect(reply.body).toMatchObject({ resourceType: "Bundle", type: "message" });
  expect(responseHeader(reply.body as Bundle).response?.code).toBe(code);
}

const scripted = (reply: Reply) => {
  expect(reply.status).toBe(418);
  expect(reply.body).toEqual({ scripted: true });
};

/** The OperationOutcome that a response message's MessageHeader.response.details refers to. */
function details(bundle: Bundle): OperationOutcome {
  const reference = responseHeader(bundle).response?.details?.reference;
  expect(reference).toBeTruthy();
  const entry = bundle.entry?.find((e) => e.fullUrl === reference);
  expect(entry?.resource?.resourceType).toBe("OperationOutcome");
  return entry?.resource as OperationOutcome;
}

async function rulesView(app: Hono) {
  const reply = await admin(app, "GET", "/scenarios");
  expect(reply.status).toBe(200);
  return reply.body.rules as Array<{ name: string; matched: number; answered: number }>;
}

// ---------------------------------------------------------------------------

interface MatcherCase {
  kind: string;
  /** The rule's `when`, as YAML flow; undefined for a rule without one. */
  when: string | undefined;
  hit: Send[];
  miss: Send[];
}

const ONE_KG = "Bundle.entry.resource.ofType(Observation)";
const MATCHER_CASES: MatcherCase[] = [
  {
    kind: "operation (one)",
    when: "{ operation: add-allergy }",
    hit: [addAllergy()],
    miss: [viewProfile(), addWeight(70)],
  },
  {
    kind: "operation (a list)",
    when: "{ operation: [add-allergy, add-measurement] }",
    hit: [addAllergy(), addWeight(70)],
    miss: [viewProfile()],
  },
  {
    kind: "path (a rule only for /fhir/$process-message)",
    when: "{ path: /fhir/$process-message }",
    hit: [removeAllergy("any-allergy")],
    miss: [addAllergy(), viewProfile()],
  },
  {
    kind: "header with an exact value; its name in any case",
    when: "{ headers: { x-SANDBOX-case: Alpha } }",
    hit: [withHeaders({ "X-Sandbox-Case": "Alpha" }), withHeaders({ "x-sandbox-case": "Alpha" })],
    miss: [withHeaders({ "X-Sandbox-Case": "alpha" }), withHeaders({ "X-Sandbox-Case": "Alpha2" }), addAllergy()],
  },
  {
    kind: "header matching a regular expression",
    when: '{ headers: { X-Trace: { matches: "^run-\\\\d+$" } } }',
    hit: [withHeaders({ "X-Trace": "run-42" }), withHeaders({ "X-Trace": "run-7" })],
    miss: [withHeaders({ "X-Trace": "run-x" }), withHeaders({ "X-Trace": "walk-42" }), addAllergy()],
  },
  {
    kind: "header absent",
    when: "{ headers: { X-Debug: { absent: true } } }",
    hit: [addAllergy(), withHeaders({ "X-Other": "1" })],
    miss: [withHeaders({ "X-Debug": "1" }), withHeaders({ "x-debug": "" })],
  },
  {
    kind: "patient key: the Emirates ID of a Patient entry",
    when: `{ patient: "${EID}|784-1980-1111111-3" }`,
    hit: [viewProfile("784-1980-1111111-3")],
    miss: [viewProfile("784-1980-2222222-2")],
  },
  {
    kind: "patient key: AllergyIntolerance.patient as a logical identifier reference",
    when: `{ patient: "${EID}|784-1980-1111111-3" }`,
    hit: [addAllergy(byEid("784-1980-1111111-3"))],
    miss: [addAllergy(byEid("784-1980-2222222-2"))],
  },
  {
    kind: "patient key: Patient/{id}",
    when: "{ patient: pat-77 }",
    hit: [addAllergy({ reference: "Patient/pat-77" })],
    miss: [addAllergy({ reference: "Patient/pat-78" }), addAllergy(byEid("784-1980-1111111-3"))],
  },
  {
    kind: "patient key (a list)",
    when: `{ patient: [pat-77, "${EID}|784-1980-1111111-3"] }`,
    hit: [addAllergy({ reference: "Patient/pat-77" }), viewProfile("784-1980-1111111-3")],
    miss: [addAllergy({ reference: "Patient/pat-78" })],
  },
  {
    kind: "fhirpath (one, with the R4 model: value is value[x])",
    when: `{ fhirpath: "${ONE_KG}.value.exists()" }`,
    hit: [addWeight(70)],
    miss: [addBloodPressure, viewProfile()],
  },
  {
    kind: "fhirpath (a list: all must hold)",
    when: `{ fhirpath: ["${ONE_KG}.exists()", "${ONE_KG}.valueQuantity.value > 100"] }`,
    hit: [addWeight(150)],
    miss: [addWeight(70), viewProfile()],
  },
  {
    kind: "no `when`: every message",
    when: undefined,
    hit: [viewProfile(), addAllergy(), addWeight(70), removeAllergy("x")],
    miss: [],
  },
];

describe("rule matchers (CONTRACT §7)", () => {
  it.each(MATCHER_CASES)("$kind", async ({ when, hit, miss }) => {
    const { app } = sandbox(`
rules:
  - name: the-rule
${when === undefined ? "" : `    when: ${when}\n`}    respond: { status: 418, body: { scripted: true } }
`);
    for (const s of hit) {
      const reply = await send(app, s);
      expect(reply.status, `${s.label} should match`).toBe(418);
      expect(reply.body).toEqual({ scripted: true });
    }
    for (const s of miss) {
      const reply = await send(app, s);
      expect(reply.status, `${s.label} should fall through`).toBe(200);
      expect(responseHeader(reply.body as Bundle).response?.code).toBe("ok");
    }
    const calls = await listCalls(app);
    expect(calls.map((c) => c.rule)).toEqual([...hit.map(() => "the-rule"), ...miss.map(() => null)]);
  });

  it("a path rule matches without the --base-path prefix", async () => {
    const { app } = sandbox(
      "rules:\n  - when: { path: /fhir/$process-message }\n    respond: { status: 418, body: { scripted: true } }\n",
      {
        basePath: "/sandbox",
      },
    );
    scripted(await send(app, removeAllergy("x", `/sandbox${ALTERNATE}`)));
    builtIn(await send(app, { ...addAllergy(), path: "/sandbox/uae-fhir/r4/$process-message" }));
  });

  describe("combined: every condition given must hold", () => {
    const key = "784-1980-1111111-3";
    const yaml = `
rules:
  - name: combined
    when:
      operation: add-allergy
      path: /uae-fhir/r4/$process-message
      headers: { X-Sandbox-Scenario: combo, X-Debug: { absent: true } }
      patient: "${EID}|${key}"
      fhirpath: "Bundle.entry.resource.ofType(AllergyIntolerance).criticality = 'high'"
    respond: { status: 418, body: { scripted: true } }
`;
    const high = (subject: Reference) => ({ ...allergy(subject), criticality: "high" as const });
    const base: Send = {
      label: "all hold",
      bundle: () => messageBundle("add-allergy", [high(byEid(key))]),
      headers: { "X-Sandbox-Scenario": "combo" },
    };
    const broken: Array<[string, Send, "ok" | "fatal-error"]> = [
      [
        "another operation",
        { ...base, bundle: () => messageBundle("update-allergy", [{ ...high(byEid(key)), id: "unknown-id" }]) },
        "fatal-error",
      ],
      ["the header differs", { ...base, headers: { "X-Sandbox-Scenario": "combo2" } }, "ok"],
      ["a header that must be absent is sent", { ...base, headers: { ...base.headers, "X-Debug": "1" } }, "ok"],
      [
        "another patient",
        { ...base, bundle: () => messageBundle("add-allergy", [high(byEid("784-1980-2222222-2"))]) },
        "ok",
      ],
      [
        "the FHIRPath is false",
        {
          ...base,
          bundle: () =>
            messageBundle("add-allergy", [{ ...high(byEid(key)), criticality: "low" } as AllergyIntolerance]),
        },
        "ok",
      ],
    ];

    it("matches when all hold", async () => {
      const { app } = sandbox(yaml);
      scripted(await send(app, base));
    });

    it.each(broken)("falls through to the built-in answer when %s", async (_label, s, code) => {
      const { app } = sandbox(yaml);
      builtIn(await send(app, s), code);
      expect((await listCalls(app)).map((c) => c.rule)).toEqual([null]);
      expect((await rulesView(app))[0]).toMatchObject({ name: "combined", matched: 0, answered: 0 });
    });
  });
});

describe("rule responses (CONTRACT §4, §5, §7)", () => {
  const REFUSE = `
rules:
  - name: refuse
    respond:
      outcome:
        diagnostics: Refused by the test scenario.
        expression: Bundle.entry[1].resource.code
`;

  it("outcome → a fatal-error response message correlated to the request, details → the OperationOutcome", async () => {
    const { app } = sandbox(REFUSE);
    const reply = await send(app, addAllergy(), "req-fatal-1");

    expect(reply.status).toBe(200);
    expect(reply.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    const bundle = reply.body as Bundle;
    expect(bundle).toMatchObject({ resourceType: "Bundle", type: "message" });
    const header = responseHeader(bundle);
    expect(header.response).toMatchObject({ identifier: "req-fatal-1", code: "fatal-error" });
    expect(header.eventCoding?.code).toBe("add-allergy");
    expect(header.destination?.[0]?.endpoint).toBe("https://clinic.example.ae/fhir");
    expect(details(bundle).issue).toEqual([
      {
        severity: "error",
        code: "business-rule",
        diagnostics: "Refused by the test scenario.",
        expression: ["Bundle.entry[1].resource.code"],
      },
    ]);
  });

  it("outcome with --business-errors http → 422 and the same fatal-error message", async () => {
    const { app } = sandbox(REFUSE, { businessErrors: "http" });
    const reply = await send(app, addAllergy(), "req-fatal-2");
    expect(reply.status).toBe(422);
    expect(responseHeader(reply.body as Bundle).response).toMatchObject({
      identifier: "req-fatal-2",
      code: "fatal-error",
    });
    expect(details(reply.body as Bundle).issue?.[0]?.code).toBe("business-rule");
  });

  it.each([503, 429, 500])(
    "outcome with status %i → a transient-error response message with that status",
    async (status) => {
      const { app } = sandbox(`
rules:
  - name: unavailable
    respond:
      status: ${status}
      outcome: { diagnostics: "Try again later." }
`);
      const reply = await send(app, addAllergy(), `req-transient-${status}`);
      expect(reply.status).toBe(status);
      const bundle = reply.body as Bundle;
      expect(responseHeader(bundle).response).toMatchObject({
        identifier: `req-transient-${status}`,
        code: "transient-error",
      });
      expect(details(bundle).issue).toEqual([
        { severity: "error", code: "transient", diagnostics: "Try again later." },
      ]);
    },
  );

  it("outcome keeps a given issue code and severity", async () => {
    const { app } = sandbox(`
rules:
  - respond:
      status: 500
      outcome: { code: exception, severity: fatal, diagnostics: "Database on fire." }
`);
    const reply = await send(app, addAllergy());
    expect(reply.status).toBe(500);
    expect(details(reply.body as Bundle).issue).toEqual([
      { severity: "fatal", code: "exception", diagnostics: "Database on fire." },
    ]);
  });

  it("outcome with response: none → a bare OperationOutcome, 400 by default or the scripted status", async () => {
    const { app } = sandbox(`
rules:
  - name: not-processed
    when: { operation: add-allergy }
    respond:
      outcome: { response: none, code: invalid, diagnostics: "Not processed." }
  - name: conflict
    when: { operation: view-patient-profile }
    respond:
      status: 409
      outcome: { response: none, code: conflict, diagnostics: "Conflict." }
`);
    const a = await send(app, addAllergy());
    expect(a.status).toBe(400);
    expect(a.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    expect(a.body).toEqual({
      resourceType: "OperationOutcome",
      issue: [{ severity: "error", code: "invalid", diagnostics: "Not processed." }],
    });
    const b = await send(app, viewProfile());
    expect(b.status).toBe(409);
    expect(b.body).toMatchObject({ resourceType: "OperationOutcome", issue: [{ code: "conflict" }] });
  });

  it("resources → an ok response message correlated to the request, ids assigned where missing", async () => {
    const { app } = sandbox(`
rules:
  - name: tasks
    respond:
      resources:
        - { resourceType: Task, id: scripted-task-1, status: ready, intent: order }
        - { resourceType: Task, status: requested, intent: plan }
`);
    const reply = await send(app, viewProfile(), "req-resources");
    expect(reply.status).toBe(200);
    const bundle = reply.body as Bundle;
    expect(responseHeader(bundle).response).toEqual({ identifier: "req-resources", code: "ok" });
    const [first, second] = focusOf(bundle) as Task[];
    expect(first).toEqual({ resourceType: "Task", id: "scripted-task-1", status: "ready", intent: "order" });
    expect(second).toMatchObject({ resourceType: "Task", status: "requested", intent: "plan" });
    expect(second?.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(bundle.entry).toHaveLength(3);
  });

  it("body → exactly that JSON with the status", async () => {
    const { app } = sandbox(`
rules:
  - respond:
      status: 202
      body: { hello: world, list: [1, "two", null], nested: { ok: true } }
`);
    const reply = await send(app, addAllergy());
    expect(reply.status).toBe(202);
    expect(reply.body).toEqual({ hello: "world", list: [1, "two", null], nested: { ok: true } });
  });

  it("builtIn: true with headers → the built-in answer carrying the headers", async () => {
    const { app } = sandbox(`
rules:
  - name: tag
    respond: { builtIn: true, headers: { X-Scripted: "yes", Retry-After: "5" } }
`);
    const reply = await send(app, addAllergy(), "req-built-in");
    builtIn(reply);
    expect(responseHeader(reply.body as Bundle).response?.identifier).toBe("req-built-in");
    expect(focusOf(reply.body as Bundle)[0]).toMatchObject({ resourceType: "AllergyIntolerance" });
    expect(reply.headers.get("x-scripted")).toBe("yes");
    expect(reply.headers.get("retry-after")).toBe("5");
    expect((await listCalls(app))[0].rule).toBe("tag");
  });

  it("builtIn: true with delay → the answer waits for the delay and comes right after it", async () => {
    const { app } = sandbox(`
rules:
  - name: slow
    respond: { builtIn: true, delay: 2s, headers: { X-Slow: "yes" } }
`);
    vi.useFakeTimers();
    let settled = false;
    const pending = send(app, viewProfile()).then((reply) => {
      settled = true;
      return reply;
    });
    await vi.advanceTimersByTimeAsync(1999);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(settled).toBe(true);
    const reply = await pending;
    builtIn(reply);
    expect(reply.headers.get("x-slow")).toBe("yes");
  });

  it("a delay range waits a random time between min and max (deps.random)", async () => {
    const { app } = sandbox(
      `
rules:
  - respond: { delay: { min: 1s, max: 3000 }, outcome: { diagnostics: "Slow refusal." } }
`,
      {},
      { random: () => 0.25 },
    );
    vi.useFakeTimers();
    let settled = false;
    const pending = send(app, addAllergy()).then((reply) => {
      settled = true;
      return reply;
    });
    await vi.advanceTimersByTimeAsync(1499);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(settled).toBe(true);
    expect(responseHeader((await pending).body as Bundle).response?.code).toBe("fatal-error");
  });

  it.each([
    ["outcome", "outcome: { diagnostics: No. }"],
    ["outcome, response: none", "outcome: { response: none, diagnostics: No. }"],
    ["resources", "resources: [{ resourceType: Task, status: ready, intent: order }]"],
    ["body", "body: { any: thing }"],
    ["builtIn", "builtIn: true"],
  ])("extra headers come with a %s answer", async (_kind, answer) => {
    const { app } = sandbox(`
rules:
  - respond:
      headers: { X-Extra: extra-value, Cache-Control: no-store }
      ${answer}
`);
    const reply = await send(app, addAllergy());
    expect(reply.headers.get("x-extra")).toBe("extra-value");
    expect(reply.headers.get("cache-control")).toBe("no-store");
  });

  it.each([
    ["outcome (fatal-error)", 200, "outcome: { diagnostics: No. }", {}],
    ["outcome with --business-errors http", 422, "outcome: { diagnostics: No. }", { businessErrors: "http" as const }],
    ["outcome, response: transient-error", 200, "outcome: { response: transient-error, diagnostics: No. }", {}],
    ["outcome, response: none", 400, "outcome: { response: none, diagnostics: No. }", {}],
    ["resources", 200, "resources: [{ resourceType: Task, status: ready, intent: order }]", {}],
    ["body", 200, "body: { any: thing }", {}],
    ["builtIn", 200, "builtIn: true", {}],
  ])("default status of %s is %i", async (_kind, status, answer, options) => {
    const { app } = sandbox(`rules:\n  - respond: { ${answer} }\n`, options);
    expect((await send(app, addAllergy())).status).toBe(status);
  });
});

describe("times and sequences (CONTRACT §7)", () => {
  const statuses = async (app: Hono, n: number) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push((await send(app, addAllergy())).status);
    return out;
  };

  it("times: 2 answers twice, then the next rule answers", async () => {
    const { app } = sandbox(`
rules:
  - { name: twice, times: 2, respond: { status: 418, body: { n: 1 } } }
  - { name: after, respond: { status: 419, body: { n: 2 } } }
`);
    expect(await statuses(app, 4)).toEqual([418, 418, 419, 419]);
    expect((await listCalls(app)).map((c) => c.rule)).toEqual(["twice", "twice", "after", "after"]);
  });

  it("times: 2 answers twice, then the built-in behaviour answers", async () => {
    const { app } = sandbox("rules:\n  - { name: twice, times: 2, respond: { status: 418, body: { n: 1 } } }\n");
    expect(await statuses(app, 3)).toEqual([418, 418, 200]);
    expect((await listCalls(app)).map((c) => c.rule)).toEqual(["twice", "twice", null]);
    expect(await rulesView(app)).toMatchObject([{ name: "twice", matched: 3, answered: 2 }]);
  });

  const SEQUENCE = `
    sequence:
      - { status: 201, body: { n: 1 } }
      - { status: 202, body: { n: 2 } }
      - { status: 203, body: { n: 3 } }`;

  it("a sequence of 3 is returned in turn, then its last answer is repeated (default)", async () => {
    const { app } = sandbox(`rules:\n  - name: seq${SEQUENCE}\n`);
    const replies: Reply[] = [];
    for (let i = 0; i < 5; i++) replies.push(await send(app, addAllergy()));
    expect(replies.map((r) => [r.status, r.body.n])).toEqual([
      [201, 1],
      [202, 2],
      [203, 3],
      [203, 3],
      [203, 3],
    ]);
  });

  it("a sequence with afterSequence: fall-through gives the built-in answer once used up", async () => {
    const { app } = sandbox(`rules:\n  - name: seq\n    afterSequence: fall-through${SEQUENCE}\n`);
    expect(await statuses(app, 5)).toEqual([201, 202, 203, 200, 200]);
    expect((await listCalls(app)).map((c) => c.rule)).toEqual(["seq", "seq", "seq", null, null]);
  });

  it("a sequence with times: 2 stops after two answers", async () => {
    const { app } = sandbox(`rules:\n  - name: seq\n    times: 2${SEQUENCE}\n`);
    expect(await statuses(app, 4)).toEqual([201, 202, 200, 200]);
  });

  it("a sequence of 2 with times: 4 repeats its last answer up to the limit", async () => {
    const { app } = sandbox(`
rules:
  - name: seq
    times: 4
    sequence: [{ status: 201, body: {} }, { status: 202, body: {} }]
`);
    expect(await statuses(app, 6)).toEqual([201, 202, 202, 202, 200, 200]);
  });
});

describe("scripted answers, duplicates, the journal and counters (CONTRACT §4, §9)", () => {
  it("a scripted 503 is not replayed to a resend of the same message id: 503, then the built-in ok", async () => {
    const { app } = sandbox(`
rules:
  - name: flaky
    sequence:
      - { status: 503, outcome: { diagnostics: "Retry, please." } }
      - builtIn: true
`);
    const message = once(addAllergy());
    const first = await send(app, message, "same-id");
    const second = await send(app, message, "same-id");
    const third = await send(app, message, "same-id");

    expect(first.status).toBe(503);
    expect(responseHeader(first.body as Bundle).response?.code).toBe("transient-error");
    builtIn(second);
    expect(responseHeader(second.body as Bundle).response?.identifier).toBe("same-id");
    // The third is a true duplicate of the built-in answer: the same response message again.
    expect(third.body).toEqual(second.body);
    const calls = await listCalls(app);
    expect(calls.map((c) => [c.messageId, c.rule, c.duplicate ?? false])).toEqual([
      ["same-id", "flaky", false],
      ["same-id", "flaky", false],
      ["same-id", "flaky", true],
    ]);
  });

  it("the journal records the rule that answered, and null when none did", async () => {
    const { app } = sandbox(`
rules:
  - { name: only-allergies, when: { operation: add-allergy }, times: 1, respond: { status: 418, body: {} } }
`);
    await send(app, addAllergy());
    await send(app, addAllergy());
    await send(app, viewProfile());
    const calls = await listCalls(app);
    expect(calls.map((c) => [c.operation, c.rule])).toEqual([
      ["add-allergy", "only-allergies"],
      ["add-allergy", null],
      ["view-patient-profile", null],
    ]);
  });

  it("GET /__admin/scenarios shows matched and answered counts per rule; reset sets them back to 0", async () => {
    const { app } = sandbox(`
rules:
  - { name: once, when: { operation: add-allergy }, times: 1, respond: { status: 418, body: {} } }
  - { name: never, when: { operation: add-task }, respond: { status: 418, body: {} } }
  - { name: anything, respond: { builtIn: true } }
`);
    const statuses = async () => {
      const out: number[] = [];
      for (let i = 0; i < 3; i++) out.push((await send(app, addAllergy())).status);
      out.push((await send(app, viewProfile())).status);
      return out;
    };
    expect(await statuses()).toEqual([418, 200, 200, 200]);
    expect(await rulesView(app)).toMatchObject([
      { name: "once", matched: 3, answered: 1 },
      { name: "never", matched: 0, answered: 0 },
      { name: "anything", matched: 3, answered: 3 },
    ]);

    expect((await admin(app, "POST", "/reset")).status).toBe(200);
    expect(await rulesView(app)).toMatchObject([
      { name: "once", matched: 0, answered: 0 },
      { name: "never", matched: 0, answered: 0 },
      { name: "anything", matched: 0, answered: 0 },
    ]);
    expect((await send(app, addAllergy())).status).toBe(418);
  });
});

// --- fixtures ----------------------------------------------------------------

const PROFILE_TYPES = new Set(["AllergyIntolerance", "Condition", "Procedure", "Observation"]);

async function profileOf(app: Hono, key: string) {
  const reply = await send(app, viewProfile(key));
  builtIn(reply);
  const resources = (reply.body as Bundle).entry?.slice(1).map((e) => e.resource as Resource) ?? [];
  return {
    patient: resources.find((r) => r.resourceType === "Patient") as Patient,
    records: resources.filter((r) => PROFILE_TYPES.has(r.resourceType)),
  };
}

async function patientState(app: Hono, key: string) {
  const reply = await admin(app, "GET", `/patients/${encodeURIComponent(key)}`);
  expect(reply.status).toBe(200);
  return reply.body as { patient: Patient; keys: string[]; records: Resource[] };
}

describe("fixtures (CONTRACT §7)", () => {
  const fixtures = () => start({ scenarios: join(FIXTURES, "fixtures.yaml") });

  it("a fixture patient's profile holds exactly its records, with the ids given", async () => {
    const { app } = fixtures();
    const view = await profileOf(app, "784-1975-3000001-3");
    expect(view.patient).toMatchObject({
      id: "fx-noura",
      name: [{ family: "Al Hashimi", given: ["Noura"] }],
      gender: "female",
      birthDate: "1975-02-14",
    });
    expect(view.records.map((r) => `${r.resourceType}/${r.id}`).sort()).toEqual([
      "AllergyIntolerance/fx-noura-latex",
      "Condition/fx-noura-asthma",
      "Observation/fx-noura-height",
      "Procedure/fx-noura-appendectomy",
    ]);
    const latex = view.records.find((r) => r.id === "fx-noura-latex") as AllergyIntolerance;
    expect(latex.code?.text).toBe("Latex");
    expect(latex.patient.reference).toBe("Patient/fx-noura");

    const state = await patientState(app, `${EID}|784-1975-3000001-3`);
    expect(state.patient.id).toBe("fx-noura");
    expect(state.records.map((r) => `${r.resourceType}/${r.id}`).sort()).toEqual([
      "AllergyIntolerance/fx-noura-latex",
      "Condition/fx-noura-asthma",
      "Observation/fx-noura-height",
      "Procedure/fx-noura-appendectomy",
      "Task/fx-noura-followup",
    ]);
    expect(state.keys).toEqual(expect.arrayContaining(["fx-noura", `${EID}|784-1975-3000001-3`]));
  });

  it("a record without an id gets one, stable across starts", async () => {
    const a = await patientState(fixtures().app, "fx-omar");
    const b = await patientState(fixtures().app, "fx-omar");
    expect(a.records).toHaveLength(1);
    expect(a.records[0]?.id).toEqual(expect.any(String));
    expect(a.records[0]?.id).toBe(b.records[0]?.id);
  });

  it("missing demographics are generated, and an Emirates ID is added when none is given", async () => {
    const { app } = fixtures();
    const state = await patientState(app, "https://clinic.example.ae/mrn|MRN-9001");
    expect(state.patient.id).toBe("fx-omar");
    expect(state.patient.name?.[0]?.family).toEqual(expect.any(String));
    expect(state.patient.gender).toMatch(/^(male|female)$/);
    expect(state.patient.birthDate).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    const eid = state.patient.identifier?.find((i) => i.system === EID)?.value;
    expect(eid).toMatch(/^784-\d{4}-\d{7}-\d$/);
    expect(state.patient.identifier).toContainEqual({ system: "https://clinic.example.ae/mrn", value: "MRN-9001" });
    // The given demographics are kept (Noura has hers), the generated ones do not replace them.
    expect((await patientState(app, "fx-noura")).patient.gender).toBe("female");
  });

  it("generated: true adds the generated records to the ones given", async () => {
    const { app } = fixtures();
    const view = await profileOf(app, "784-1966-3000003-0");
    expect(view.patient.id).toBe("fx-latifa");
    const ids = view.records.map((r) => r.id);
    expect(ids).toContain("fx-latifa-pollen");
    expect(view.records.length).toBeGreaterThan(1);
    const generated = view.records.filter((r) => r.id !== "fx-latifa-pollen");
    for (const r of generated) {
      const subject = (r as { patient?: Reference; subject?: Reference }).patient ?? (r as Observation).subject;
      expect(subject?.reference).toBe("Patient/fx-latifa");
    }
  });

  it("a fixture record removed before POST /__admin/reset is back after it", async () => {
    const { app } = fixtures();
    builtIn(await send(app, removeAllergy("fx-noura-latex", ALTERNATE, "Patient/fx-noura")));
    expect((await profileOf(app, "784-1975-3000001-3")).records.map((r) => r.id)).not.toContain("fx-noura-latex");

    expect((await admin(app, "POST", "/reset")).status).toBe(200);

    const after = await profileOf(app, "784-1975-3000001-3");
    expect(after.records.map((r) => r.id)).toContain("fx-noura-latex");
    expect(after.records.find((r) => r.id === "fx-noura-latex")).toMatchObject({ meta: { versionId: "1" } });
  });

  it("fixture pharmacies are listed by GET /__admin/pharmacies, every header value redacted", async () => {
    const { app } = fixtures();
    const reply = await admin(app, "GET", "/pharmacies");
    expect(reply.status).toBe(200);
    const pharmacies = reply.body.pharmacies as Array<{ licence: string; headers: Record<string, string> }>;
    expect(pharmacies.map((p) => p.licence)).toEqual(["PH-AUH-0042", "PH-AUH-0043"]);
    expect(pharmacies[0]).toMatchObject({
      licence: "PH-AUH-0042",
      name: "Fixture Pharmacy Abu Dhabi",
      endpoint: "http://127.0.0.1:9/pharmacy/hook",
      source: "fixture",
    });
    expect(pharmacies[0]?.headers).toEqual({
      authorization: "[redacted]",
      "x-api-key": "[redacted]",
      "x-auth-token": "[redacted]",
      "x-region": "[redacted]",
    });
    expect(pharmacies[1]).toMatchObject({ licence: "PH-AUH-0043", source: "fixture", headers: {} });
    expect(JSON.stringify(reply.body)).not.toMatch(/not-a-real/);
  });
});

// --- shipped examples -----------------------------------------------------------

describe("the shipped example rules (scenarios/20-, 30-, 40-*.yaml)", () => {
  const shipped = () => start({ scenarios: SHIPPED });
  const scenario = (name: string) => ({ "X-Sandbox-Scenario": name });

  it("implausible-body-weight refuses a 500 kg weight and accepts 70 kg", async () => {
    const { app } = shipped();
    const refused = await send(app, addWeight(500), "weight-500");
    expect(refused.status).toBe(200);
    const bundle = refused.body as Bundle;
    expect(responseHeader(bundle).response).toMatchObject({ identifier: "weight-500", code: "fatal-error" });
    const [problem] = details(bundle).issue;
    expect(problem).toMatchObject({
      code: "business-rule",
      expression: ["Bundle.entry[1].resource.value.ofType(Quantity).value"],
    });
    expect(problem?.diagnostics).toMatch(/^A body weight of 500 kg is not plausible/);

    const accepted = await send(app, addWeight(70));
    builtIn(accepted);
    expect(focusOf(accepted.body as Bundle)[0]).toMatchObject({ valueQuantity: { value: 70 } });
    expect((await listCalls(app)).map((c) => c.rule)).toEqual(["implausible-body-weight", null]);
  });

  it("flaky-add-allergy gives a 503 with Retry-After, then the built-in ok to the retry", async () => {
    const { app } = shipped();
    const flaky = { ...addAllergy(), headers: scenario("flaky-allergy") };
    const first = await send(app, flaky, "allergy-retry");
    expect(first.status).toBe(503);
    expect(first.headers.get("retry-after")).toBe("1");
    expect(responseHeader(first.body as Bundle).response).toMatchObject({
      identifier: "allergy-retry",
      code: "transient-error",
    });
    const retry = await send(app, flaky, "allergy-retry");
    builtIn(retry);
    expect(focusOf(retry.body as Bundle)[0]?.resourceType).toBe("AllergyIntolerance");
    // Without the header the rule stays out of the way.
    builtIn(await send(app, addAllergy()));
  });

  const PHARMACY_OPS = [
    "subscribe-order-notifications",
    "confirm-drugs-availability",
    "receive-allocation",
    "send-dispense-summary",
  ];

  it.each(PHARMACY_OPS)("exchange-down-for-pharmacies answers %s with 503 while the header is sent", async (op) => {
    const { app } = shipped();
    const c = OPERATION_CASES.find((o) => o.id === op);
    if (!c) throw new Error(`no operation case ${op}`);
    const down = await post(app, await c.request(app, { id: `${op}-down` }), {
      path: c.path,
      headers: scenario("exchange-down"),
    });
    expect(down.status).toBe(503);
    expect(down.headers.get("retry-after")).toBe("30");
    const bundle = down.body as Bundle;
    expect(responseHeader(bundle).response).toMatchObject({ identifier: `${op}-down`, code: "transient-error" });
    expect(details(bundle).issue?.[0]).toMatchObject({ code: "transient" });

    const up = await post(app, await c.request(app), { path: c.path });
    expect(up.status).not.toBe(503);
    expect((await listCalls(app)).map((call) => call.rule)).toEqual(["exchange-down-for-pharmacies", null]);
  });

  it("exchange-down-for-pharmacies leaves other operations alone", async () => {
    const { app } = shipped();
    builtIn(await send(app, { ...addAllergy(), headers: scenario("exchange-down") }));
  });

  it("scripted-pending-tasks returns the scripted Task for the requested patient", async () => {
    const { app } = shipped();
    const eid = "784-1990-7777777-1";
    const reply = await send(
      app,
      {
        ...viewProfile(eid),
        bundle: () => messageBundle("get-pending-tasks", [patient(eid)]),
        headers: scenario("scripted-tasks"),
      },
      "tasks-req",
    );
    expect(reply.status).toBe(200);
    const bundle = reply.body as Bundle;
    expect(responseHeader(bundle).response).toEqual({ identifier: "tasks-req", code: "ok" });
    const tasks = focusOf(bundle) as Task[];
    expect(tasks).toHaveLength(1);
    const [task] = tasks;
    expect(task).toMatchObject({
      resourceType: "Task",
      status: "ready",
      intent: "order",
      priority: "urgent",
      description: "Diabetic foot assessment",
      for: { identifier: { system: EID, value: eid } },
    });
    expect(task?.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(Date.parse(task?.authoredOn ?? "")).not.toBeNaN();
    expect((await listCalls(app))[0].rule).toBe("scripted-pending-tasks");

    // Without the header: the built-in pending list, not the scripted task.
    const plain = await send(app, {
      ...viewProfile(eid),
      bundle: () => messageBundle("get-pending-tasks", [patient(eid)]),
    });
    builtIn(plain);
    expect(focusOf(plain.body as Bundle).map((t) => t.id)).not.toContain(task?.id);
    expect((await listCalls(app))[1].rule).toBeNull();
  });
});
