import { renameSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it } from "vitest";
import {
  type StateChange,
  StateFile,
  StateFileProblem,
  type StateRow,
  StateWriteError,
} from "../../src/state/state-file.js";
import { tempDir } from "./state-support.js";

// StateFile, the database under --state-file: one transaction per commit, all of it or none of it.

const dirs: Array<{ remove(): void }> = [];
const files: StateFile[] = [];
afterEach(() => {
  for (const file of files.splice(0)) file.release();
  for (const dir of dirs.splice(0)) dir.remove();
});

function openFile(settings: Partial<Parameters<typeof StateFile.open>[1]> = {}, path?: string) {
  const dir = tempDir();
  dirs.push(dir);
  const file = StateFile.open(path ?? dir.file, { maxBytes: 64 * 1024 * 1024, ...settings });
  files.push(file);
  return { file, dir };
}

type Row = { kind: string; key: string; value: string | undefined };
function change(rows: Row[], options: Partial<StateChange> = {}): StateChange {
  return {
    clear: false,
    clearKinds: new Set(),
    rows: new Map(rows.map((r) => [`${r.kind}\0${r.key}`, r])),
    ...options,
  };
}

const row = (kind: string, key: string, value: unknown = { key }): Row => ({
  kind,
  key,
  value: JSON.stringify(value),
});
const keysOf = (rows: StateRow[]) => rows.map((r) => `${r.kind}/${r.key}`);

/** The error a commit threw (it must throw). */
function failure(fn: () => void): StateWriteError {
  try {
    fn();
  } catch (error) {
    return error as StateWriteError;
  }
  throw new Error("the commit did not fail");
}

