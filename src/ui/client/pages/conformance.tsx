import { useEffect, useState } from "hono/jsx/dom";
import { apiFetch, apiUrl, pageUrl, post } from "../api.js";
import { Badge, DataTable, ErrorNote, Facts, Loading, Problem, Time } from "../components/common.js";
import { useLive } from "../live.js";
import type { PageProps } from "../page-props.js";
import type { SessionReport, StepResult, TestResult } from "../types.js";
import { useData } from "../use-data.js";

/** How often a running session is fetched again: a step's end shows within this. */
const POLL_MS = 1000;

interface SessionRow {
  id: string;
  role: "sender" | "receiver";
  plan: string | { id: string };
  state: SessionReport["state"];
  startedAt: string;
  endedAt: string | null;
  summary: SessionReport["summary"];
}

interface PlanRow {
  id: string;
  title: string;
  version: string;
  role: "sender" | "receiver";
  source: string;
}

/** Each result as a sign and a word: the word carries the meaning, the sign and the colour only repeat it. */
const LOOK: Record<string, { sign: string; tone: "good" | "bad" | "warn" | "info" | undefined }> = {
  pass: { sign: "✓", tone: "good" },
  passed: { sign: "✓", tone: "good" },
  fail: { sign: "✗", tone: "bad" },
  failed: { sign: "✗", tone: "bad" },
  warning: { sign: "!", tone: "warn" },
  skip: { sign: "–", tone: undefined },
  stopped: { sign: "■", tone: "warn" },
  running: { sign: "…", tone: "info" },
  pending: { sign: "·", tone: undefined },
};

/** A step's, a test's or a session's status: sign and word in a badge. */
export const Outcome = ({ status }: { status: string }) => {
  const look = LOOK[status] ?? { sign: "?", tone: undefined };
  return (
    <Badge tone={look.tone}>
      <span aria-hidden="true">{look.sign} </span>
      {status}
    </Badge>
  );
};

/** Fetches `path` again every POLL_MS while `running`: a session's report changes as its steps end. */
function usePolling(running: boolean, reload: () => void): void {
  useEffect(() => {
    if (!running) return;
    const timer = setInterval(reload, POLL_MS);
    return () => clearInterval(timer);
  }, [running, reload]);
}

const planId = (plan: SessionRow["plan"]) => (typeof plan === "string" ? plan : plan.id);

/** POST /__admin/conformance/sessions from a form; the session's page opens. */
function StartSession() {
  const plans = useData<{ plans: PlanRow[] }>("conformance/plans");
  const [role, setRole] = useState<"sender" | "receiver">("sender");
  const [problem, setProblem] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const text = (name: string) => String(form.get(name) ?? "").trim();
    const request: Record<string, unknown> = { role };
    if (text("plan")) request.plan = text("plan");
    if (role === "sender" && text("operations"))
      request.operations = text("operations")
        .split(",")
        .map((o) => o.trim())
        .filter(Boolean);
    if (role === "receiver" && text("pharmacyUrl")) request.pharmacyUrl = text("pharmacyUrl");
    if (role === "receiver" && text("pharmacyLicence")) request.pharmacyLicence = text("pharmacyLicence");
    if (text("timeScale")) request.timeScale = Number(text("timeScale"));
    setBusy(true);
    try {
      const report = await post<SessionReport>("conformance/sessions", request);
      location.assign(pageUrl(`conformance/${encodeURIComponent(report.id)}`));
    } catch (e) {
      setProblem((e as Error).message);
      setBusy(false);
    }
  };
  const ofRole = plans.data?.plans.filter((p) => p.role === role) ?? [];
  return (
    <section aria-labelledby="start">
      <h2 id="start">Start a session</h2>
      <p class="muted">
        One session runs at a time in this workspace. A sender sends its normal traffic to this workspace's message URL;
        a pharmacy is pushed orders at its endpoint.
      </p>
      <form onSubmit={submit} class="stacked">
        <fieldset>
          <legend>Role of the system under test</legend>
          <label class="check">
            <input
              type="radio"
              name="role"
              value="sender"
              checked={role === "sender"}
              onChange={() => setRole("sender")}
            />{" "}
            Sender (a clinic or health-program system)
          </label>
          <label class="check">
            <input
              type="radio"
              name="role"
              value="receiver"
              checked={role === "receiver"}
              onChange={() => setRole("receiver")}
            />{" "}
            Receiver (a pharmacy)
          </label>
        </fieldset>
        <label>
          Plan
          <select name="plan">
            <option value="">The shipped plan of the role</option>
            {ofRole.map((p) => (
              <option value={p.id}>
                {p.id}: {p.title} ({p.version})
              </option>
            ))}
          </select>
        </label>
        {role === "sender" ? (
          <label>
            Operations the system sends (comma-separated)
            <input name="operations" placeholder="e.g. add-allergy, remove-allergy" />
          </label>
        ) : (
          <>
            <label>
              Pharmacy push endpoint
              <input name="pharmacyUrl" placeholder="e.g. http://127.0.0.1:9090/fhir-hook" />
            </label>
            <label>
              Pharmacy licence
              <input name="pharmacyLicence" placeholder="PH-CONFORMANCE-0001" />
            </label>
          </>
        )}
        <label>
          Time scale (every wait of the plan and an order's deadline multiplied by it)
          <input name="timeScale" inputmode="decimal" placeholder="1" />
        </label>
        <button type="submit" disabled={busy}>
          Start session
        </button>
      </form>
      <Problem message={problem} />
    </section>
  );
}

