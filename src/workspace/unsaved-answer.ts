import { type Issue, issue, operationOutcome } from "../fhir/outcome.js";
import type { Answer } from "../pipeline/process-message.js";
import type { StateWriteError } from "../state/state-file.js";

/** Seconds a client is told to wait before sending again a message that could not be saved. */
export const RETRY_AFTER_S = 5;

/** Why a message was answered 503: its changes could not be written to the state file, so none were kept. */
export function unsavedIssue(error: StateWriteError): Issue {
  return issue(
    "transient",
    `The sandbox could not save this message in its state file ${error.path} (${error.message}), so nothing of it was kept: send it again once the operator has fixed the file (a full disk, a removed or read-only file, another process holding it). GET /__admin/health shows the state file's status.`,
  );
}

/**
 * The answer to a message whose changes could not be written to the state file: 503 and a transient-error
 * OperationOutcome that says why, never the answer that was built (nothing of the message was kept).
 */
export function unsavedAnswer(built: Answer, error: StateWriteError): Answer {
  return {
    status: 503,
    body: operationOutcome([unsavedIssue(error)]),
    operation: built.operation,
    messageId: built.messageId,
    duplicate: false,
    rule: null,
    delayMs: 0,
    headers: { "Retry-After": String(RETRY_AFTER_S) },
    responseCode: null,
  };
}
