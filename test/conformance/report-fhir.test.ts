import { fileURLToPath } from "node:url";
import type { TestReport, TestScript } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { loadPlans } from "../../src/conformance/load-plans.js";
import type { Plan } from "../../src/conformance/plan-schema.js";
import { testReport } from "../../src/conformance/report/testreport.js";
import { testScript } from "../../src/conformance/report/testscript.js";
import { buildCatalogue } from "../../src/routing/catalogue.js";
import { emittedProblems } from "../support/validator.js";
import { failingReport, passingReport, stoppedReport } from "./fixtures/session-reports.js";

// A session as an R4 TestReport and a plan as an R4 TestScript: valid R4 by the sandbox's own validator and Medplum's,
// with the codes the R4 value sets define (report-status-codes, report-result-codes, report-participant-type,
// report-action-result-codes, testscript-operation-codes), written here by hand from the specification.

const PLANS = fileURLToPath(new URL("./fixtures/plans", import.meta.url));

const plans = () => {
  const load = loadPlans({ catalogue: buildCatalogue(), shipped: PLANS });
  if (!load.ok) throw new Error(JSON.stringify(load.problems));
  return Object.fromEntries(load.plans.map((p) => [p.plan.id, p.plan])) as Record<string, Plan>;
};

/** Each test's actions as "operation:result" / "assert:result". */
const actionsOf = (report: TestReport) =>
  (report.test ?? []).map((t) =>
    t.action.map((a) => (a.operation ? `operation:${a.operation.result}` : `assert:${a.assert?.result}`)),
  );

describe("the TestReport of a session", () => {
  it.each([
    ["passing", passingReport],
    ["failing", failingReport],
    ["stopped", stoppedReport],
  ])("of the %s session is valid R4 by both validators", (_, make) => {
    expect(emittedProblems(testReport(make(), { now: new Date("2026-11-27T12:00:00Z") }))).toEqual([]);
  });

  it("the validators judge TestReports: a status outside report-status-codes and no result are found", () => {
    const wrong = { ...testReport(passingReport()), status: "done" } as Record<string, unknown>;
    delete wrong.result;
    const problems = emittedProblems(wrong as unknown as TestReport);
    const own = problems.filter((p) => p.startsWith("sandbox:")).join("\n");
    // Medplum's checks the structure (it has no terminology for required bindings); the sandbox's both.
    expect(problems.filter((p) => !p.startsWith("sandbox:")).join("\n")).toMatch(/TestReport\.result/);
    expect(own).toMatch(/TestReport\.result/);
    expect(own).toMatch(/TestReport\.status/);
  });

  it("passing: completed, pass, score 100; the sandbox is the server of a sender and the test engine", () => {
    const report = testReport(passingReport());

    expect(report).toMatchObject({
      resourceType: "TestReport",
      id: "s-2026-0001",
      status: "completed",
      result: "pass",
      score: 100,
      issued: "2026-11-27T10:00:42.250Z",
      testScript: { display: "A small sender plan (sender-mini 1.0)" },
    });
    expect(report.tester).toMatch(/^uae-fhir-sandbox \d+\.\d+\.\d+/);
    expect(report.participant?.map((p) => [p.type, p.uri])).toEqual([
      ["test-engine", "http://127.0.0.1:8080/w/team-a/__admin/conformance/sessions/s-2026-0001"],
      ["server", "http://127.0.0.1:8080/w/team-a/uae-fhir/r4/$process-message"],
      ["client", "urn:uae-fhir-sandbox:system-under-test:team-a"],
    ]);
    expect(report.participant?.[2]?.display).toContain("declaring add-allergy");
    expect(report.test?.map((t) => t.name)).toEqual([
      "declared-operations",
      "transient-error-retried",
      "fatal-error-not-retried",
    ]);
    // The sandbox's actions (answerNext) are operations, the expectations asserts.
    expect(actionsOf(report)).toEqual([
      ["assert:pass"],
      ["operation:pass", "assert:pass", "assert:pass"],
      ["operation:pass", "assert:pass", "assert:pass"],
    ]);
    expect(report.test?.[1]?.description).toContain(
      "Rule reliable-messaging (fhir-r4): A sender that gets no answer, or a transient-error, sends the same message again with the same MessageHeader id. https://hl7.org/fhir/R4/messaging.html#reliable",
    );
    expect(report.test?.[2]?.description).toContain("Not required");
    // Evidence: the journal calls, as links into the workspace's admin API.
    const answered = report.test?.[1]?.action[0]?.operation;
    expect(answered?.detail).toBe("http://127.0.0.1:8080/w/team-a/__admin/calls/2");
    expect(answered?.message).toContain("[call 2](http://127.0.0.1:8080/w/team-a/__admin/calls/2): answered 503");
  });

  it("failing: completed, fail, a third of the tests failed; the failure says expected, happened, fix, evidence", () => {
    const report = testReport(failingReport());

    expect(report).toMatchObject({ status: "completed", result: "fail", score: 66.7 });
    expect(actionsOf(report)).toEqual([
      ["assert:pass"],
      ["operation:pass", "assert:fail", "assert:skip"],
      ["operation:pass", "assert:warning", "assert:pass"],
    ]);
    const retried = report.test?.[1]?.action[1]?.assert;
    expect(retried?.message).toContain("saw 2 messages after the 503, both with new ids (a91e…, 0b7d…)");
    expect(retried?.message).toContain(
      "Expected: a retry of message 6f1c… with the same MessageHeader id and the same content within 30 s",
    );
    expect(retried?.message).toContain("To fix: Retry a message answered 503 with the same MessageHeader id");
    expect(retried?.detail).toBe(
      "http://127.0.0.1:8080/w/team-a/__admin/calls/6 http://127.0.0.1:8080/w/team-a/__admin/calls/7",
    );
    expect(report.test?.[1]?.action[2]?.assert?.message).toContain("not run: step retried failed");
  });

  it("stopped: status stopped, result pending; a receiver's sandbox is the client, the pharmacy the server", () => {
    const report = testReport(stoppedReport());

    expect(report).toMatchObject({ status: "stopped", result: "pending", score: 0 });
    expect(report.name).toContain("(stopped: stopped through DELETE");
    expect(report.participant?.map((p) => [p.type, p.uri])).toEqual([
      ["test-engine", "http://127.0.0.1:8080/__admin/conformance/sessions/s-2026-0002"],
      ["client", "http://127.0.0.1:8080/uae-fhir/r4/$process-message"],
      ["server", "http://127.0.0.1:9090/notifications"],
    ]);
    expect(report.participant?.[2]?.display).toContain("PH-CONFORMANCE-0001");
    // Steps not run (pending) are skips: report-action-result-codes has no pending.
    expect(actionsOf(report)).toEqual([
      [
        "assert:pass",
        "operation:pass",
        "assert:skip",
        "assert:skip",
        "operation:skip",
        "operation:skip",
        "assert:skip",
      ],
      ["operation:skip", "assert:skip"],
    ]);
    expect(report.test?.[0]?.action[3]?.assert?.message).toContain("not run");
  });

  it("a session still running: in-progress, pending, issued now", () => {
    const running = { ...stoppedReport(), state: "running" as const, endedAt: null, stopReason: null };
    const report = testReport(running, { now: new Date("2026-11-27T11:00:03Z") });

    expect(report).toMatchObject({ status: "in-progress", result: "pending", issued: "2026-11-27T11:00:03.000Z" });
    expect(emittedProblems(report)).toEqual([]);
  });

  it("a stopped session whose required test failed is a fail", () => {
    const stopped = { ...failingReport(), state: "stopped" as const, stopReason: "the workspace was reset" };
    expect(testReport(stopped)).toMatchObject({ status: "stopped", result: "fail" });
  });
});

