import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";

// GET /__admin/scenarios says what each rule matches and answers, for the dashboard's Scenarios page: the
// conditions as written, and for each response the status and response code the sandbox will send — its
// defaults as the scenarios guide gives them, worked out by hand below.

const QUIET = { info: () => undefined, error: () => undefined };

const DOCUMENT = `
rules:
  - name: refuse
    when:
      operation: add-allergy
      patient: "urn:ae:emirates-id|784-1990-1234567-6"
      headers: { X-Test: "yes", X-Other: { absent: true } }
      fhirpath: "Bundle.entry.count() > 1"
    respond:
      outcome: { diagnostics: "no" }
  - name: unavailable
    respond:
      status: 503
      headers: { Retry-After: "5" }
      outcome: { diagnostics: "later" }
  - name: bare
    respond:
      outcome: { code: invalid, diagnostics: "bad", response: none }
  - name: found
    respond:
      resources: [{ resourceType: Basic }, { resourceType: Basic }]
  - name: own-body
    respond:
      status: 202
      body: { hello: world }
  - name: faults
    times: 2
    sequence:
      - { fault: timeout }
      - { fault: empty-body, status: 502 }
    afterSequence: fall-through
  - name: secret
    when:
      headers:
        Authorization: "Bearer s3cr3t-of-team-a"
        X-Client-Secret: { matches: "^abc" }
        X-Trace: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.sig"
        X-Case: { matches: "^refuse" }
    respond:
      outcome: { diagnostics: "no" }
  - name: slow
    when: { invalid: true }
    respond:
      builtIn: true
      delay: { min: 1s, max: 3s }
`;

const common = { issue: null, fault: null, delay: null, headers: [], resources: null, description: null };

async function rulesOf(businessErrors: "message" | "http") {
  const { app } = createApp({ businessErrors }, { logger: QUIET });
  const added = await app.request("/__admin/scenarios", {
    method: "POST",
    headers: { "content-type": "text/yaml" },
    body: DOCUMENT,
  });
  expect(added.status).toBe(201);
  const view = (await (await app.request("/__admin/scenarios")).json()) as {
    rules: Array<{ name: string; when: unknown; answers: unknown[]; afterSequence: unknown }>;
  };
  return new Map(view.rules.map((r) => [r.name, r]));
}

describe("GET /__admin/scenarios: what each rule matches and answers", () => {
  it("gives each rule's conditions as written", async () => {
    const rules = await rulesOf("message");
    expect(rules.get("refuse")?.when).toEqual({
      operation: "add-allergy",
      patient: "urn:ae:emirates-id|784-1990-1234567-6",
      headers: { "X-Test": "yes", "X-Other": { absent: true } },
      fhirpath: "Bundle.entry.count() > 1",
    });
    expect(rules.get("slow")?.when).toEqual({ invalid: true });
    expect(rules.get("found")?.when).toEqual({});
  });

  it("gives each response's status, response code, issue, fault and delay, with the sandbox's defaults", async () => {
    const rules = await rulesOf("message");
    const answers = (name: string) => rules.get(name)?.answers;
    // A refusal: fatal-error, business-rule, in a 200 response message (--business-errors message).
    expect(answers("refuse")).toEqual([
      { ...common, kind: "outcome", status: 200, code: "fatal-error", issue: "business-rule" },
    ]);
    // A 5xx is transient, its issue code transient.
    expect(answers("unavailable")).toEqual([
      {
        ...common,
        kind: "outcome",
        status: 503,
        code: "transient-error",
        issue: "transient",
        headers: ["Retry-After"],
      },
    ]);
    // response: none is a bare OperationOutcome, 400 unless told.
    expect(answers("bare")).toEqual([{ ...common, kind: "outcome", status: 400, code: null, issue: "invalid" }]);
    expect(answers("found")).toEqual([{ ...common, kind: "resources", status: 200, code: "ok", resources: 2 }]);
    expect(answers("own-body")).toEqual([{ ...common, kind: "body", status: 202, code: null }]);
    // A timeout sends nothing; an empty body is sent with its status.
    expect(answers("faults")).toEqual([
      { ...common, kind: "fault", status: null, code: null, fault: "timeout" },
      { ...common, kind: "fault", status: 502, code: null, fault: "empty-body" },
    ]);
    expect(rules.get("faults")?.afterSequence).toBe("fall-through");
    expect(rules.get("refuse")?.afterSequence).toBe(null);
    expect(answers("slow")).toEqual([{ ...common, kind: "built-in", status: null, code: null, delay: "1s–3s" }]);
  });

  it("gives a refusal 422 by default under --business-errors http", async () => {
    const rules = await rulesOf("http");
    expect(rules.get("refuse")?.answers).toEqual([
      { ...common, kind: "outcome", status: 422, code: "fatal-error", issue: "business-rule" },
    ]);
    // Transient errors stay 200 response messages unless told (the scenarios guide).
    expect(rules.get("unavailable")?.answers).toMatchObject([{ status: 503, code: "transient-error" }]);
  });

  it("hides a header condition's value that is a credential, as the journal hides the header", async () => {
    const rules = await rulesOf("message");
    // By name (Authorization, a name saying secret) or by value (a JWT); a plain header stays as written.
    expect(rules.get("secret")?.when).toEqual({
      headers: {
        Authorization: "[redacted]",
        "X-Client-Secret": { matches: "[redacted]" },
        "X-Trace": "[redacted]",
        "X-Case": { matches: "^refuse" },
      },
    });
    const text = JSON.stringify([...rules.values()]);
    expect(text).not.toContain("s3cr3t");
    expect(text).not.toContain("eyJhbGci");
  });
});
