import { type Issue, issue } from "../fhir/outcome.js";
import type { StateWriteError } from "./state-file.js";

/** Seconds a client is told to wait before sending again what could not be saved. */
export const RETRY_AFTER_S = 5;

/**
 * Why a message (or an admin change) was answered 503: its changes could not be written to the state file, so
 * nothing of it was kept — never an `ok` with nothing saved.
 */
export function unsavedIssues(error: StateWriteError): Issue[] {
  return [
    issue(
      "transient",
      `The sandbox could not save this in its state file ${error.path} (${error.message}), so nothing of it was kept: send it again once the operator has fixed the file (a full disk, a removed or read-only file, another process holding it). GET /__admin/health shows the state file's status.`,
    ),
  ];
}

/** The headers of that 503: when to try again. */
export const unsavedHeaders = (): Record<string, string> => ({ "Retry-After": String(RETRY_AFTER_S) });