describe("the TestScript of a plan", () => {
  it.each(["sender-mini", "receiver-mini"])("of %s is valid R4 by both validators", (id) => {
    const plan = plans()[id] as Plan;
    expect(emittedProblems(testScript(plan))).toEqual([]);
  });

  it("the plan's tests as test[]; actions as operations, expectations as asserts, titles as descriptions", () => {
    const script: TestScript = testScript(plans()["sender-mini"] as Plan);

    expect(script).toMatchObject({
      resourceType: "TestScript",
      id: "sender-mini",
      url: "urn:uae-fhir-sandbox:conformance:sender-mini",
      version: "1.0",
      // tst-0: a name usable as an identifier, [A-Z]([A-Za-z0-9_]){0,254}.
      name: "SenderMini",
      title: "A small sender plan",
      status: "active",
    });
    expect(script.test?.map((t) => t.name)).toEqual([
      "declared-operations",
      "transient-error-retried",
      "fatal-error-not-retried",
    ]);
    const transient = script.test?.[1]?.action ?? [];
    expect(transient.map((a) => (a.operation ? "operation" : "assert"))).toEqual(["operation", "assert", "assert"]);
    expect(transient[0]?.operation).toMatchObject({
      label: "answer-503",
      description: "answer the next add-allergy with 503 transient-error",
      encodeRequestUrl: false,
      url: `\${messageUrl}`,
    });
    // A required step fails its test; one that is not required only warns.
    expect(transient[1]?.assert).toMatchObject({
      label: "retried",
      description: "the same message is sent again",
      warningOnly: false,
      direction: "request",
    });
    expect(transient[2]?.assert?.warningOnly).toBe(true);
    // Every step of a test that is not required only warns.
    expect(script.test?.[2]?.action.flatMap((a) => (a.assert ? [a.assert.warningOnly] : []))).toEqual([true, true]);
  });

  it("a receiver plan: pushes are process-message operations posting a Bundle to the pharmacy", () => {
    const script = testScript(plans()["receiver-mini"] as Plan);

    expect(script.variable?.map((v) => v.name)).toEqual(["messageUrl", "pharmacyUrl"]);
    const push = script.test?.[0]?.action[1]?.operation;
    expect(push).toMatchObject({
      type: { system: "http://terminology.hl7.org/CodeSystem/testscript-operation-codes", code: "process-message" },
      resource: "Bundle",
      method: "post",
      url: `\${pharmacyUrl}`,
    });
    // An acknowledgement is about the pharmacy's response; a message it sends, a request.
    expect(script.test?.[0]?.action[2]?.assert?.direction).toBe("response");
    expect(script.test?.[0]?.action[3]?.assert?.direction).toBe("request");
  });
});
