import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { StateFile, type StateWriteError } from "../../src/state/state-file.js";
import { WorkspaceState } from "../../src/state/workspace-state.js";

// When a workspace's changes reach the file: a message's together with its call's record, in one transaction;
// changes outside a message at the end of their task. Read back with a connection of the test's own.

let dir: string;
let file: StateFile;
let failures: StateWriteError[];
let state: WorkspaceState;

/** The rows of the file as another connection sees them: committed ones only. */
function committed(): string[] {
  const db = new DatabaseSync(join(dir, "state.db"), { readOnly: true });
  try {
    const rows = db.prepare("SELECT kind, key, value FROM items ORDER BY seq").all() as Array<Record<string, string>>;
    return rows.map((r) => `${r.kind}/${r.key}=${r.value}`);
  } finally {
    db.close();
  }
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "workspace-state-"));
  file = StateFile.open(join(dir, "state.db"), { maxBytes: 1 << 30 });
  failures = [];
  state = new WorkspaceState(file, "team-a", { meta: () => ({}), failed: (e) => failures.push(e) });
});
afterEach(() => {
  file.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("a workspace's changes in the state file", () => {
  it("writes a message's changes only with its call's record, in one transaction", () => {
    const { value } = state.within(() => {
      state.put("record", "AllergyIntolerance/1", () => ({ v: 1 }));
      return "answered";
    }, "7");
    expect(value).toBe("answered");
    expect(state.holds("7")).toBe(true);
    // Processed, not recorded: nothing of it is in the file yet.
    expect(committed()).toEqual([]);
    expect(state.recorded("7", () => ({ id: "7" }))).toBeUndefined();
    expect(committed()).toEqual(['record/AllergyIntolerance/1={"v":1}', 'call/7={"id":"7"}']);
    expect(state.holds("7")).toBe(false);
  });

  it("writes a thing as it is when written, once, however often it changed", () => {
    const thing = { v: 1 };
    state.within(() => {
      state.put("order", "1", () => thing);
      thing.v = 2;
      state.put("order", "1", () => thing);
    }, "8");
    thing.v = 3;
    state.recorded("8", () => ({}));
    expect(committed()).toEqual(['order/1={"v":3}', "call/8={}"]);
  });

  it("keeps nothing of a message whose record could not be written", () => {
    const other = new DatabaseSync(join(dir, "state.db"));
    other.exec("BEGIN IMMEDIATE");
    state.within(() => state.put("record", "Condition/1", () => ({})), "9");
    const error = state.recorded("9", () => ({}));
    other.exec("ROLLBACK");
    other.close();
    expect(error?.message).toMatch(/locked|busy/i);
    expect(error?.path).toBe(join(dir, "state.db"));
    expect(committed()).toEqual([]);
    expect(file.status()).toMatchObject({ status: "failing" });
    // The next write goes through, and the status is ok again.
    state.within(() => state.put("record", "Condition/2", () => ({})), "10");
    expect(state.recorded("10", () => ({}))).toBeUndefined();
    expect(committed()).toEqual(["record/Condition/2={}", "call/10={}"]);
    expect(file.status()).toMatchObject({ status: "ok", lastError: null });
  });

  it("writes a change outside a message at the end of its task", async () => {
    state.put("pharmacy", "PH-1", () => ({ licence: "PH-1" }));
    state.remove("order", "3");
    expect(committed()).toEqual([]);
    await Promise.resolve();
    expect(committed()).toEqual(['pharmacy/PH-1={"licence":"PH-1"}']);
    expect(failures).toEqual([]);
  });

  it("clears the workspace first when told to, and writes nothing while muted", () => {
    state.within(() => state.put("patient", "p1", () => ({})));
    expect(committed()).toEqual(["patient/p1={}"]);
    state.muted(() => state.put("patient", "p2", () => ({})));
    const { error } = state.within(() => {
      state.removeEverything();
      state.put("patient", "p3", () => ({}));
    });
    expect(error).toBeUndefined();
    expect(committed()).toEqual(["patient/p3={}"]);
  });
});
