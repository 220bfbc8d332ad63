import type { Child } from "hono/jsx";
import { useEffect, useState } from "hono/jsx/dom";
import { apiFetch, pageUrl, post } from "../api.js";
import {
  Badge,
  CopyButton,
  ErrorNote,
  Facts,
  Loading,
  Problem,
  Time,
  toneOfCode,
  toneOfStatus,
} from "../components/common.js";
import { FhirView, Folded, issueAnchor } from "../components/fhir-view.js";
import { curlCommand } from "../curl.js";
import { ms } from "../format.js";
import { useLive } from "../live.js";
import type { PageProps } from "../page-props.js";
import { revealHash } from "../reveal.js";
import type { CallDetail, CallSummary } from "../types.js";
import { useData } from "../use-data.js";
import { Decision } from "./call-decision.js";
import { LinkedOrder, Resources, SameMessage, unwrap } from "./call-links.js";

const bodyText = (body: unknown) => (body === null ? "" : typeof body === "string" ? body : JSON.stringify(body));

function Headers({ headers }: { headers: Record<string, string> }) {
  return (
    <table class="headers">
      <caption class="visually-hidden">Headers</caption>
      <tbody>
        {Object.entries(headers).map(([name, value]) => (
          <tr>
            <th scope="row">{name}</th>
            <td>{value}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Body({
  body,
  prefix,
  marks,
}: {
  body: unknown;
  prefix: string;
  marks?: Array<{ issue: number; locations: CallDetail["issues"][number]["locations"] }>;
}) {
  if (body === null || body === "") return <p class="muted">No body.</p>;
  const { value, enveloped } = unwrap(body);
  if (typeof value === "string")
    return (
      <Folded lines={value.split("\n").length}>
        <pre class="raw">{value}</pre>
      </Folded>
    );
  return (
    <>
      {enveloped ? <p class="muted">The message Bundle inside the envelope's content:</p> : null}
      <FhirView value={value} prefix={prefix} marks={marks ?? []} />
    </>
  );
}

function Issues({ call }: { call: CallDetail }) {
  if (call.issues.length === 0) return null;
  return (
    <section aria-labelledby="issues">
      <h2 id="issues">Issues ({call.issues.length})</h2>
      <ol class="issues">
        {call.issues.map((issue, i) => (
          <li>
            <Badge tone={issue.severity === "warning" || issue.severity === "information" ? "warn" : "bad"}>
              {issue.severity ?? "issue"}
            </Badge>{" "}
            <code>{issue.code}</code> {issue.diagnostics}
            {issue.expression.length > 0 ? (
              <>
                {" "}
                at <code>{issue.expression.join(", ")}</code>{" "}
                {issue.locations.length > 0 ? (
                  <a href={`#${issueAnchor("request", i + 1)}`}>show issue {i + 1} in the request</a>
                ) : (
                  <span class="muted">(not found in the request)</span>
                )}
              </>
            ) : null}
          </li>
        ))}
      </ol>
    </section>
  );
}

function Actions({ call }: { call: CallDetail }) {
  const [yaml, setYaml] = useState<string | null>(null);
  const [problem, setProblem] = useState("");
  const [resent, setResent] = useState<{ callId: string | null; status: number } | null>(null);
  const [newId, setNewId] = useState(true);
  const curl = curlCommand(call.request, bodyText(call.request.body), location.origin);
  const exportRule = async () => {
    try {
      setYaml(await (await apiFetch(`calls/export?format=scenario&id=${encodeURIComponent(call.id)}`)).text());
    } catch (e) {
      setProblem((e as Error).message);
    }
  };
  const resend = async () => {
    try {
      setResent(await post(`calls/${encodeURIComponent(call.id)}/resend`, { newMessageId: newId }));
    } catch (e) {
      setProblem((e as Error).message);
    }
  };
  const download = yaml === null ? "" : URL.createObjectURL(new Blob([yaml], { type: "application/yaml" }));
  return (
    <section aria-labelledby="actions">
      <h2 id="actions">Actions</h2>
      <details class="action">
        <summary>Copy as curl</summary>
        <figure>
          <figcaption class="visually-hidden">curl command</figcaption>
          <pre class="raw">{curl}</pre>
        </figure>
        <CopyButton text={curl} label="Copy the curl command" />
      </details>
      {call.direction === "inbound" ? (
        <div class="action">
          <label>
            <input
              type="checkbox"
              checked={newId}
              onChange={(e: Event) => setNewId((e.target as HTMLInputElement).checked)}
            />{" "}
            with a new MessageHeader id (else the sandbox answers it as a resend)
          </label>{" "}
          <button type="button" onClick={resend}>
            Resend
          </button>
          {resent ? (
            <p role="status">
              Sent again: answered {resent.status}
              {resent.callId ? (
                <>
                  {" "}
                  as <a href={pageUrl(`calls/${resent.callId}`)}>call {resent.callId}</a>
                </>
              ) : null}
              .
            </p>
          ) : null}
        </div>
      ) : null}
      <div class="action">
        <button type="button" onClick={exportRule}>
          Turn into a scenario rule
        </button>
        {yaml !== null ? (
          <>
            <figure>
              <figcaption>Scenario rule (YAML)</figcaption>
              <pre class="raw">{yaml}</pre>
            </figure>
            <CopyButton text={yaml} label="Copy the YAML" />{" "}
            <a href={download} download={`call-${call.id}.yaml`}>
              Download call-{call.id}.yaml
            </a>
          </>
        ) : null}
      </div>
      <Problem message={problem} />
    </section>
  );
}

/** The two legs of an asynchronous message, each pointing at the other: the 202's call and the answer's deliveries. */
function asyncFacts(call: CallDetail): Array<[string, Child]> {
  if (call.respondsTo !== undefined) {
    return [
      [
        "Answers",
        <>
          <a href={pageUrl(`calls/${call.respondsTo}`)}>call {call.respondsTo}</a>: its asynchronous answer (the message
          was answered 202)
        </>,
      ],
    ];
  }
  const note = call.asyncAnswer;
  if (!note) return [];
  const when = note.dropped
    ? "never sent (a scenario rule's async.drop)"
    : note.delayMs
      ? `sent ${ms(note.delayMs)} after the 202 (a scenario rule's async.delay)`
      : "sent after the 202";
  return [["Asynchronous answer", `to ${note.to}, ${when}; its deliveries are listed under Calls of this message`]];
}

/** One call: what came, what went back, why, what it is part of now, and what to do with it. */
export function CallPage({ param }: PageProps) {
  const { data: call, error, reload } = useData<CallDetail>(`calls/${encodeURIComponent(param)}`);
  useLive(({ event, data }) => {
    // A record does not change, but it may come after its page was opened, or go with the journal.
    if (event === "calls-cleared" || (event === "call" && (data as CallSummary).id === param && !call)) reload();
  });
  // The address may point inside a folded body (an issue's mark): open it once the body is there.
  useEffect(() => {
    if (call) revealHash();
  }, [call]);
  if (error) return <ErrorNote error={error} />;
  if (!call) return <Loading />;
  const marks = call.issues.map((issue, i) => ({ issue: i + 1, locations: issue.locations }));
  return (
    <>
      <Facts
        items={[
          ["Time", <Time at={call.at} />],
          ["Direction", call.direction],
          ["Operation", call.operation ?? "not told"],
          ["Request", `${call.request.method} ${call.target ?? call.request.path}`],
          [
            "Status",
            <Badge tone={toneOfStatus(call.response?.status ?? null)}>
              {call.response?.status ?? call.error ?? "no answer"}
            </Badge>,
          ],
          ["Response code", responseCodeOf(call)],
          ["Rule", call.rule ?? "none"],
          ["Duration", ms(call.durationMs)],
          ["Message id", call.messageId ?? "—"],
          ...(call.attempt ? ([["Attempt", String(call.attempt)]] as Array<[string, string]>) : []),
          ...asyncFacts(call),
          ...(call.duplicate
            ? ([["Resend", "yes: the first answer was returned again"]] as Array<[string, string]>)
            : []),
          ...(call.fault ? ([["Fault", call.fault]] as Array<[string, string]>) : []),
          ...(call.upstream ? ([["Upstream", call.upstream]] as Array<[string, string]>) : []),
        ]}
      />
      <LinkedOrder call={call} />
      <SameMessage call={call} />
      <Resources call={call} />
      <Actions call={call} />
      <Decision call={call} />
      <Issues call={call} />
      <section aria-labelledby="request">
        <h2 id="request">Request</h2>
        <h3>Headers</h3>
        <Headers headers={call.request.headers} />
        <h3>Body</h3>
        <Body body={call.request.body} prefix="request" marks={marks} />
      </section>
      <section aria-labelledby="answer">
        <h2 id="answer">Answer</h2>
        {call.response ? (
          <>
            <h3>Headers</h3>
            <Headers headers={call.response.headers} />
            <h3>Body</h3>
            <Body body={call.response.body} prefix="answer" />
          </>
        ) : (
          <p>No answer: {call.error ?? "the call got none"}.</p>
        )}
      </section>
    </>
  );
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

function responseCodeOf(call: CallDetail) {
  const { value } = unwrap(call.response?.body ?? null);
  const header =
    isObject(value) && Array.isArray(value.entry) && isObject(value.entry[0]) ? value.entry[0].resource : null;
  const code = isObject(header) && isObject(header.response) ? header.response.code : null;
  return typeof code === "string" ? <Badge tone={toneOfCode(code)}>{code}</Badge> : "—";
}
