import { operationOutcome } from "../fhir/outcome.js";
import type { Answer } from "../pipeline/process-message.js";
import type { StateWriteError } from "../state/state-file.js";
import { unsavedHeaders, unsavedIssues } from "../state/unsaved.js";

/**
 * The answer to a message whose changes could not be written to the state file: 503 and a transient-error
 * OperationOutcome that says why, never the answer that was built (nothing of the message was kept).
 */
export function unsavedAnswer(built: Answer, error: StateWriteError): Answer {
  return {
    status: 503,
    body: operationOutcome(unsavedIssues(error)),
    operation: built.operation,
    messageId: built.messageId,
    duplicate: false,
    rule: null,
    delayMs: 0,
    headers: unsavedHeaders(),
    responseCode: null,
  };
}
