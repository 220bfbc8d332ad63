import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it } from "vitest";
import { killStray, runToExit, startCli } from "../cli/cli-process.js";
import { tempDir } from "./state-support.js";

// A state file the sandbox must not use stops the start: exit 2 (a problem of the command line, as a bad flag
// value is), a message on stderr that names the file and the problem, and the file left exactly as it was — never
// a silent empty start over someone's data.

afterEach(killStray);

const dirs: Array<{ remove(): void }> = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) dir.remove();
});

function stateDir() {
  const dir = tempDir();
  dirs.push(dir);
  return dir;
}

/** Starts `serve` on `file` and expects the refusal: exit 2, stderr naming the file and matching `problem`. */
async function expectRefused(file: string, problem: RegExp, extra: string[] = []) {
  const run = await runToExit(["serve", "--port", "0", "--host", "127.0.0.1", "--state-file", file, ...extra]);
  expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 2, stdout: "" });
  expect(run.stderr).toContain("could not start");
  expect(run.stderr).toContain(file);
  expect(run.stderr).toMatch(problem);
  return run;
}

/** The file's bytes and its directory's names: what must not change. */
function snapshot(dir: string, file: string) {
  return { names: readdirSync(dir).sort(), bytes: readFileSync(file) };
}

function expectUntouched(dir: string, file: string, before: ReturnType<typeof snapshot>) {
  const after = snapshot(dir, file);
  // No write-ahead log or shared-memory file appeared beside it either.
  expect(after.names).toEqual(before.names);
  expect(after.bytes.equals(before.bytes)).toBe(true);
}

/** A state file as the sandbox writes it: started on a new path, one message's worth of rows, stopped. */
async function sandboxFile(file: string): Promise<void> {
  const { child } = await startCli(["--state-file", file]);
  child.process.kill("SIGTERM");
  expect((await child.waitForExit()).code).toBe(0);
}

describe("a start on a file that is not this sandbox's state (real CLI)", { timeout: 60_000 }, () => {
  it("random bytes: exit 2, 'not a database', the file untouched", async () => {
    const { dir, file } = stateDir();
    writeFileSync(file, randomBytes(16 * 1024));
    const before = snapshot(dir, file);
    await expectRefused(file, /not a database/);
    expectUntouched(dir, file, before);
  });

  it("a text file: exit 2, 'not a database', the file untouched", async () => {
    const { dir, file } = stateDir();
    writeFileSync(file, "patient,allergy\n784-1985-5000001-3,peanut\n".repeat(200));
    const before = snapshot(dir, file);
    await expectRefused(file, /not a database/);
    expectUntouched(dir, file, before);
  });

  it("another application's SQLite database (tables of its own, user_version 0): exit 2, the file untouched", async () => {
    const { dir, file } = stateDir();
    const other = new DatabaseSync(file);
    other.exec("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL); INSERT INTO invoices VALUES (1, 99.5);");
    other.close();
    const before = snapshot(dir, file);
    await expectRefused(file, /database of something else/);
    expectUntouched(dir, file, before);
  });

  it("another application's database that has a user_version of its own, and not the sandbox's tables: exit 2, untouched", async () => {
    const { dir, file } = stateDir();
    const other = new DatabaseSync(file);
    other.exec("CREATE TABLE invoices (id INTEGER PRIMARY KEY); PRAGMA user_version = 1;");
    other.close();
    const before = snapshot(dir, file);
    await expectRefused(file, /no items table/);
    expectUntouched(dir, file, before);
  });

  it("a state file of a newer schema (user_version above this sandbox's): exit 2 naming both versions, untouched", async () => {
    const { dir, file } = stateDir();
    await sandboxFile(file);
    const newer = new DatabaseSync(file);
    newer.exec("PRAGMA user_version = 7");
    newer.close();
    const before = snapshot(dir, file);
    const run = await expectRefused(file, /schema is version 7, newer than this sandbox reads \(1\)/);
    expect(run.stderr).toMatch(/newer uae-fhir-sandbox/);
    expectUntouched(dir, file, before);
  });

  it("the same file at the current version starts (the refusals above are of the file, not of the path)", async () => {
    const { file } = stateDir();
    await sandboxFile(file);
    const { child } = await startCli(["--state-file", file]);
    child.process.kill("SIGTERM");
    expect((await child.waitForExit()).code).toBe(0);
  });
});

// Where the file cannot be written at all. The sandbox finds out when it opens it (SQLite creates the file and its
// schema at once), so these stop the start with exit 2 too: the operator fixes the path before anything is answered.
describe("a state file that cannot be written (real CLI)", { timeout: 60_000 }, () => {
  it("/dev/full: refused as not a regular file, and nothing is created beside it in /dev", async () => {
    const left = ["/dev/full-journal", "/dev/full-wal", "/dev/full-shm"].filter((f) => !existsSync(f));
    await expectRefused("/dev/full", /not a regular file \(a device\)/);
    for (const file of left) expect({ file, exists: existsSync(file) }).toEqual({ file, exists: false });
  });

  it("a symbolic link to /dev/full: refused the same way", async () => {
    const { dir } = stateDir();
    const link = join(dir, "sandbox.db");
    const { symlinkSync } = await import("node:fs");
    symlinkSync("/dev/full", link);
    await expectRefused(link, /not a regular file \(a device\)/);
  });

  it("a directory: refused as not a regular file", async () => {
    const { dir } = stateDir();
    await expectRefused(dir, /not a regular file \(a directory\)/);
  });

  it("a file in a directory that does not exist: exit 2, 'unable to open'", async () => {
    const { dir } = stateDir();
    const file = join(dir, "missing", "sandbox.db");
    await expectRefused(file, /unable to open database file|no such file or directory/);
    expect(existsSync(join(dir, "missing"))).toBe(false);
  });

  it("a new file larger than --max-state-file allows (a disk full at the first write): exit 2 saying the disk is full", async () => {
    const { file } = stateDir();
    // One page: the schema alone needs more. SQLite ends the transaction itself here; the message must still be
    // the full disk, not the failed ROLLBACK after it.
    const run = await expectRefused(file, /database or disk is full/, ["--max-state-file", "4kb"]);
    expect(run.stderr).not.toMatch(/no transaction is active/);
    // Room given: the same path starts.
    const { child } = await startCli(["--state-file", file]);
    child.process.kill("SIGTERM");
    expect((await child.waitForExit()).code).toBe(0);
  });

  // Root writes into a read-only directory all the same (the suite may run as root in a container): the case is
  // the one above then.
  it.skipIf(process.getuid?.() === 0)("a new file in a read-only directory: exit 2, 'unable to open'", async () => {
    const { dir } = stateDir();
    const readOnly = join(dir, "read-only");
    mkdirSync(readOnly);
    chmodSync(readOnly, 0o555);
    try {
      await expectRefused(join(readOnly, "sandbox.db"), /unable to open database file|readonly|permission denied/);
      expect(readdirSync(readOnly)).toEqual([]);
    } finally {
      chmodSync(readOnly, 0o755);
    }
  });
});
