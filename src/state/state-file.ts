import { closeSync, existsSync, openSync, type Stats, statSync } from "node:fs";
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { rollBack } from "./roll-back.js";
import { migrate, NewerSchema, SCHEMA_VERSION } from "./schema.js";

/** The file cannot be used as the sandbox's state: the start stops (exit 2) with this message. */
export class StateFileProblem extends Error {}

/** A change could not be written: nothing of it is in the file (`path`). */
export class StateWriteError extends Error {
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(message);
  }
}

/** One kept thing, as the file holds it: its kind, its key within the kind, its JSON. */
export interface StateRow {
  kind: string;
  key: string;
  value: string;
}

/** What one transaction writes for a workspace: everything of it cleared first, or some kinds; then rows put or deleted. */
export interface StateChange {
  clear: boolean;
  clearKinds: ReadonlySet<string>;
  /** Rows by `kind\0key`: a JSON text to put, or undefined to delete. */
  rows: ReadonlyMap<string, { kind: string; key: string; value: string | undefined }>;
  /**
   * Written, it shows that the failure health reports is over (default). Not a write of journal records alone: that
   * of a message answered 503 fits where its changes did not.
   */
  endsFailure?: boolean;
}

/** The state file as GET /__admin/health shows it. */
export interface StateFileStatus {
  path: string;
  status: "ok" | "failing";
  schemaVersion: number;
  /** The database file's size (its write-ahead log not counted). */
  bytes: number;
  lastError: string | null;
  lastErrorAt: string | null;
}

export interface StateFileSettings {
  /** The file may not grow past this many bytes: a write that would is refused as a full disk would be. */
  maxBytes: number;
  /** How long a write waits for a lock another process holds, before it fails. */
  busyTimeoutMs?: number;
  /** Refuse a path with no file (a backup of a file that is not there), instead of making a new one. */
  mustExist?: boolean;
  now?(): Date;
}

/**
 * node:sqlite, taken when a state file is asked for: a sandbox in memory never loads it. Node 22 warns on stderr that
 * it is experimental at its first load; the sandbox chose it knowingly (it is stable in Node 24), so that one
 * warning is not passed on: a start's output stays the banner.
 */
