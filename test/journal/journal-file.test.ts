import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Patient } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type SandboxApp } from "../../src/app.js";
import { SandboxEvents } from "../../src/events.js";
import type { CallDraft } from "../../src/journal/call-record.js";
import { Journal } from "../../src/journal/journal.js";
import { JournalFile } from "../../src/journal/journal-file.js";
import { messageBundle, post } from "../support/messages.js";

// --journal-file across restarts, in-process: the next start numbers calls after every id a client
// may have seen, however long the lines, whatever order calls ended in, after a crash cut a line off.

const dirs: string[] = [];
const open: SandboxApp[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function journalPath(): string {
  const dir = mkdtempSync(join(tmpdir(), "journal-file-"));
  dirs.push(dir);
  return join(dir, "calls.ndjson");
}

/** A sandbox writing `file`; what it logs is kept in `log`. */
function start(file: string, log: string[] = []): SandboxApp {
  const sandbox = createApp(
    { journalFile: file, maxBody: 4 * MiB },
    { logger: { info: (m) => log.push(m), error: (m) => log.push(m) } },
  );
  open.push(sandbox);
  return sandbox;
}

const MiB = 1024 * 1024;
const patient: Patient = {
  resourceType: "Patient",
  identifier: [{ system: "urn:ae:emirates-id", value: "784-1980-1212121-0" }],
};
const smallCall = (s: SandboxApp) => post(s.app, messageBundle("view-patient-profile", [patient]));
/** The call id the sandbox gave an answer. */
const callId = async (reply: Promise<{ headers: Headers }> | { headers: Headers }) =>
  (await reply).headers.get("x-sandbox-call-id");

const ids = (file: string) =>
  readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => (JSON.parse(l) as { id: string }).id);

/**
 * A call whose body the test sends when it likes (`bytes` of it): the call has its id, reserved at its
 * start, while it waits. `started` resolves once the sandbox is reading the body.
 */
function heldCall(s: SandboxApp, bytes: number) {
  let release!: () => void;
  let reading!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const started = new Promise<void>((resolve) => {
    reading = resolve;
  });
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      reading();
      await released;
      controller.enqueue(new TextEncoder().encode("x".repeat(bytes)));
      controller.close();
    },
  });
  const answer = s.app.request("/uae-fhir/r4/$process-message", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
    duplex: "half",
  } as RequestInit);
  return { answer, started, release };
}

describe("--journal-file: ids continue after a restart", () => {
  it("after a last line longer than 1 MiB (a 1.5 MB request)", async () => {
    const file = journalPath();
    const first = start(file);
    expect(await callId(smallCall(first))).toBe("1");
    const big = await first.app.request("/uae-fhir/r4/$process-message", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "x".repeat(1.5 * MiB),
    });
    expect(big.headers.get("x-sandbox-call-id")).toBe("2");
    first.close();
    expect(readFileSync(file, "utf8").split("\n")[1]?.length).toBeGreaterThan(1.5 * MiB);

    const second = start(file);
    expect(await callId(smallCall(second))).toBe("3");
    expect(ids(file)).toEqual(["1", "2", "3"]);
  });

  it("when the last line is not the highest id: a call that started first and ended last, with a long line", async () => {
    const file = journalPath();
    const first = start(file);
    // Call 1 starts and waits for its body; call 2 starts and ends; then call 1 ends, written last.
    const held = heldCall(first, 1.5 * MiB);
    await held.started;
    expect(await callId(smallCall(first))).toBe("2");
    held.release();
    expect(await callId(held.answer)).toBe("1");
    expect(ids(file)).toEqual(["2", "1"]);
    first.close();

    const second = start(file);
    expect(await callId(smallCall(second))).toBe("3");
  });

  it("after a crash with calls in flight: no id a client was answered with is handed out again", async () => {
    const file = journalPath();
    const first = start(file);
    const held = heldCall(first, 10);
    await held.started;
    // Call 1 is in flight; calls 2 and 3 are answered. The process "crashes" now: the file is left as it is.
    const answered = [await callId(smallCall(first)), await callId(smallCall(first))];
    expect(answered).toEqual(["2", "3"]);

    const second = start(file);
    // After the last line's highestIdIssued (3): call 1, in flight, never reached the file nor a client.
    expect(await callId(smallCall(second))).toBe("4");
    held.release();
    await held.answer;
  });

  it("a file written before lines carried highestIdIssued: after the highest id anywhere in it", async () => {
    const file = journalPath();
    writeFileSync(file, ["5", "9", "7"].map((id) => `${JSON.stringify({ id, direction: "inbound" })}\n`).join(""));
    const sandbox = start(file);
    expect(await callId(smallCall(sandbox))).toBe("10");
  });
});

