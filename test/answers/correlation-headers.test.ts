import type { AllergyIntolerance, Bundle } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp, type SandboxApp, type SandboxDeps } from "../../src/app.js";
import { createSandbox } from "../../src/index.js";
import { admin } from "../admin/admin-client.js";
import { ALTERNATE, envelope, example, messageBundle, STANDARD } from "../support/messages.js";

// Every answer on a message path carries X-Sandbox-Call-Id, the journal id of the call, and — when a scenario rule
// answered — X-Sandbox-Rule, its name: whatever kind of answer it is.

const quiet: Partial<SandboxDeps> = { logger: { info: () => undefined, error: () => undefined } };
const cashew = () => example<AllergyIntolerance>("allergyintolerance-example.json");
const json = { "content-type": "application/json" };

const RULES = `
rules:
  - name: scripted-refusal
    when: { operation: add-allergy, headers: { X-Case: refuse } }
    respond: { outcome: { diagnostics: "Refused by the test." } }
  - name: empty-answer
    when: { operation: add-allergy, headers: { X-Case: empty } }
    respond: { status: 502, fault: empty-body }
  - name: cut-off-answer
    when: { operation: add-allergy, headers: { X-Case: cut } }
    respond: { fault: malformed-json }
  - name: built-in-with-header
    when: { operation: add-allergy, headers: { X-Case: built-in } }
    respond: { builtIn: true, headers: { X-Extra: "1" } }
  - name: own-rejection
    when: { operation: add-allergy, invalid: true }
    respond: { status: 422, outcome: { diagnostics: "The exchange's own words.", response: none } }
`;

interface Case {
  name: string;
  /** What is sent: method, path, headers, body. */
  request(): { method?: string; path?: string; headers?: Record<string, string>; body?: string };
  status: number;
  /** The rule expected in X-Sandbox-Rule, or null for none. */
  rule: string | null;
  options?: Parameters<typeof createApp>[0];
  deps?: Partial<SandboxDeps>;
  /** A message sent before, under the same sandbox (duplicates, reuse). */
  before?: () => Bundle;
}

const FIXED = messageBundle("add-allergy", [cashew()], { id: "fixed-message-id" });
const upstream = (async () =>
  new Response(JSON.stringify({ resourceType: "Bundle", type: "message", entry: [] }), {
    status: 200,
    headers: { "content-type": "application/fhir+json" },
  })) as unknown as typeof fetch;
const downUpstream = (async () => {
  throw Object.assign(new TypeError("fetch failed"), { cause: { code: "ECONNREFUSED" } });
}) as unknown as typeof fetch;

const CASES: Case[] = [
  {
    name: "ok",
    request: () => ({ body: envelope(messageBundle("add-allergy", [cashew()])) }),
    status: 200,
    rule: null,
  },
  {
    name: "business refusal (200 fatal-error)",
    request: () => ({
      body: envelope(messageBundle("update-allergy", [{ ...cashew(), id: "not-stored" } as AllergyIntolerance])),
    }),
    status: 200,
    rule: null,
  },
  { name: "400 body not JSON", request: () => ({ body: "{" }), status: 400, rule: null },
  {
    name: "400 invalid R4 (no rule asks for invalid messages of this operation)",
    request: () => ({
      body: envelope(messageBundle("add-task", [{ resourceType: "Task", status: "bogus" } as never])),
    }),
    status: 400,
    rule: null,
  },
  {
    name: "404 a known operation on the other path",
    request: () => ({ path: ALTERNATE, body: envelope(messageBundle("add-allergy", [cashew()])) }),
    status: 404,
    rule: null,
  },
  { name: "404 no such path", request: () => ({ path: "/uae-fhir/r4/Patient" }), status: 404, rule: null },
  { name: "405 GET on a message path", request: () => ({ method: "GET" }), status: 405, rule: null },
  {
    name: "413 body over --max-body",
    options: { maxBody: 64 },
    request: () => ({ body: envelope(messageBundle("add-allergy", [cashew()])) }),
    status: 413,
    rule: null,
  },
  {
    name: "415 content type",
    request: () => ({ headers: { "content-type": "text/plain" }, body: "x" }),
    status: 415,
    rule: null,
  },
  {
    name: "409 a message id reused for other content",
    before: () => FIXED,
    request: () => ({
      body: envelope(
        messageBundle("add-allergy", [cashew()], { id: "fixed-message-id", source: "https://other.example" }),
      ),
    }),
    status: 409,
    rule: null,
  },
  {
    name: "duplicate (an exact resend)",
    before: () => FIXED,
    request: () => ({ body: envelope(FIXED) }),
    status: 200,
    rule: null,
  },
  {
    name: "scripted answer",
    request: () => ({ headers: { "x-case": "refuse" }, body: envelope(messageBundle("add-allergy", [cashew()])) }),
    status: 200,
    rule: "scripted-refusal",
  },
  {
    name: "fault with an answer: empty body",
    request: () => ({ headers: { "x-case": "empty" }, body: envelope(messageBundle("add-allergy", [cashew()])) }),
    status: 502,
    rule: "empty-answer",
  },
  {
    name: "fault with an answer: malformed JSON",
    request: () => ({ headers: { "x-case": "cut" }, body: envelope(messageBundle("add-allergy", [cashew()])) }),
    status: 200,
    rule: "cut-off-answer",
  },
  {
    name: "a builtIn rule: the built-in answer, the rule named",
    request: () => ({ headers: { "x-case": "built-in" }, body: envelope(messageBundle("add-allergy", [cashew()])) }),
    status: 200,
    rule: "built-in-with-header",
  },
  {
    name: "a rule answering a message the sandbox refuses (invalid: true)",
    request: () => ({ body: envelope(messageBundle("add-allergy", [{ ...cashew(), criticality: "very" } as never])) }),
    status: 422,
    rule: "own-rejection",
  },
  {
    name: "proxy: the upstream's answer",
    options: { proxy: "http://upstream.test" },
    deps: { fetch: upstream },
    request: () => ({ body: envelope(messageBundle("view-patient-profile", [{ resourceType: "Patient", id: "p1" }])) }),
    status: 200,
    rule: null,
  },
  {
    name: "proxy: the upstream does not answer (502)",
    options: { proxy: "http://upstream.test" },
    deps: { fetch: downUpstream },
    request: () => ({ body: envelope(messageBundle("view-patient-profile", [{ resourceType: "Patient", id: "p1" }])) }),
    status: 502,
    rule: null,
  },
];

