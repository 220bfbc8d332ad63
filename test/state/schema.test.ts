import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it } from "vitest";
import { type Migration, migrate, NewerSchema } from "../../src/state/schema.js";
import { tempDir } from "./state-support.js";

// The schema's versions: a file carries its version in PRAGMA user_version, and opening it runs the steps it has
// not had, all of them in one transaction. The sandbox has one version today, so the steps here are hand-written.

const STEP_1: Migration = { to: 1, sql: "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);" };
const STEP_2: Migration = {
  to: 2,
  sql: "ALTER TABLE notes ADD COLUMN author TEXT NOT NULL DEFAULT 'unknown'; CREATE TABLE tags (note INTEGER, tag TEXT);",
};

const dirs: Array<{ remove(): void }> = [];
const dbs: DatabaseSync[] = [];
afterEach(() => {
  for (const db of dbs.splice(0)) {
    try {
      db.close();
    } catch {
      // Closed by the test already.
    }
  }
  for (const dir of dirs.splice(0)) dir.remove();
});

function database(): { db: DatabaseSync; file: string } {
  const dir = tempDir();
  dirs.push(dir);
  const db = new DatabaseSync(dir.file);
  dbs.push(db);
  return { db, file: dir.file };
}

const version = (db: DatabaseSync) =>
  Number((db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version);
const tables = (db: DatabaseSync) =>
  (
    db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as Array<{ name: string }>
  ).map((t) => t.name);
/** No transaction left open: a new one begins (`isTransaction` is Node 22.16+; the project runs on 22.13+). */
function expectNoTransaction(db: DatabaseSync): void {
  expect(() => db.exec("BEGIN")).not.toThrow();
  db.exec("ROLLBACK");
}
const columns = (db: DatabaseSync, table: string) =>
  (db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).map((c) => c.name);

describe("migrate", () => {
  it("a new file (version 0) gets every step, and the last version", () => {
    const { db } = database();
    expect(migrate(db, [STEP_1, STEP_2])).toBe(0);
    expect(version(db)).toBe(2);
    expect(tables(db)).toEqual(["notes", "tags"]);
    expect(columns(db, "notes")).toEqual(["id", "text", "author"]);
  });

  it("a file at step 1 gets step 2 only, and keeps its rows", () => {
    const { db, file } = database();
    migrate(db, [STEP_1]);
    db.exec("INSERT INTO notes (text) VALUES ('written at version 1')");
    db.close();

    // Opened by a newer sandbox: step 1 again would fail (the table exists), so it must not run.
    const later = new DatabaseSync(file);
    dbs.push(later);
    expect(migrate(later, [STEP_1, STEP_2])).toBe(1);
    expect(version(later)).toBe(2);
    expect(later.prepare("SELECT text, author FROM notes").all()).toEqual([
      { text: "written at version 1", author: "unknown" },
    ]);
    expect(tables(later)).toEqual(["notes", "tags"]);
  });

  it("a file at the last version is left as it is", () => {
    const { db } = database();
    migrate(db, [STEP_1, STEP_2]);
    db.exec("INSERT INTO notes (text) VALUES ('kept')");
    expect(migrate(db, [STEP_1, STEP_2])).toBe(2);
    expect(db.prepare("SELECT count(*) AS n FROM notes").get()).toEqual({ n: 1 });
  });

  it("a file of a newer version throws NewerSchema with the version found, and is not changed", () => {
    const { db } = database();
    migrate(db, [STEP_1, STEP_2]);
    db.exec("PRAGMA user_version = 3");
    let thrown: unknown;
    try {
      migrate(db, [STEP_1, STEP_2]);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(NewerSchema);
    expect((thrown as NewerSchema).found).toBe(3);
    expect((thrown as Error).message).toMatch(/version 3/);
    expect(version(db)).toBe(3);
    expectNoTransaction(db);
  });

  it("a step that fails half-way leaves the file at its version, with nothing of the steps", () => {
    const { db } = database();
    migrate(db, [STEP_1]);
    const broken: Migration = { to: 2, sql: "CREATE TABLE tags (note INTEGER); CREATE TABLE notes (again TEXT);" };
    expect(() => migrate(db, [STEP_1, broken])).toThrow(/already exists/);
    expect(version(db)).toBe(1);
    expect(tables(db)).toEqual(["notes"]);
    expectNoTransaction(db);
  });

  it("a new file on a full disk: the error says the disk is full, and nothing is written", () => {
    const { db } = database();
    // One page: the first step's table needs another.
    db.exec("PRAGMA journal_mode = WAL; PRAGMA max_page_count = 1");
    expect(() => migrate(db, [STEP_1, STEP_2])).toThrow(/full/);
    expect(version(db)).toBe(0);
    expect(tables(db)).toEqual([]);
    expectNoTransaction(db);
  });

  it("a step whose error ended the transaction already (as an I/O error or a full disk may): that error is the one thrown", () => {
    const { db } = database();
    // RAISE(ROLLBACK) ends the whole transaction, as SQLite does itself on some errors: a ROLLBACK after it fails
    // with "no transaction is active", which must not hide the error that says what went wrong.
    const ending: Migration = {
      to: 1,
      sql: "CREATE TABLE t (x); CREATE TRIGGER guard BEFORE INSERT ON t BEGIN SELECT RAISE(ROLLBACK, 'the step was refused'); END; INSERT INTO t VALUES (1);",
    };
    expect(() => migrate(db, [ending])).toThrow(/the step was refused/);
    expect(version(db)).toBe(0);
    expect(tables(db)).toEqual([]);
    expectNoTransaction(db);
  });
});