/** The workspace's sessions, newest first, and a form to start one. */
export function ConformancePage() {
  const sessions = useData<{ sessions: SessionRow[] }>("conformance/sessions");
  const list = sessions.data?.sessions ?? [];
  usePolling(
    list.some((s) => s.state === "running"),
    sessions.reload,
  );
  useLive(({ event }) => {
    if (event === "ready") sessions.reload();
  });
  return (
    <>
      {sessions.error ? <ErrorNote error={sessions.error} /> : null}
      {!sessions.data && !sessions.error ? <Loading /> : null}
      {sessions.data ? (
        <DataTable
          caption={<>Conformance sessions, newest first{list.length === 0 ? ": none yet" : ""}</>}
          columns={["Session", "Role", "Plan", "State", "Started", "Ended", "Tests"]}
        >
          {list.map((s) => (
            <tr>
              <td>
                <a href={pageUrl(`conformance/${encodeURIComponent(s.id)}`)}>Session {s.id}</a>
              </td>
              <td>{s.role}</td>
              <td>{planId(s.plan)}</td>
              <td>
                <Outcome status={s.state} />
              </td>
              <td>
                <Time at={s.startedAt} />
              </td>
              <td>
                <Time at={s.endedAt} />
              </td>
              <td>
                {s.summary.passed} passed, {s.summary.failed} failed, {s.summary.warnings} warnings, {s.summary.skipped}{" "}
                skipped of {s.summary.tests}
              </td>
            </tr>
          ))}
        </DataTable>
      ) : null}
      <StartSession />
    </>
  );
}

/** A report file of the session, fetched with the admin token and saved under its name. */
function Download({ path, name, label }: { path: string; name: string; label: string }) {
  const [problem, setProblem] = useState("");
  const save = async (event: Event) => {
    // The admin API may need the bearer token, which a plain link does not send.
    event.preventDefault();
    try {
      const blob = await (await apiFetch(path)).blob();
      const url = URL.createObjectURL(blob);
      const a = document.createElement("a");
      a.href = url;
      a.download = name;
      a.click();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
      setProblem("");
    } catch (e) {
      setProblem((e as Error).message);
    }
  };
  return (
    <li>
      <a href={apiUrl(path).pathname} download={name} onClick={save}>
        {label}
      </a>{" "}
      <Problem message={problem} />
    </li>
  );
}

/** The journal calls that decided a step, each a link to its call page. */
const EvidenceList = ({ step }: { step: StepResult }) =>
  step.evidence.length === 0 ? (
    <>—</>
  ) : (
    <ul class="evidence">
      {step.evidence.map((e) => (
        <li>
          <a href={pageUrl(`calls/${encodeURIComponent(e.callId)}`)}>
            Call {e.callId}: {e.direction} {e.operation ?? "message"}, {e.status === null ? "no answer" : e.status}
          </a>{" "}
          — {e.note}
        </li>
      ))}
    </ul>
  );