describe("StateFile.commit", () => {
  it("writes a change's rows and the sandbox-wide values; rows read back in the order first written", () => {
    const { file } = openFile();
    file.commit("team-a", change([row("patient", "p1"), row("record", "r1")]), { highestCallId: "7" });
    file.commit("team-a", change([row("record", "r2"), row("patient", "p1", { key: "p1", v: 2 })]));
    file.commit("team-b", change([row("patient", "q1")]));

    expect(keysOf(file.rows("team-a"))).toEqual(["patient/p1", "record/r1", "record/r2"]);
    expect(file.rows("team-a")[0]?.value).toBe(JSON.stringify({ key: "p1", v: 2 }));
    expect(file.workspaces().sort()).toEqual(["team-a", "team-b"]);
    expect(file.meta("highestCallId")).toBe("7");
  });

  it("a statement that fails in the middle leaves nothing of the change: not the rows before it, not a clear, not the meta", () => {
    const { file } = openFile();
    file.commit("team-a", change([row("patient", "p1"), row("record", "r1")]), { highestCallId: "1" });

    // The second row breaks a NOT NULL constraint: the first row, the delete and the clear before it must go too.
    const broken = change(
      [
        row("record", "r2"),
        { kind: "record", key: "r1", value: undefined },
        { kind: null as unknown as string, key: "bad", value: "{}" },
        row("record", "r3"),
      ],
      { clearKinds: new Set(["patient"]) },
    );
    const error = failure(() => file.commit("team-a", broken, { highestCallId: "2" }));

    expect(error).toBeInstanceOf(StateWriteError);
    expect(error.path).toBe(file.path);
    expect(error.message).toMatch(/NOT NULL/);
    expect(keysOf(file.rows("team-a"))).toEqual(["patient/p1", "record/r1"]);
    expect(file.meta("highestCallId")).toBe("1");
    expect(file.status()).toMatchObject({ status: "failing", lastError: error.message });

    // The file is whole: the next change is written, after the rows that were there.
    file.commit("team-a", change([row("record", "r4")]));
    expect(keysOf(file.rows("team-a"))).toEqual(["patient/p1", "record/r1", "record/r4"]);
    expect(file.status()).toMatchObject({ status: "ok", lastError: null, lastErrorAt: null });
  });

  it("a workspace cleared in a change that fails is not cleared", () => {
    const { file } = openFile();
    file.commit("team-a", change([row("patient", "p1")]));
    const error = failure(() =>
      file.commit("team-a", change([{ kind: "x", key: null as unknown as string, value: "{}" }], { clear: true })),
    );
    expect(error).toBeInstanceOf(StateWriteError);
    expect(keysOf(file.rows("team-a"))).toEqual(["patient/p1"]);
  });

  it("a change that does not fit under maxBytes fails as a full disk, and none of it is written", () => {
    const { file } = openFile({ maxBytes: 64 * 1024 });
    file.commit("team-a", change([row("patient", "p1")]));
    // A small row first, then one far larger than the file may grow.
    const error = failure(() =>
      file.commit("team-a", change([row("record", "small"), row("record", "huge", { text: "x".repeat(256 * 1024) })])),
    );
    expect(error.message).toMatch(/database or disk is full/);
    expect(keysOf(file.rows("team-a"))).toEqual(["patient/p1"]);
    expect(file.status()).toMatchObject({ status: "failing" });
    expect(file.status().lastErrorAt).not.toBeNull();
  });

  it("a write of journal records alone (endsFailure false) does not end a failure; a change does", () => {
    const { file } = openFile({ maxBytes: 64 * 1024 });
    failure(() => file.commit("team-a", change([row("record", "huge", { text: "x".repeat(256 * 1024) })])));
    file.commit("team-a", change([row("call", "9")], { endsFailure: false }));
    expect(file.status().status).toBe("failing");
    file.commit("team-a", change([row("patient", "p1")]));
    expect(file.status().status).toBe("ok");
  });

  it("the file removed, or replaced by another, while open: the write fails saying so", () => {
    const { file, dir } = openFile();
    file.commit("team-a", change([row("patient", "p1")]));
    unlinkSync(file.path);
    expect(failure(() => file.commit("team-a", change([row("patient", "p2")]))).message).toMatch(/was removed/);

    const second = openFile({}, join(dir.dir, "second.db")).file;
    second.commit("team-a", change([row("patient", "p1")]));
    writeFileSync(join(dir.dir, "other.db"), "");
    renameSync(join(dir.dir, "other.db"), second.path);
    expect(failure(() => second.commit("team-a", change([row("patient", "p2")]))).message).toMatch(/was replaced/);
  });

  it("another connection holding the write lock: the write fails after the busy timeout, and succeeds once it is free", () => {
    const { file } = openFile({ busyTimeoutMs: 50 });
    const other = new DatabaseSync(file.path);
    try {
      other.exec("BEGIN IMMEDIATE");
      expect(failure(() => file.commit("team-a", change([row("patient", "p1")]))).message).toMatch(/locked/);
      other.exec("ROLLBACK");
      file.commit("team-a", change([row("patient", "p1")]));
      expect(keysOf(file.rows("team-a"))).toEqual(["patient/p1"]);
    } finally {
      other.close();
    }
  });

  it("after close, commits are refused as StateWriteError (the sandbox is stopping)", () => {
    const { file } = openFile();
    file.close();
    expect(failure(() => file.commit("team-a", change([row("patient", "p1")]))).message).toMatch(/closed/);
  });
});

describe("StateFile.open", () => {
  it("refuses a file that is not a database as StateFileProblem naming it", () => {
    const dir = tempDir();
    dirs.push(dir);
    writeFileSync(dir.file, "not a database, a text file\n".repeat(100));
    expect(() => StateFile.open(dir.file, { maxBytes: 1 << 20 })).toThrow(StateFileProblem);
    expect(() => StateFile.open(dir.file, { maxBytes: 1 << 20 })).toThrow(dir.file);
  });

  it("mustExist: a path with no file is refused, and no file is made", () => {
    const dir = tempDir();
    dirs.push(dir);
    expect(() => StateFile.open(dir.file, { maxBytes: 1 << 20, mustExist: true })).toThrow(/does not exist/);
    expect(() => new DatabaseSync(dir.file, { open: true, readOnly: true })).toThrow();
  });
});
