import type { TestReport, TestScript } from "fhir/r4.js";
import { parse } from "junit2json";
import { afterAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import type { SessionReport } from "../../src/conformance/session-report.js";
import { emittedProblems } from "../support/validator.js";

/**
 * The reports of a session and the plans' TestScripts through the admin API, in-process: what `conformance run --out`
 * writes, for a dashboard or a CI job that runs the session on a shared sandbox. A session nobody sends to fails
 * fast at a small time scale, which gives a report with failures and skips to read.
 */

const BROKEN = "test/conformance/fixtures/broken-plans";
const PLANS = "test/conformance/fixtures/plans";

const app = createApp({ scenarios: undefined });
afterAll(() => app.close());

const admin = (path: string, init?: RequestInit) => app.app.request(`http://127.0.0.1/w/reports/__admin${path}`, init);

async function finishedSession(): Promise<SessionReport> {
  const started = await admin("/conformance/sessions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ role: "sender", timeScale: 0.01 }),
  });
  expect(started.status).toBe(201);
  const { id } = (await started.json()) as SessionReport;
  const ended = await admin(`/conformance/sessions/${id}?wait=60s`);
  return (await ended.json()) as SessionReport;
}

describe("a session's reports through the admin API", () => {
  it("serves the TestReport (valid R4 by both validators) and JUnit XML that a JUnit parser reads", async () => {
    const report = await finishedSession();
    expect(report.state).toBe("failed");

    const fhir = await admin(`/conformance/sessions/${report.id}/testreport`);
    expect(fhir.status).toBe(200);
    expect(fhir.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    const testReport = (await fhir.json()) as TestReport;
    expect(testReport.resourceType).toBe("TestReport");
    // report-result-codes: a session that failed is "fail"; report-status-codes: a finished one is "completed".
    expect(testReport.result).toBe("fail");
    expect(testReport.status).toBe("completed");
    expect(emittedProblems(testReport)).toEqual([]);

    const junit = await admin(`/conformance/sessions/${report.id}/junit`);
    expect(junit.headers.get("content-type")).toMatch(/^application\/xml/);
    const parsed = await parse(await junit.text());
    const steps = report.tests.flatMap((t) => t.steps);
    const failed = steps.filter((s) => s.status === "fail").length;
    expect(failed).toBeGreaterThan(0);
    const suites = (parsed as { testsuite?: Array<{ tests?: number; failures?: number }> }).testsuite ?? [parsed];
    expect(suites[0]?.tests).toBe(steps.length);
    expect(suites[0]?.failures).toBe(failed);
  });

  it("serves each plan as an R4 TestScript, valid by both validators", async () => {
    for (const id of ["sender", "receiver"]) {
      const res = await admin(`/conformance/plans/${id}/testscript`);
      expect(res.status).toBe(200);
      const script = (await res.json()) as TestScript;
      expect(script.resourceType).toBe("TestScript");
      expect(emittedProblems(script)).toEqual([]);
    }
  });

  it("answers 404 with an OperationOutcome for an unknown plan or session", async () => {
    for (const path of [
      "/conformance/plans/nope/testscript",
      "/conformance/sessions/nope/testreport",
      "/conformance/sessions/nope/junit",
    ]) {
      const res = await admin(path);
      expect(res.status, path).toBe(404);
      const body = (await res.json()) as { resourceType: string; issue: Array<{ diagnostics: string }> };
      expect(body.resourceType).toBe("OperationOutcome");
      // The way on names this workspace's admin API, where the listing is.
      expect(body.issue[0]?.diagnostics).toMatch(
        /list them with GET \/w\/reports\/__admin\/conformance\/(plans|sessions)\.$/,
      );
    }
  });
});

describe("the operations a sender declares", () => {
  it("are each kept once, however often the request names them", async () => {
    const started = await admin("/conformance/sessions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        role: "sender",
        operations: [...Array.from({ length: 10_000 }, () => "add-allergy"), "add-history", "add-allergy"],
      }),
    });
    expect(started.status).toBe(201);
    const report = (await started.json()) as SessionReport;
    expect(report.participants.system.operations).toEqual(["add-allergy", "add-history"]);
    app.conformance.get("reports", report.id)?.stop("test over");
  });
});

describe("long-polling a running session", () => {
  it("leaves nothing behind per poll that timed out: each poll's listener goes with it", async () => {
    const started = await admin("/conformance/sessions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ role: "sender" }),
    });
    const { id } = (await started.json()) as SessionReport;
    const session = app.conformance.get("reports", id);
    if (!session) throw new Error("no session");
    // Counts the listeners the polls hold, through the session's own onUpdate.
    let held = 0;
    let subscribed = 0;
    const onUpdate = session.onUpdate.bind(session);
    Object.assign(session, {
      onUpdate: (listener: (r: SessionReport) => void) => {
        held++;
        subscribed++;
        const off = onUpdate(listener);
        return () => {
          held--;
          off();
        };
      },
    });
    for (let i = 0; i < 5; i++) {
      const polled = await admin(`/conformance/sessions/${id}?wait=20ms`);
      expect(((await polled.json()) as SessionReport).state).toBe("running");
    }
    // Each poll waited through a listener of its own (a callback on `done` would stay until the session ended)…
    expect(subscribed).toBe(5);
    // …and let go of it when its wait ran out.
    expect(held).toBe(0);
    session.stop("test over");
  });
});

describe("a host's plans (--conformance) are checked when the sandbox starts", () => {
  it("refuses to start with a plan that has problems, naming the file and the problem", () => {
    expect(() => createApp({ scenarios: undefined, conformance: `${BROKEN}/20-unknown-rule.yaml` })).toThrow(
      /20-unknown-rule\.yaml:\d+:\d+: .*rule/,
    );
  });

  it("serves a valid host plan beside the shipped ones", async () => {
    const host = createApp({ scenarios: undefined, conformance: PLANS });
    try {
      const res = await host.app.request("http://127.0.0.1/__admin/conformance/plans");
      const ids = ((await res.json()) as { plans: Array<{ id: string }> }).plans.map((p) => p.id);
      expect(ids).toEqual(expect.arrayContaining(["sender", "receiver", "sender-mini", "receiver-mini"]));
    } finally {
      host.close();
    }
  });
});