function TestSection({ test }: { test: TestResult }) {
  const headingId = `test-${test.id}`;
  return (
    <section aria-labelledby={headingId} class="conformance-test">
      <h3 id={headingId}>
        {test.title} <Outcome status={test.status} />
      </h3>
      <p class="muted">
        Test <code>{test.id}</code>
        {test.required ? "" : " (not required: its failures are warnings)"}. Rule {test.rule.id} ({test.rule.source}
        ): {test.rule.text} —{" "}
        {/^https?:\/\//i.test(test.rule.ref) ? (
          // A host's plan may write any text there: only a web address is a link (never javascript: or data:).
          <a href={test.rule.ref} rel="noreferrer">
            where it is written
          </a>
        ) : (
          <span>where it is written: {test.rule.ref}</span>
        )}
      </p>
      {test.description ? <p>{test.description}</p> : null}
      <DataTable
        caption={<>Steps of {test.title}</>}
        hiddenCaption
        columns={["Step", "Result", "Expected", "What happened", "Evidence"]}
      >
        {test.steps.map((step) => (
          <tr>
            <th scope="row">
              {step.title}
              <br />
              <span class="muted">
                <code>{step.id}</code> · {step.kind} ({step.type}){step.required ? "" : " · not required"}
              </span>
            </th>
            <td>
              <Outcome status={step.status} />
            </td>
            <td>{step.expected}</td>
            <td>
              {step.message ?? "—"}
              {(step.status === "fail" || step.status === "warning") && step.fix ? (
                <p class="fix">
                  <strong>To fix:</strong> {step.fix}
                </p>
              ) : null}
            </td>
            <td>
              <EvidenceList step={step} />
            </td>
          </tr>
        ))}
      </DataTable>
    </section>
  );
}

const listed = (names: string[]) => (names.length === 0 ? "none" : names.join(", "));

/** One session, live while it runs: its tests and steps, their evidence and fixes, its coverage and its files. */
export function ConformanceSessionPage({ param }: PageProps) {
  const path = `conformance/sessions/${encodeURIComponent(param)}`;
  const { data: report, error, reload } = useData<SessionReport>(path);
  usePolling(report?.state === "running", reload);
  useLive(({ event }) => {
    if (event === "ready") reload();
  });
  const [problem, setProblem] = useState("");
  if (error) return <ErrorNote error={error} />;
  if (!report) return <Loading />;
  const stop = async () => {
    try {
      setProblem("");
      await apiFetch(path, { method: "DELETE" });
      reload();
    } catch (e) {
      setProblem((e as Error).message);
    }
  };
  const { summary, coverage, participants } = report;
  return (
    <>
      <p class="session-state" role="status">
        State: <Outcome status={report.state} />
        {report.stopReason ? ` — ${report.stopReason}` : ""}
      </p>
      {report.state === "running" ? (
        <button type="button" onClick={stop}>
          Stop the session
        </button>
      ) : null}
      <Problem message={problem} />
      <Facts
        items={[
          ["Plan", `${report.plan.id} ${report.plan.version}: ${report.plan.title}`],
          ["Role", report.role],
          ["Started", <Time at={report.startedAt} />],
          ["Ended", <Time at={report.endedAt} />],
          ["Time scale", `× ${report.timeScale}`],
          ["Message URL", <code>{participants.sandbox.messageUrl}</code>],
          ...(report.role === "sender"
            ? ([["Declared operations", listed(participants.system.operations)]] as Array<[string, string]>)
            : ([
                ["Pharmacy endpoint", participants.system.pharmacyUrl ?? "— (waits for a subscription)"],
                ["Pharmacy licence", participants.system.pharmacyLicence ?? "—"],
              ] as Array<[string, string]>)),
          [
            "Tests",
            `${summary.tests}: ${summary.passed} passed, ${summary.failed} failed, ${summary.warnings} warnings, ${summary.skipped} skipped`,
          ],
        ]}
      />
      <section aria-labelledby="downloads">
        <h2 id="downloads">Reports</h2>
        <ul>
          <Download path={`${path}/testreport`} name="testreport.json" label="testreport.json (FHIR R4 TestReport)" />
          <Download path={`${path}/junit`} name="junit.xml" label="junit.xml (JUnit XML, for CI)" />
          <Download path={path} name="report.json" label="report.json (the session report)" />
        </ul>
      </section>
      <section aria-labelledby="tests">
        <h2 id="tests">Tests</h2>
        {report.tests.map((test) => (
          <TestSection test={test} />
        ))}
      </section>
      <section aria-labelledby="coverage">
        <h2 id="coverage">Coverage</h2>
        <Facts
          items={[
            [
              `Operations exercised (${coverage.operations.exercised.length} of ${coverage.operations.exercised.length + coverage.operations.notExercised.length})`,
              listed(coverage.operations.exercised),
            ],
            ["Operations not exercised", listed(coverage.operations.notExercised)],
            [
              `Rules checked (${coverage.rules.checked.length} of ${coverage.rules.checked.length + coverage.rules.notChecked.length})`,
              listed(coverage.rules.checked),
            ],
            ["Rules not checked", listed(coverage.rules.notChecked)],
          ]}
        />
      </section>
    </>
  );
}
