import type { Child } from "hono/jsx";
import { useState } from "hono/jsx/dom";
import { ApiError, apiFetch } from "../api.js";
import { Badge, DataTable, ErrorNote, Facts, Loading, Time } from "../components/common.js";
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
  }>;
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

/** The loaded scenario files and rules with their hit counts; reload, and what a failed reload said. */
export function ScenariosPage() {
  const view = useData<ScenariosView>("scenarios");
  const [said, setSaid] = useState("");
  useLive(({ event }) => {
    // Hit counts move with calls; reloads come as their own event.
    if (event === "ready" || event === "scenarios" || event === "call") view.reload();
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
  if (!view.data) return <Loading />;
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
