import type { DatabaseSync } from "node:sqlite";

/**
 * Rolls back the transaction a failed statement left open, unless SQLite ended it itself (it does on some errors: a
 * full disk, an I/O error); the caller then throws the error that says what went wrong. Not `isTransaction`: Node
 * has it from 22.16 only, and the sandbox runs on 22.13+ (without it the transaction stayed open, and every later
 * write failed with "cannot start a transaction within a transaction").
 */
export function rollBack(db: DatabaseSync): void {
  try {
    db.exec("ROLLBACK");
  } catch {
    // No transaction was active any more.
  }
}
