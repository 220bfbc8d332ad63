import type { Child } from "hono/jsx";
import { useEffect, useRef, useState } from "hono/jsx/dom";
import { ApiError, api, apiFetch } from "../api.js";
import { Badge, DataTable, ErrorNote, Facts, Loading, Problem, Time } from "../components/common.js";
import { useLive } from "../live.js";
import { useData } from "../use-data.js";

interface ScenariosView {
  folder: string | null;
  loadedAt: string | null;
  problems: Array<{ file: string; line: number; column: number; message: string }>;
  files: Array<{ source: string; name: string | null; rules: number }>;
  rules: Array<{
    id: string;
    name: string;
    source: string;
    line: number;
    operations: string[] | null;
    times: number | null;
    responses: number;
    matched: number;
    answered: number;
    when: RuleWhen;
    answers: Answer[];
    afterSequence: "repeat-last" | "fall-through" | null;
    /** Only on a rule that names a scenario. */
    scenario?: { name: string; requiredState: string | null; newState: string | null; stateKey: string };
  }>;
}

/** GET /__admin/scenarios/states: each scenario's state per key a rule has moved (the rest are in Started). */
interface StatesView {
  states: Array<{ scenario: string; key: string; state: string; changedAt: string | null }>;
}

type HeaderCondition = string | { matches: string } | { absent: true };

/** A rule's `when`, as written in its file. */
interface RuleWhen {
  operation?: string | string[];
  direction?: string;
  path?: string | string[];
  headers?: Record<string, HeaderCondition>;
  patient?: string | string[];
  fhirpath?: string | string[];
  invalid?: boolean;
}

/** What one response of a rule answers (GET /__admin/scenarios). */
interface Answer {
  kind: "outcome" | "resources" | "body" | "fault" | "built-in";
  status: number | null;
  code: string | null;
  issue: string | null;
  fault: string | null;
  delay: string | null;
  headers: string[];
  resources: number | null;
  description: string | null;
}

const list = (value: string | string[]) => (Array.isArray(value) ? value : [value]);
const oneOf = (value: string | string[]) =>
  list(value).length === 1 ? ` is ${list(value)[0]}` : ` is one of ${list(value).join(", ")}`;

function headerCondition(name: string, condition: HeaderCondition): string {
  if (typeof condition === "string") return `header ${name} is ${JSON.stringify(condition)}`;
  if ("matches" in condition) return `header ${name} matches /${condition.matches}/`;
  return `header ${name} is absent`;
}

/** Each condition of a rule besides its operation, in words; the code in `code` so it reads as written. */
function conditions(when: RuleWhen): Child[] {
  const said: Child[] = [];
  if (when.patient !== undefined)
    said.push(
      <>
        patient{list(when.patient).length === 1 ? " is " : " is one of "}
        {list(when.patient).map((p, i) => (
          <>
            {i > 0 ? ", " : ""}
            <code>{p}</code>
          </>
        ))}
      </>,
    );
  if (when.direction !== undefined) said.push(`direction is ${when.direction}`);
  if (when.path !== undefined) said.push(`path${oneOf(when.path)}`);
  for (const [name, condition] of Object.entries(when.headers ?? {})) said.push(headerCondition(name, condition));
  for (const expression of when.fhirpath === undefined ? [] : list(when.fhirpath))
    said.push(
      <>
        FHIRPath <code>{expression}</code>
      </>,
    );
  if (when.invalid === true) said.push("only messages the sandbox refuses as invalid");
  return said;
}

/** One response in words: "500 transient-error, issue exception", "fault connection-reset", "built-in, after 8s". */
function answerWords(a: Answer): string {
  const what =
    a.kind === "built-in"
      ? "the built-in answer"
      : a.kind === "fault"
        ? `fault ${a.fault}${a.status === null ? "" : ` (${a.status})`}`
        : [
            [
              a.status,
              a.code ?? (a.kind === "outcome" ? "bare OperationOutcome" : a.kind === "body" ? "this body" : null),
            ]
              .filter((part) => part !== null)
              .join(" "),
            a.issue ? `issue ${a.issue}` : null,
            a.resources === null ? null : `${a.resources} resource${a.resources === 1 ? "" : "s"}`,
          ]
            .filter(Boolean)
            .join(", ");
  const more = [
    a.delay ? `after ${a.delay}` : null,
    a.headers.length > 0 ? `header${a.headers.length === 1 ? "" : "s"} ${a.headers.join(", ")}` : null,
  ].filter(Boolean);
  return [what, ...more].join(", ");
}

