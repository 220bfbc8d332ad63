import type { DatabaseSync } from "node:sqlite";
import { rollBack } from "./roll-back.js";

/** One step of the schema: the statements that take a file from the version before `to` to `to`. */
export interface Migration {
  to: number;
  sql: string;
}

/**
 * The state file's schema, one migration per version. A file carries its version in `PRAGMA user_version`
 * (0: a new, empty file); opening one runs the steps it has not had, in one transaction. Add a version by
 * appending a step: never edit one that shipped.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    to: 1,
    // One row per kept thing (a patient, a record, an order, a journal call, …) of a workspace, as JSON: the
    // sandbox holds its state in memory and writes what a message changed; `seq` keeps the order things came in
    // (a patient's records, the journal), which a restart rebuilds. A rowid table, not WITHOUT ROWID: rows are
    // large (a journal call about 5 KB), and a WITHOUT ROWID table keeps them in its key's B-tree, a few to a page,
    // so every write and the start's read in `seq` order walk a deep tree (SQLite advises WITHOUT ROWID for rows
    // under a twentieth of a page).
    sql: `
      CREATE TABLE items (
        workspace TEXT NOT NULL,
        kind TEXT NOT NULL,
        key TEXT NOT NULL,
        seq INTEGER NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (workspace, kind, key)
      );
      CREATE INDEX items_in_order ON items (workspace, seq);
      CREATE TABLE sandbox (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
    `,
  },
];

/** The version this sandbox writes: the last step's. */
export const SCHEMA_VERSION = MIGRATIONS.at(-1)?.to ?? 0;

/** The file's schema is newer than this sandbox knows: it must not be read (or written) by it. */
export class NewerSchema extends Error {
  constructor(readonly found: number) {
    super(`its schema is version ${found}, newer than this sandbox reads (${SCHEMA_VERSION})`);
  }
}

/**
 * Brings the file to the last version of `migrations`: nothing when it is there, the missing steps in one
 * transaction when it is older. Returns the version it had.
 */
export function migrate(db: DatabaseSync, migrations: readonly Migration[] = MIGRATIONS): number {
  const last = migrations.at(-1)?.to ?? 0;
  const found = Number((db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version);
  if (found > last) throw new NewerSchema(found);
  if (found === last) return found;
  db.exec("BEGIN IMMEDIATE");
  try {
    for (const step of migrations) if (step.to > found) db.exec(step.sql);
    // PRAGMA takes no parameters; `last` is a number from the table above.
    db.exec(`PRAGMA user_version = ${Math.trunc(last)}`);
    db.exec("COMMIT");
  } catch (error) {
    // SQLite ends the transaction itself on some errors (a full disk): a ROLLBACK's own error then ("no transaction
    // is active") must not hide the one that says what went wrong.
    rollBack(db);
    throw error;
  }
  return found;
}
