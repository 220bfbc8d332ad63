import { ALTERNATE, STANDARD } from "./messages.js";

/**
 * The 18 operations of the contract (section 3, in its order) and the path each is served at (section 1), written
 * out here — not read from the catalogue — so that tests catch a change to the catalogue's data.
 */
export const CONTRACT_OPERATIONS: ReadonlyArray<readonly [id: string, path: string]> = [
  ["view-patient-profile", STANDARD],
  ["add-allergy", STANDARD],
  ["update-allergy", STANDARD],
  ["remove-allergy", ALTERNATE],
  ["add-history", STANDARD],
  ["update-history", STANDARD],
  ["remove-history", STANDARD],
  ["add-measurement", STANDARD],
  ["update-measurement", STANDARD],
  ["remove-measurement", STANDARD],
  ["subscribe-order-notifications", STANDARD],
  ["confirm-drugs-availability", STANDARD],
  ["receive-allocation", STANDARD],
  ["send-dispense-summary", STANDARD],
  ["get-pending-tasks", STANDARD],
  ["add-task", STANDARD],
  ["update-task", STANDARD],
  ["cancel-task", STANDARD],
];

export const CONTRACT_OPERATION_IDS: readonly string[] = CONTRACT_OPERATIONS.map(([id]) => id);
