import { issue, operationOutcome } from "../fhir/outcome.js";
import type { Answer } from "../pipeline/process-message.js";
import type { StateWriteError } from "../state/state-file.js";

/** Seconds a client is told to wait before sending again a message that could not be saved. */
const RETRY_AFTER_S = 5;

/**
 * The answer to a message whose changes could not be written to the state file: 503 and a transient-error
 * OperationOutcome that says why, never the answer that was built (nothing of the message was kept).
 */
export function unsavedAnswer(built: Answer, error: StateWriteError, path: string): Answer {
  return {
    status: 503,
    body: operationOutcome([
      issue(
        "transient",
        `The sandbox could not save this message in its state file ${path} (${error.message}), so nothing of it was kept: send it again once the operator has fixed the file (a full disk, a removed or read-only file, another process holding it). GET /__admin/health shows the state file's status.`,
      ),
    ]),
    operation: built.operation,
    messageId: built.messageId,
    duplicate: false,
    rule: null,
    delayMs: 0,
    headers: { "Retry-After": String(RETRY_AFTER_S) },
    responseCode: null,
  };
}
