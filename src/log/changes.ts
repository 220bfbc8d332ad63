import type { SandboxChange } from "../events.js";

/**
 * A change made by hand as a log event: `event` names it (as the JSON line's other events do), the rest are its
 * counts, and the message says it in words.
 *
 * @example
 *   changeLine({ change: "rules-added", workspace: "default", source: "runtime-1", rules: 2 })
 *   // { fields: { event: "rules-added", workspace: "default", source: "runtime-1", rules: 2 },
 *   //   msg: "2 rules added to workspace default (runtime-1)" }
 */
export function changeLine(change: SandboxChange): { fields: Record<string, unknown>; msg: string } {
  const { change: event, ...rest } = change;
  return { fields: { event, ...rest }, msg: changeMessage(change) };
}

function changeMessage(c: SandboxChange): string {
  const w = `workspace ${c.workspace}`;
  switch (c.change) {
    case "reset":
      return `${w} reset: ${counted(c.calls, "call")}, ${counted(c.orders, "order")} and ${counted(c.patients, "patient")} cleared, the fixtures loaded again${c.runtimeRules > 0 ? `; ${counted(c.runtimeRules, "rule")} added at run time kept` : ""}`;
    case "rules-added":
      return `${counted(c.rules, "rule")} added to ${w} (${c.source})`;
    case "rules-removed":
      return `${counted(c.rules, "rule")} removed from ${w} (all those added at run time)`;
    case "calls-cleared":
      return `journal of ${w} cleared: ${counted(c.calls, "call")}`;
    case "workspace-created":
      return `${w} created (${counted(c.workspaces, "workspace")} held)`;
    case "workspace-deleted":
      return `${w} deleted with all it held (${counted(c.workspaces, "workspace")} held)`;
    case "states-reset":
      return `${counted(c.states, "scenario state")} of ${w} back in Started${which(c.scenario, c.key)}`;
    case "workspace-dropped":
      return `${w} dropped after ${idle(c.idleMs)} idle (--workspace-ttl) with all it held (${counted(c.workspaces, "workspace")} held)`;
  }
}

/** Which states a reset chose: " (scenario flow, key …)", or nothing for all. */
function which(scenario: string | null, key: string | null): string {
  const chosen = [scenario === null ? null : `scenario ${scenario}`, key === null ? null : `key ${key}`];
  const said = chosen.filter((part) => part !== null);
  return said.length === 0 ? "" : ` (${said.join(", ")})`;
}

/** "1 rule", "3 rules": the nouns here all take an s. */
const counted = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? "" : "s"}`;

/** An idle time as a person says it: seconds, minutes or hours, whole. */
function idle(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s} s`;
  if (s < 2 * 3600) return `${Math.round(s / 60)} min`;
  return `${Math.round(s / 3600)} h`;
}
