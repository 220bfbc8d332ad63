import type { SessionReport } from "../session-report.js";

/**
 * The workspace's admin API base, e.g. http://127.0.0.1:8080/w/team-a/__admin, as the session's message URL shows it:
 * the workspace prefix /w/{name} (none for default) on the sandbox's origin. A caller that knows better (the admin
 * API serving the report) passes its own.
 */
export function adminBaseOf(report: SessionReport): string {
  const url = report.participants.sandbox.messageUrl;
  if (report.workspace !== "default") {
    const prefix = `/w/${encodeURIComponent(report.workspace)}/`;
    const at = url.indexOf(prefix);
    if (at >= 0) return `${url.slice(0, at + prefix.length)}__admin`;
  }
  try {
    return `${new URL(url).origin}/__admin`;
  } catch {
    return "/__admin";
  }
}

/** Where a journal call that decided a step is read: GET {admin}/calls/{id}. */
export const callUrl = (adminBase: string, callId: string) => `${adminBase}/calls/${encodeURIComponent(callId)}`;