function Matches({ rule }: { rule: ScenariosView["rules"][number] }) {
  const said = conditions(rule.when);
  return (
    <>
      <span class="rule-operation">{rule.operations?.join(", ") ?? "any operation"}</span>
      {said.length > 0 ? (
        <ul class="conditions">
          {said.map((c) => (
            <li>{c}</li>
          ))}
        </ul>
      ) : null}
    </>
  );
}

function Answers({ rule }: { rule: ScenariosView["rules"][number] }) {
  if (rule.answers.length === 1) return <>{answerWords(rule.answers[0] as Answer)}</>;
  return (
    <>
      A sequence{rule.afterSequence === "fall-through" ? ", then falls through" : ", the last repeated"}:
      <ol class="conditions">
        {rule.answers.map((a) => (
          <li>{answerWords(a)}</li>
        ))}
      </ol>
    </>
  );
}

/**
 * A button for an action that cannot be undone: the first press asks, in place, with the choice to go on or not
 * (focus moves to the question's first button, and back when it is dismissed).
 */
function ConfirmButton({
  label,
  question,
  confirm,
  onConfirm,
}: {
  label: string;
  question: string;
  confirm: string;
  onConfirm: () => void;
}) {
  const [asking, setAsking] = useState(false);
  const yes = useRef<HTMLButtonElement>(null);
  const start = useRef<HTMLButtonElement>(null);
  const asked = useRef(false);
  useEffect(() => {
    if (asking) yes.current?.focus();
    else if (asked.current) start.current?.focus();
    asked.current = asking;
  }, [asking]);
  if (!asking)
    return (
      <button type="button" ref={start} onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  return (
    <fieldset class="confirm">
      <legend>{question}</legend>
      <button
        type="button"
        ref={yes}
        onClick={() => {
          setAsking(false);
          onConfirm();
        }}
      >
        {confirm}
      </button>{" "}
      <button type="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </fieldset>
  );
}

/** One scenario's rules in words: `first-accepted: Started → one-added`. */
const transition = (r: { name: string; scenario?: { requiredState: string | null; newState: string | null } }) =>
  `${r.name}: ${r.scenario?.requiredState ?? "any state"} → ${r.scenario?.newState ?? "stays"}`;

/**
 * Each scenario the rules name (or a state is kept for), its rules' transitions and its state per key, with a
 * reset for one key, one scenario and all (DELETE /__admin/scenarios/states).
 */
function ScenarioStates({
  rules,
  states,
  onReset,
}: {
  rules: ScenariosView["rules"];
  states: StatesView["states"];
  onReset: () => void;
}) {
  const [said, setSaid] = useState("");
  const [problem, setProblem] = useState("");
  const names = [
    ...new Set([...rules.flatMap((r) => (r.scenario ? [r.scenario.name] : [])), ...states.map((s) => s.scenario)]),
  ];
  const reset = async (filter: { scenario?: string; key?: string }, what: string) => {
    setSaid("");
    setProblem("");
    try {
      const query = new URLSearchParams(filter).toString();
      const done = await api<{ reset: number }>(`scenarios/states${query ? `?${query}` : ""}`, { method: "DELETE" });
      setSaid(`${what}: ${done.reset} state${done.reset === 1 ? "" : "s"} back in Started.`);
    } catch (e) {
      setProblem((e as Error).message);
    }
    onReset();
  };
  return (
    <section aria-labelledby="states">
      <h2 id="states">Scenario states</h2>
      {names.length === 0 ? (
        <p>
          No rule names a <code>scenario</code>.
        </p>
      ) : (
        <>
          <p>
            Each scenario's state per key (a patient, the workspace, or what its <code>stateKey</code> FHIRPath gives).
            A key not listed is in <code>Started</code>.
          </p>
          <div class="state-actions">
            {states.length > 0 ? (
              <ConfirmButton
                label="Reset all scenario states"
                question={`Put every scenario back in Started, for all ${states.length} key${states.length === 1 ? "" : "s"}?`}
                confirm="Reset all"
                onConfirm={() => reset({}, "All scenarios")}
              />
            ) : null}{" "}
            <span role="status">{said}</span>
          </div>
          <Problem message={problem} />
        </>
      )}
      {names.map((name, i) => {
        const own = states.filter((s) => s.scenario === name);
        const ruled = rules.filter((r) => r.scenario?.name === name);
        return (
          <section aria-labelledby={`scenario-${i}`}>
            <h3 id={`scenario-${i}`}>
              Scenario <code>{name}</code>
            </h3>
            <p>
              {ruled.length === 0
                ? "No rule names it any more; its states remain until reset."
                : `Kept per ${ruled[0]?.scenario?.stateKey}. ${ruled.map(transition).join("; ")}.`}
            </p>
            {own.length === 0 ? (
              <p>Every key is in Started: no rule has moved it yet.</p>
            ) : (
              <>
                <DataTable
                  caption={<>States of scenario {name}, per key</>}
                  hiddenCaption
                  columns={["Key", "State", "Last change", "Reset"]}
                >
                  {own.map((s) => (
                    <tr>
                      <th scope="row">
                        <code>{s.key}</code>
                      </th>
                      <td>
                        <Badge tone="info">{s.state}</Badge>
                      </td>
                      <td>
                        <Time at={s.changedAt} />
                      </td>
                      <td>
                        <button
                          type="button"
                          aria-label={`Reset ${name} for ${s.key}`}
                          onClick={() => reset({ scenario: name, key: s.key }, `${name} for ${s.key}`)}
                        >
                          Reset
                        </button>
                      </td>
                    </tr>
                  ))}
                </DataTable>
                <ConfirmButton
                  label={`Reset ${name}`}
                  question={`Put ${name} back in Started for all ${own.length} key${own.length === 1 ? "" : "s"}?`}
                  confirm={`Reset ${name}`}
                  onConfirm={() => reset({ scenario: name }, name)}
                />
              </>
            )}
          </section>
        );
      })}
    </section>
  );
}

/** The loaded scenario files and rules with their hit counts and scenario states; reload, and what a failed reload said. */
export function ScenariosPage() {
  const view = useData<ScenariosView>("scenarios");
  const states = useData<StatesView>("scenarios/states");
  const [said, setSaid] = useState("");
  useLive(({ event }) => {
    // Hit counts and states move with calls; reloads, resets by hand (states, the whole workspace) as their own events.
    if (event === "scenario-states" || event === "calls-cleared") states.reload();
    if (event === "ready" || event === "scenarios" || event === "call") {
      view.reload();
      states.reload();
    }
  });
  const reload = async () => {
    setSaid("");
    try {
      await apiFetch("scenarios/reload", { method: "POST" });
      setSaid("Reloaded.");
    } catch (e) {
      setSaid(
        e instanceof ApiError && e.status === 400 ? "The reload failed: see the problems below." : (e as Error).message,
      );
    }
    view.reload();
  };
  if (view.error) return <ErrorNote error={view.error} />;
  if (states.error) return <ErrorNote error={states.error} />;
  if (!view.data || !states.data) return <Loading />;
  const v = view.data;
  return (
    <>
      <Facts
        items={[
          ["Folder", v.folder ?? "none (--scenarios)"],
          ["Last successful load", <Time at={v.loadedAt} />],
          ["Files", String(v.files.length)],
          ["Rules", String(v.rules.length)],
        ]}
      />
      <p>
        <button type="button" onClick={reload}>
          Reload from disk
        </button>{" "}
        <span role="status">{said}</span>
      </p>
      {v.problems.length > 0 ? (
        <section aria-labelledby="problems" class="problems">
          <h2 id="problems">The last reload failed; the previous scenarios keep serving</h2>
          <ul>
            {v.problems.map((p) => (
              <li>
                <code>
                  {p.file}:{p.line}:{p.column}
                </code>
                : {p.message}
              </li>
            ))}
          </ul>
        </section>
      ) : null}
      <section aria-labelledby="files">
        <h2 id="files">Files</h2>
        <ul>
          {v.files.map((f) => (
            <li>
              <code>{f.source}</code>
              {f.name ? ` — ${f.name}` : ""}: {f.rules} rule{f.rules === 1 ? "" : "s"}
            </li>
          ))}
        </ul>
      </section>
      <ScenarioStates rules={v.rules} states={states.data.states} onReset={states.reload} />
      <section aria-labelledby="rules">
        <h2 id="rules">Rules, in the order they are tried</h2>
        <DataTable
          caption={<>Rules: what each matches and answers, and its hit counts</>}
          hiddenCaption
          columns={["Rule", "Where", "Matches", "Answers", "Matched", "Answered", "Times"]}
        >
          {v.rules.map((r) => (
            <tr>
              <th scope="row">{r.name}</th>
              <td>
                <code>
                  {r.source}:{r.line}
                </code>
              </td>
              <td>
                <Matches rule={r} />
              </td>
              <td>
                <Answers rule={r} />
              </td>
              <td class="number">{r.matched}</td>
              <td class="number">{r.answered > 0 ? <Badge tone="good">{r.answered}</Badge> : r.answered}</td>
              <td class="number">{r.times ?? "∞"}</td>
            </tr>
          ))}
        </DataTable>
      </section>
    </>
  );
}