describe("--journal-file: lines that are no call (issue 21)", () => {
  /** A call's line as builds before 0.1.0 wrote it when its request body was pretty-printed: split at each break. */
  const splitLine = (id: string, highestIdIssued: string) =>
    `{"id":"${id}","highestIdIssued":"${highestIdIssued}","direction":"inbound","request":{"method":"POST","body":{\n  "content": "{}"\n}\n},"response":null}\n`;

  it("a file whose every call was split at its body's line breaks: ids continue after the highest, with a warning", async () => {
    const file = journalPath();
    writeFileSync(file, splitLine("1", "1") + splitLine("2", "3") + splitLine("3", "3"));
    const log: string[] = [];
    const sandbox = start(file, log);
    expect(await callId(smallCall(sandbox))).toBe("4");
    const warning = log.find((l) => l.includes("no recorded call"));
    expect(warning).toContain(file);
    expect(warning).toContain("Call ids continue at 4");
    expect(existsSync(`${file}.cut-off`)).toBe(false);
  });

  it("a split call after the last whole line: ids continue after it, not after the whole line", async () => {
    const file = journalPath();
    const first = start(file);
    await smallCall(first);
    await smallCall(first);
    first.close();
    appendFileSync(file, splitLine("3", "3"));
    const log: string[] = [];
    const second = start(file, log);
    expect(await callId(smallCall(second))).toBe("4");
    expect(log.some((l) => l.includes("no recorded call"))).toBe(true);
  });

  it("a last line that is JSON but no call, without its newline: the next call gets a line of its own", async () => {
    const file = journalPath();
    writeFileSync(file, `${JSON.stringify({ id: "2", direction: "inbound" })}\n{"hello":"world"}`);
    const log: string[] = [];
    const sandbox = start(file, log);
    expect(await callId(smallCall(sandbox))).toBe("3");
    const lines = readFileSync(file, "utf8").split("\n");
    expect(lines[1]).toBe('{"hello":"world"}');
    expect(JSON.parse(lines[2] as string).id).toBe("3");
    expect(log.some((l) => l.includes("no recorded call"))).toBe(true);
    expect(existsSync(`${file}.cut-off`)).toBe(false);
  });

  it("unreadable lines in the middle: ids continue after the highest, whatever they hold", async () => {
    const file = journalPath();
    const first = start(file);
    await smallCall(first);
    first.close();
    appendFileSync(file, `garbage\n{"id":"99"\n{"hello":"world"}\n${splitLine("5", "6")}`);
    const second = start(file);
    expect(await callId(smallCall(second))).toBe("100");
    second.close();
    const third = start(file);
    expect(await callId(smallCall(third))).toBe("101");
  });
});

describe("--journal-file: a last line cut off by a crash", () => {
  it("is moved aside to <file>.cut-off with a warning, and ids continue after the last complete line", async () => {
    const file = journalPath();
    const first = start(file);
    await smallCall(first);
    await smallCall(first);
    first.close();
    const complete = readFileSync(file, "utf8");
    // A fragment longer than any read chunk: the cut is found however long the line.
    const fragment = `{"id":"3","direction":"inbound","request":{"body":"${"y".repeat(300 * 1024)}`;
    appendFileSync(file, fragment);

    const log: string[] = [];
    const second = start(file, log);
    const warning = log.find((l) => l.includes("cut off"));
    expect(warning).toBeDefined();
    expect(warning).toContain(file);
    expect(warning).toContain(`${file}.cut-off`);
    expect(readFileSync(file, "utf8")).toBe(complete);
    expect(readFileSync(`${file}.cut-off`, "utf8")).toBe(`${fragment}\n`);

    expect(await callId(smallCall(second))).toBe("3");
    expect(ids(file)).toEqual(["1", "2", "3"]);
  });

  it("a complete last line without its newline is kept, not moved", async () => {
    const file = journalPath();
    writeFileSync(file, JSON.stringify({ id: "4", direction: "inbound" }));
    const log: string[] = [];
    const sandbox = start(file, log);
    expect(await callId(smallCall(sandbox))).toBe("5");
    expect(ids(file)).toEqual(["4", "5"]);
    expect(existsSync(`${file}.cut-off`)).toBe(false);
    expect(log.filter((l) => l.includes("cut off"))).toEqual([]);
  });
});