async function sandboxFor(c: Case): Promise<SandboxApp> {
  const sandbox = createApp({ ...c.options, watch: false }, { ...quiet, ...c.deps });
  const added = sandbox.scenarios.add(RULES);
  if (!added.ok) throw new Error(JSON.stringify(added.problems));
  if (c.before) {
    const res = await sandbox.app.request(STANDARD, { method: "POST", headers: json, body: envelope(c.before()) });
    expect(res.status).toBe(200);
  }
  return sandbox;
}

describe("X-Sandbox-Call-Id and X-Sandbox-Rule on every kind of answer", () => {
  it.each(CASES.map((c) => [c.name, c] as const))("%s", async (_name, c) => {
    const sandbox = await sandboxFor(c);
    const { method = "POST", path = STANDARD, headers = {}, body } = c.request();
    const res = await sandbox.app.request(path, {
      method,
      headers: { ...json, ...headers },
      ...(body === undefined ? {} : { body }),
    });
    await res.text();

    expect(res.status).toBe(c.status);
    const id = res.headers.get("x-sandbox-call-id");
    expect(id, "X-Sandbox-Call-Id").toMatch(/^\d+$/);
    expect(res.headers.get("x-sandbox-rule")).toBe(c.rule);
    // The id is the journal's: that call, with this answer's status and rule.
    const call = await admin(sandbox.app, "GET", `/calls/${id}`);
    expect(call.status).toBe(200);
    expect(call.body).toMatchObject({ id, rule: c.rule, response: { status: c.status } });
    sandbox.close();
  });

  it("the header names the answering call, not the one answered first: a duplicate gets its own id", async () => {
    const sandbox = await sandboxFor({ ...CASES[0], before: () => FIXED } as Case);
    const res = await sandbox.app.request(STANDARD, { method: "POST", headers: json, body: envelope(FIXED) });
    expect(res.headers.get("x-sandbox-duplicate")).toBe("true");
    const ids = sandbox.journal.list().map((call) => call.id);
    expect(ids).toHaveLength(2);
    expect(res.headers.get("x-sandbox-call-id")).toBe(ids[1]);
    sandbox.close();
  });
});

describe("over a real socket", () => {
  it("an ok answer and a fault's empty answer carry the headers as a client sees them", async () => {
    const sandbox = await createSandbox({ deps: quiet, watch: false });
    try {
      sandbox.addRules(RULES);
      const send = (headers: Record<string, string>) =>
        fetch(`${sandbox.url}${STANDARD}`, {
          method: "POST",
          headers: { ...json, ...headers },
          body: envelope(messageBundle("add-allergy", [cashew()])),
        });
      const ok = await send({});
      await ok.text();
      expect([ok.status, ok.headers.get("x-sandbox-call-id"), ok.headers.get("x-sandbox-rule")]).toEqual([
        200,
        "1",
        null,
      ]);
      const empty = await send({ "x-case": "empty" });
      expect(await empty.text()).toBe("");
      expect([empty.status, empty.headers.get("x-sandbox-call-id"), empty.headers.get("x-sandbox-rule")]).toEqual([
        502,
        "2",
        "empty-answer",
      ]);
    } finally {
      await sandbox.close();
    }
  });
});
