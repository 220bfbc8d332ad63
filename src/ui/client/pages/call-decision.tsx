import { Badge, DataTable } from "../components/common.js";
import type { CallDetail, RuleOutcome } from "../types.js";

/** A near miss in words: the condition that failed and what the message had, or why a matching rule did not answer. */
const describeReason = (rule: RuleOutcome): string =>
  [rule.failed, rule.note].filter(Boolean).join("; ") || (rule.outcome === "answered" ? "it matched" : "—");

/** Rules with the same outcome for the same reason, in the order the first of them was tried. */
interface Group {
  outcome: RuleOutcome["outcome"];
  reason: string;
  rules: RuleOutcome[];
}

/**
 * One row per outcome and reason: a refused message meets every rule of its operation with the same "the message
 * was invalid", which said once with a count (and the rules behind a disclosure) is read at a glance.
 */
export function groupOutcomes(rules: readonly RuleOutcome[]): Group[] {
  const groups = new Map<string, Group>();
  for (const rule of rules) {
    const reason = describeReason(rule);
    const key = JSON.stringify([rule.outcome, reason]);
    const group = groups.get(key);
    if (group) group.rules.push(rule);
    else groups.set(key, { outcome: rule.outcome, reason, rules: [rule] });
  }
  return [...groups.values()];
}

const where = (r: RuleOutcome) => `${r.source}:${r.line}`;

function Rules({ group }: { group: Group }) {
  const [only] = group.rules;
  if (group.rules.length === 1 && only) return <>{only.rule}</>;
  return (
    <details class="rule-group">
      <summary>{group.rules.length} rules</summary>
      <ul>
        {group.rules.map((r) => (
          <li>
            {r.rule} <span class="muted">{where(r)}</span>
          </li>
        ))}
      </ul>
    </details>
  );
}

/** The files of a group's rules: the one place of a single rule, else each file with how many of its rules. */
function Where({ group }: { group: Group }) {
  const [only] = group.rules;
  if (group.rules.length === 1 && only) return <>{where(only)}</>;
  const files = new Map<string, number>();
  for (const r of group.rules) files.set(r.source, (files.get(r.source) ?? 0) + 1);
  return <>{[...files].map(([file, n]) => `${file} (${n})`).join(", ")}</>;
}

export function Decision({ call }: { call: CallDetail }) {
  const groups = groupOutcomes(call.explanation.rules ?? []);
  return (
    <section aria-labelledby="decision">
      <h2 id="decision">Rule decision</h2>
      <p>{call.explanation.summary}</p>
      {call.explanation.otherOperations ? (
        <p class="muted">
          {call.explanation.otherOperations} rule{call.explanation.otherOperations === 1 ? "" : "s"} of other operations
          were not tried.
        </p>
      ) : null}
      {groups.length > 0 ? (
        <DataTable
          caption={<>Scenario rules this message met, and their outcome</>}
          columns={["Rule", "Where", "Outcome", "Why"]}
        >
          {groups.map((g) => (
            <tr>
              <td>
                <Rules group={g} />
              </td>
              <td>
                <Where group={g} />
              </td>
              <td>
                <Badge tone={g.outcome === "answered" ? "good" : g.outcome === "not-matched" ? "warn" : undefined}>
                  {g.outcome}
                </Badge>
              </td>
              <td>{g.reason}</td>
            </tr>
          ))}
        </DataTable>
      ) : null}
    </section>
  );
}
