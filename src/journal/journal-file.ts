import { closeSync, existsSync, fstatSync, openSync, readSync, writeSync } from "node:fs";
import type { SandboxEvents } from "../events.js";
import { callJson } from "./call-view.js";

/** How much of a journal file's end is read to find the last call id. */
const TAIL_BYTES = 1024 * 1024;

/** The id after the last call of an existing journal file, so ids stay unique across runs. */
export function nextIdAfter(path: string): number {
  if (!existsSync(path)) return 1;
  const fd = openSync(path, "r");
  try {
    const size = fstatSync(fd).size;
    const length = Math.min(size, TAIL_BYTES);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    // Inbound calls take their id when they start and are written when they end, so the
    // last line need not hold the highest id: continue after the highest in the tail.
    let highest = 0;
    for (const line of buffer.toString("utf8").split("\n")) {
      try {
        const id = Number((JSON.parse(line) as { id?: string }).id);
        if (Number.isInteger(id) && id > highest) highest = id;
      } catch {
        // A cut-off first line of the tail, or a line from a crash: skip it.
      }
    }
    return highest + 1;
  } finally {
    closeSync(fd);
  }
}

/**
 * `--journal-file`: appends each recorded call as one JSON line the moment
 * the journal stores it, with a synchronous write, so a crash loses at most
 * the call in flight. Redaction has already happened in the journal.
 */
export class JournalFile {
  readonly #fd: number;
  readonly #onRecorded: (record: Parameters<typeof callJson>[0]) => void;

  constructor(
    readonly path: string,
    private readonly events: SandboxEvents,
  ) {
    this.#fd = openSync(path, "a+");
    // A crash mid-write can leave a cut-off last line: start on a fresh line, or the next call would be glued to it.
    const size = fstatSync(this.#fd).size;
    if (size > 0) {
      const last = Buffer.alloc(1);
      readSync(this.#fd, last, 0, 1, size - 1);
      if (last[0] !== 0x0a) writeSync(this.#fd, "\n");
    }
    this.#onRecorded = (record) => {
      writeSync(this.#fd, `${callJson(record)}\n`);
    };
    events.on("call:recorded", this.#onRecorded);
  }

  close(): void {
    this.events.off("call:recorded", this.#onRecorded);
    closeSync(this.#fd);
  }
}
