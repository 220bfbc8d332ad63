/**
 * Journal ids: one sequence for the whole process, shared by every
 * workspace's journal, so that an `X-Sandbox-Call-Id` or a `--journal-file`
 * line names one call whatever its workspace. With one workspace it numbers
 * calls 1, 2, 3… as a single journal always did.
 */
export class CallIds {
  #next: number;

  /** `first`: where numbering starts (after the ids of a journal file's past runs). */
  constructor(first = 1) {
    this.#next = first;
  }

  next(): string {
    return String(this.#next++);
  }

  /** The highest id handed out so far (0 before the first; first - 1 when continuing a file). */
  get highestIssued(): number {
    return this.#next - 1;
  }
}