/** A finished inbound call, as the recorder announces it. */
const draft = (path: string): CallDraft => ({
  direction: "inbound",
  at: new Date("2026-01-15T09:30:00Z"),
  durationMs: 1,
  operation: null,
  messageId: null,
  rule: null,
  request: { method: "GET", url: `http://sandbox.test${path}`, path, headers: {}, body: "" },
  response: { status: 404, headers: {}, body: "" },
});

const ENOSPC = () => Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });

describe("--journal-file: writes that fail (a full disk)", () => {
  /** A journal and its file whose writes fail while `disk.full` (after writing `disk.partial` bytes of a line). */
  function failingDisk() {
    const file = journalPath();
    const events = new SandboxEvents();
    const warnings: string[] = [];
    const disk = { full: false, partial: 0 };
    const journal = new Journal({ maxCalls: 1000, maxBytes: 64 * MiB }, events);
    const journalFile = new JournalFile(file, {
      events,
      highestIdIssued: () => journal.highestIdIssued,
      warn: (m) => warnings.push(m),
      write: (fd, bytes, offset) => {
        if (!disk.full) return writeSync(fd, bytes, offset);
        if (disk.partial > 0 && offset === 0) return writeSync(fd, bytes, 0, Math.min(disk.partial, bytes.length));
        throw ENOSPC();
      },
    });
    return { file, events, warnings, disk, journal, journalFile };
  }

  it("warns once, keeps every call in memory, and says how many were lost when writes succeed again", () => {
    const { file, events, warnings, disk, journal, journalFile } = failingDisk();
    events.emit("call:completed", draft("/one"));
    disk.full = true;
    for (let i = 0; i < 5; i++) events.emit("call:completed", draft(`/lost-${i}`));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/could not write call 2 \(ENOSPC: no space left on device/);
    expect(warnings[0]).toContain(file);
    expect(journalFile.status()).toEqual({ path: file, missingCalls: 5, error: expect.stringContaining("ENOSPC") });

    disk.full = false;
    events.emit("call:completed", draft("/back"));
    expect(warnings).toHaveLength(2);
    expect(warnings[1]).toMatch(/writing again; 5 calls could not be written and are missing .*ids 2 to 6/);
    expect(journalFile.status()).toEqual({ path: file, missingCalls: 5, error: null });
    expect(journal.list().map((c) => c.request.path)).toEqual([
      "/one",
      "/lost-0",
      "/lost-1",
      "/lost-2",
      "/lost-3",
      "/lost-4",
      "/back",
    ]);
    expect(ids(file)).toEqual(["1", "7"]);
    journalFile.close();
    expect(warnings).toHaveLength(2);
  });

  it("a line cut by a failed write does not swallow the next one; a failure still going at close is reported", () => {
    const { file, events, warnings, disk, journalFile } = failingDisk();
    disk.full = true;
    disk.partial = 10;
    events.emit("call:completed", draft("/cut"));
    disk.full = false;
    events.emit("call:completed", draft("/whole"));
    const lines = readFileSync(file, "utf8").split("\n");
    expect(lines[0]).toHaveLength(10);
    expect(JSON.parse(lines[1] as string)).toMatchObject({ id: "2", request: { path: "/whole" } });

    disk.full = true;
    disk.partial = 0;
    events.emit("call:completed", draft("/late"));
    journalFile.close();
    expect(warnings.at(-1)).toMatch(/at shutdown, 1 call could not be written and is missing .*id 3;/);
  });
});
