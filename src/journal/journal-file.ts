import { appendFileSync, closeSync, fstatSync, fsyncSync, ftruncateSync, openSync, writeSync } from "node:fs";
import type { SandboxEvents } from "../events.js";
import { counted } from "../text/plural.js";
import type { CallRecord } from "./call-record.js";
import { callJson } from "./call-view.js";
import { type FileLine, linesFromEnd } from "./lines-from-end.js";

export interface JournalFileDeps {
  events: SandboxEvents;
  /** The highest call id handed out so far (Journal.highestIdIssued), written on every line. */
  highestIdIssued(): number;
  /** Warnings about the file: a repaired last line, failed writes. */
  warn(message: string): void;
  /** Writes bytes from `offset` at the file's end; returns how many it wrote. Default: fs.writeSync. */
  write?(fd: number, bytes: Buffer, offset: number): number;
}

/** What GET /__admin/health shows of the file. */
export interface JournalFileStatus {
  path: string;
  /** Calls that could not be written since the start (the in-memory journal has them). */
  missingCalls: number;
  /** Why writes are failing now; null while they succeed. */
  error: string | null;
}

/** A line's call id and the highest id issued when it was written (absent on lines of older versions). */
function idsOf(line: FileLine): { id: number; highestIdIssued: number } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line.bytes.toString("utf8"));
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const { id, highestIdIssued } = value as { id?: unknown; highestIdIssued?: unknown };
  const number = (v: unknown) => (typeof v === "string" && /^\d+$/.test(v) ? Number(v) : Number.NaN);
  if (!Number.isSafeInteger(number(id))) return undefined;
  return { id: number(id), highestIdIssued: number(highestIdIssued) };
}

/**
 * The ids at the start of a line that is no JSON: every line this sandbox writes starts `{"id":"N","highestIdIssued":"M"`,
 * and builds before 0.1.0 split a call whose request body held line breaks over several lines, whose first piece
 * still starts so. A piece from inside a body may start so too: it can only raise the ids found, never lower them.
 */