function sqlite(): typeof import("node:sqlite") {
  const emit = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === "string" ? warning : warning?.message;
    if (typeof text === "string" && text.startsWith("SQLite is an experimental feature")) return;
    return (emit as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  let module: typeof import("node:sqlite") | undefined;
  try {
    module = process.getBuiltinModule?.("node:sqlite");
  } finally {
    process.emitWarning = emit;
  }
  if (!module) {
    throw new StateFileProblem(
      `--state-file needs node:sqlite, which Node ${process.versions.node} does not have: run the sandbox on Node 22.13+ or 24.`,
    );
  }
  return module;
}

/**
 * The sandbox's state on disk: an SQLite database (node:sqlite) in WAL mode, whose commits survive a crash of the
 * process (synchronous=NORMAL: not a power cut). The sandbox keeps its state in memory and writes here what each
 * message changed, in one transaction, before the answer goes out; at start it reads every workspace back.
 *
 * @example
 *   const file = StateFile.open("/data/sandbox.db", { maxBytes: 1 << 30 });
 *   file.commit("team-a", change); // throws StateWriteError when it cannot (disk full, file removed, locked)
 */
export class StateFile {
  readonly #db: DatabaseSync;
  readonly #put: StatementSync;
  readonly #delete: StatementSync;
  readonly #clear: StatementSync;
  readonly #clearKind: StatementSync;
  readonly #setMeta: StatementSync;
  /** The file's inode at open: a write after the file was removed or replaced would go nowhere. */
  readonly #inode: number;
  #seq: number;
  /** Sandbox-wide values as this process last committed them: one unchanged since is not written again. */
  readonly #metaWritten = new Map<string, string>();
  #lastError: string | null = null;
  #lastErrorAt: Date | null = null;
  #closed = false;

  private constructor(
    readonly path: string,
    db: DatabaseSync,
    private readonly settings: StateFileSettings,
  ) {
    this.#db = db;
    this.#put = db.prepare(
      "INSERT INTO items (workspace, kind, key, seq, value) VALUES (?, ?, ?, ?, ?) ON CONFLICT (workspace, kind, key) DO UPDATE SET value = excluded.value",
    );
    this.#delete = db.prepare("DELETE FROM items WHERE workspace = ? AND kind = ? AND key = ?");
    this.#clear = db.prepare("DELETE FROM items WHERE workspace = ?");
    this.#clearKind = db.prepare("DELETE FROM items WHERE workspace = ? AND kind = ?");
    this.#setMeta = db.prepare(
      "INSERT INTO sandbox (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    );
    const last = db.prepare("SELECT max(seq) AS seq FROM items").get() as { seq: number | null };
    this.#seq = last.seq ?? 0;
    this.#inode = statSync(path).ino;
  }

  /**
   * Opens (or creates) a state file and brings its schema up to date. Throws StateFileProblem for a file that is
   * not a sandbox state file, has a newer schema, or cannot be written.
   */
  static open(path: string, settings: StateFileSettings): StateFile {
    const { DatabaseSync } = sqlite();
    let db: DatabaseSync | undefined;
    const found = statSync(path, { throwIfNoEntry: false });
    if (settings.mustExist && !found) throw new StateFileProblem(`state file ${path} does not exist`);
    // SQLite would open a device (/dev/full, /dev/null) as a database, and put its journal beside it (in /dev).
    if (found && !found.isFile()) {
      throw new StateFileProblem(
        `state file ${path} is not a regular file (${fileKind(found)}): give the path of a file (or of a new one) in a directory the sandbox can write to`,
      );
    }
    try {
      // Made readable by its owner only: it holds pharmacies' push headers and every workspace's data. SQLite gives
      // its -wal and -shm files the mode of the database file.
      if (!found) closeSync(openSync(path, "wx", 0o600));
      db = new DatabaseSync(path);
      // As a pragma, not the constructor's `timeout` option: Node has that from 22.16 only.
      db.exec(`PRAGMA busy_timeout = ${Math.trunc(settings.busyTimeoutMs ?? 250)}`);
      // Whose file it is, read before anything is written: a file that is not the sandbox's is left as it was (WAL
      // mode alone would rewrite another application's header). A file that is not a database fails here, at its
      // first read.
      const version = userVersion(db);
      if (version === 0 && tableNames(db).size > 0) {
        throw new Error("it is a database of something else (it has tables, and no sandbox schema version)");
      }
      if (version > SCHEMA_VERSION) throw new NewerSchema(version);
      if (version > 0) checkTables(db);
      const mode = db.prepare("PRAGMA journal_mode = WAL").get() as { journal_mode: string };
      if (mode.journal_mode.toLowerCase() !== "wal")
        throw new Error(`it cannot use a write-ahead log (${mode.journal_mode})`);
      db.exec("PRAGMA synchronous = NORMAL");
      db.exec(`PRAGMA max_page_count = ${maxPages(db, settings.maxBytes)}`);
      migrate(db);
      return new StateFile(path, db, settings);
    } catch (error) {
      db?.close();
      throw problem(path, error);
    }
  }

  /** The workspaces the file holds state of. */
  workspaces(): string[] {
    return (this.#db.prepare("SELECT DISTINCT workspace FROM items").all() as Array<{ workspace: string }>).map(
      (row) => row.workspace,
    );
  }

  /** Whether the file holds anything of a workspace. */
  holds(workspace: string): boolean {
    return this.#db.prepare("SELECT 1 FROM items WHERE workspace = ? LIMIT 1").get(workspace) !== undefined;
  }

  /**
   * A workspace's rows of one kind (`only`), or of every other kind, in the order they were first written, read as
   * they are taken: a start can keep each record as it comes instead of holding every row's text at once.
   */
  read(workspace: string, kind: string, only: boolean): Iterable<StateRow> {
    const sql = `SELECT kind, key, value FROM items WHERE workspace = ? AND kind ${only ? "=" : "<>"} ? ORDER BY seq`;
    return this.#db.prepare(sql).iterate(workspace, kind) as Iterable<StateRow>;
  }

  /** Every row of a workspace, in the order they were first written. */
  rows(workspace: string): StateRow[] {
    return this.#db
      .prepare("SELECT kind, key, value FROM items WHERE workspace = ? ORDER BY seq")
      .all(workspace) as unknown as StateRow[];
  }

  /** A sandbox-wide value (the call-id counter), if written. */
  meta(key: string): string | undefined {
    const row = this.#db.prepare("SELECT value FROM sandbox WHERE key = ?").get(key) as { value: string } | undefined;
    return row?.value;
  }

  /**
   * Writes one workspace's changes, in their order, and sandbox-wide values, in one transaction: all of it or, on a
   * failure (StateWriteError), none of it.
   */
  commit(workspace: string, changes: StateChange | readonly StateChange[], meta?: Record<string, string>): void {
    const list: readonly StateChange[] = Array.isArray(changes) ? changes : [changes as StateChange];
    if (this.#closed) throw new StateWriteError("the state file is closed: the sandbox is stopping", this.path);
    const seq = this.#seq;
    try {
      this.#checkStillThere();
      this.#db.exec("BEGIN IMMEDIATE");
      try {
        for (const change of list) this.#apply(workspace, change);
        const changed: Array<[string, string]> = [];
        for (const [key, value] of Object.entries(meta ?? {})) {
          if (this.#metaWritten.get(key) === value) continue;
          this.#setMeta.run(key, value);
          changed.push([key, value]);
        }
        this.#db.exec("COMMIT");
        for (const [key, value] of changed) this.#metaWritten.set(key, value);
      } catch (error) {
        rollBack(this.#db);
        throw error;
      }
      // Written again: the failure is over (health shows the current one, not history).
      if (list.some((change) => change.endsFailure !== false)) {
        this.#lastError = null;
        this.#lastErrorAt = null;
      }
    } catch (error) {
      this.#seq = seq;
      this.#lastError = messageOf(error);
      this.#lastErrorAt = this.settings.now?.() ?? new Date();
      throw new StateWriteError(this.#lastError, this.path);
    }
  }

  #apply(workspace: string, change: StateChange): void {
    if (change.clear) this.#clear.run(workspace);
    for (const kind of change.clearKinds) this.#clearKind.run(workspace, kind);
    for (const row of change.rows.values()) {
      if (row.value === undefined) this.#delete.run(workspace, row.kind, row.key);
      else this.#put.run(workspace, row.kind, row.key, ++this.#seq, row.value);
    }
  }

  /** A consistent copy of the whole file at `target` (VACUUM INTO), taken while the sandbox serves. */
  backup(target: string): void {
    if (existsSync(target)) throw new Error(`${target} exists already: the copy goes to a new file`);
    this.#db.prepare("VACUUM INTO ?").run(target);
  }

  status(): StateFileStatus {
    let bytes = 0;
    try {
      bytes = statSync(this.path).size;
    } catch {
      // Removed: the status says why it fails.
    }
    return {
      path: this.path,
      status: this.#lastError === null ? "ok" : "failing",
      schemaVersion: SCHEMA_VERSION,
      bytes,
      lastError: this.#lastError,
      lastErrorAt: this.#lastErrorAt?.toISOString() ?? null,
    };
  }

  /** Lets go of the file without checkpointing it (another process, a running sandbox, may be writing it). */
  release(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#db.close();
  }

  /** Stops writing: the log is checkpointed into the file, which is then whole on its own. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    } catch {
      // Whatever is in the log is read back at the next start all the same.
    }
    this.#db.close();
  }

  #checkStillThere(): void {
    const now = statSync(this.path, { throwIfNoEntry: false });
    if (now === undefined) throw new Error(`${this.path} was removed while the sandbox ran`);
    if (now.ino !== this.#inode) throw new Error(`${this.path} was replaced by another file while the sandbox ran`);
  }
}

/** The page count that keeps the file within `maxBytes` (a write past it fails as SQLITE_FULL). */
function maxPages(db: DatabaseSync, maxBytes: number): number {
  const { page_size } = db.prepare("PRAGMA page_size").get() as { page_size: number };
  return Math.max(1, Math.floor(maxBytes / page_size));
}

/** A file at version ≥ 1 must have the tables its version says: another application's database does not. */
function checkTables(db: DatabaseSync): void {
  const tables = tableNames(db);
  for (const table of ["items", "sandbox"]) {
    if (!tables.has(table)) throw new Error(`it has no ${table} table: it is not a sandbox state file`);
  }
}

function tableNames(db: DatabaseSync): Set<string> {
  const rows = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>;
  return new Set(rows.map((row) => row.name));
}

function userVersion(db: DatabaseSync): number {
  return Number((db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version);
}

function problem(path: string, error: unknown): StateFileProblem {
  if (error instanceof StateFileProblem) return error;
  if (error instanceof NewerSchema) {
    return new StateFileProblem(
      `state file ${path}: ${error.message}; it was written by a newer uae-fhir-sandbox. Run that version (or newer), or start with another --state-file.`,
    );
  }
  return new StateFileProblem(
    `state file ${path} cannot be used: ${messageOf(error)}. It must be a state file this sandbox wrote (or a new path), in a directory the sandbox can write to.`,
  );
}

function fileKind(stat: Stats): string {
  if (stat.isDirectory()) return "a directory";
  if (stat.isCharacterDevice() || stat.isBlockDevice()) return "a device";
  if (stat.isFIFO()) return "a named pipe";
  if (stat.isSocket()) return "a socket";
  return "not a file";
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