const IDS_AT_START = /^\{"id":"(\d{1,15})"(?:,"highestIdIssued":"(\d{1,15})")?/;

function idsAtStartOf(line: FileLine): number {
  const m = IDS_AT_START.exec(line.bytes.subarray(0, 64).toString("latin1"));
  return m ? Math.max(Number(m[1]), Number(m[2] ?? 0)) : 0;
}

interface Resumed {
  nextId: number;
  /** A last line without its "\n" that is no JSON: cut off by a crash mid-write. */
  cutOff: FileLine | undefined;
  /** A complete last line (JSON) that only lacks its "\n". */
  unterminated: boolean;
  /** Complete lines met that are no call with an id: how many, and where the first of them in the file starts. */
  unreadable: { lines: number; firstAt: number };
}

/**
 * Where numbering resumes in an existing file. Inbound calls take their id
 * when they start and are written when they end, so the last line need not
 * hold the highest id; each line therefore carries `highestIdIssued`, the
 * highest id handed out when it was written. Every answer is sent after its
 * own line is written, so no id a client saw is above the last line's
 * `highestIdIssued`: numbering continues after it. Lines without it (older
 * files) are read back to the start for their highest id. A line that cannot
 * be read (a call an older build split at its body's line breaks, a line edited
 * by hand) is passed over, counting the ids at its start, and the reading goes
 * on back to a whole line that carries `highestIdIssued`: ids never start again
 * below one the file holds.
 */
function resume(fd: number): Resumed {
  const unreadable = { lines: 0, firstAt: 0 };
  const stat = fstatSync(fd);
  // A device (/dev/full, /dev/null) or a pipe has no past lines to continue.
  if (!stat.isFile() || stat.size === 0) return { nextId: 1, cutOff: undefined, unterminated: false, unreadable };
  let highest = 0;
  let cutOff: FileLine | undefined;
  let unterminated = false;
  let last = true;
  for (const line of linesFromEnd(fd, stat.size)) {
    const ids = line.bytes.length > 0 ? idsOf(line) : undefined;
    // A last line without its "\n": cut off by a crash when it is no JSON; else it gets its "\n" (or the next
    // call's line would be glued to it), and is counted below when it is no call.
    const cut = last && line.bytes.length > 0 && !ids && !isJsonLine(line);
    if (last && line.bytes.length > 0) {
      if (cut) cutOff = line;
      else unterminated = true;
    }
    if (!ids && !cut && line.bytes.length > 0) {
      unreadable.lines++;
      unreadable.firstAt = line.start;
      highest = Math.max(highest, idsAtStartOf(line));
    }
    last = false;
    if (!ids) continue;
    highest = Math.max(highest, ids.id, Number.isSafeInteger(ids.highestIdIssued) ? ids.highestIdIssued : 0);
    if (Number.isSafeInteger(ids.highestIdIssued)) break;
  }
  return { nextId: highest + 1, cutOff, unterminated, unreadable };
}

function isJsonLine(line: FileLine): boolean {
  try {
    JSON.parse(line.bytes.toString("utf8"));
    return true;
  } catch {
    return false;
  }
}

function describeError(error: unknown): string {
  const { code, message } = error as { code?: string; message?: string };
  return message ?? code ?? String(error);
}

/**
 * `--journal-file`: appends each recorded call as one JSON line the moment
 * the journal stores it, with a synchronous write that happens before the
 * call's answer is sent: a crash loses only calls not yet answered.
 * Redaction has already happened in the journal. A failed write (a full
 * disk) never fails the call: it is warned about once, counted, and the
 * count is reported when writes succeed again and at close.
 */
export class JournalFile {
  /** The id the journal hands out first: after every id of the file's past runs. */
  readonly nextId: number;
  #fd: number | undefined;
  readonly #write: (fd: number, bytes: Buffer, offset: number) => number;
  readonly #onRecorded = (record: CallRecord) => this.#append(record);
  /** A failed write may have left part of a line: the next one starts on a fresh line. */
  #partial = false;
  #missingCalls = 0;
  /** The current run of failed writes. */
  #failing: { error: string; count: number; firstId: string; lastId: string } | undefined;

  constructor(
    readonly path: string,
    private readonly deps: JournalFileDeps,
  ) {
    this.#write = deps.write ?? ((fd, bytes, offset) => writeSync(fd, bytes, offset));
    const fd = openSync(path, "a+");
    try {
      const resumed = resume(fd);
      this.nextId = resumed.nextId;
      if (resumed.unterminated) writeSync(fd, "\n");
      if (resumed.cutOff) this.#moveAside(fd, resumed.cutOff);
      if (resumed.unreadable.lines > 0) this.#warnUnreadable(resumed.unreadable);
    } catch (error) {
      closeSync(fd);
      throw error;
    }
    this.#fd = fd;
    deps.events.on("call:recorded", this.#onRecorded);
  }

  #moveAside(fd: number, line: FileLine): void {
    const aside = `${this.path}.cut-off`;
    appendFileSync(aside, Buffer.concat([line.bytes, Buffer.from("\n")]));
    ftruncateSync(fd, line.start);
    this.deps.warn(
      `journal file ${this.path}: its last line was cut off (${line.bytes.length} bytes; the sandbox stopped in the middle of writing it, before that call was answered). Moved it to ${aside} and removed it from the file; call ids continue at ${this.nextId}.`,
    );
  }

  #warnUnreadable({ lines, firstAt }: Resumed["unreadable"]): void {
    this.deps.warn(
      `journal file ${this.path}: holds lines that are no recorded call (${lines} read at start, the first at byte ${firstAt}): pieces of calls that builds before 0.1.0 split at line breaks in a request body, or lines edited by hand. Call ids continue at ${this.nextId}, after the highest id found; replay and export refuse the file until those lines are removed.`,
    );
  }

  #append(record: CallRecord): void {
    const fd = this.#fd;
    if (fd === undefined) return;
    // Bodies spliced in as serialized (callJson), not parsed and serialized again.
    const json = callJson(record, { highestIdIssued: String(this.deps.highestIdIssued()) });
    const line = Buffer.from(`${this.#partial ? "\n" : ""}${json}\n`);
    let offset = 0;
    try {
      while (offset < line.length) offset += this.#write(fd, line, offset);
    } catch (error) {
      this.#partial ||= offset > 0;
      this.#failed(record.id, describeError(error));
      return;
    }
    this.#partial = false;
    if (this.#failing) {
      this.deps.warn(`journal file ${this.path}: writing again; ${this.#describeFailing()}`);
      this.#failing = undefined;
    }
  }

  #failed(id: string, error: string): void {
    this.#missingCalls++;
    if (this.#failing) {
      this.#failing.count++;
      this.#failing.lastId = id;
      this.#failing.error = error;
      return;
    }
    this.#failing = { error, count: 1, firstId: id, lastId: id };
    this.deps.warn(
      `journal file ${this.path}: could not write call ${id} (${error}). The sandbox keeps answering and keeps every call in memory (GET /__admin/calls); calls are missing from the file until a write succeeds again, and their count is logged then and at shutdown.`,
    );
  }

  #describeFailing(): string {
    const f = this.#failing;
    if (!f) return "";
    const ids = f.count === 1 ? `id ${f.firstId}` : `ids ${f.firstId} to ${f.lastId}`;
    return `${counted(f.count, "call")} could not be written and ${f.count === 1 ? "is" : "are"} missing from the file (${ids}; ${f.error})`;
  }

  status(): JournalFileStatus {
    return { path: this.path, missingCalls: this.#missingCalls, error: this.#failing?.error ?? null };
  }

  /** Stops writing, flushes the file to disk and closes it. Safe to call twice. */
  close(): void {
    const fd = this.#fd;
    if (fd === undefined) return;
    this.#fd = undefined;
    this.deps.events.off("call:recorded", this.#onRecorded);
    if (this.#failing) this.deps.warn(`journal file ${this.path}: at shutdown, ${this.#describeFailing()}`);
    try {
      fsyncSync(fd);
    } catch {
      // A device such as /dev/full cannot be synced; there is nothing more to keep.
    }
    closeSync(fd);
  }
}
