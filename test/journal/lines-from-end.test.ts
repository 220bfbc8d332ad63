import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { linesFromEnd } from "../../src/journal/lines-from-end.js";

// Reading a file's lines backwards in chunks gives what splitting the whole text on "\n" gives, last
// first, wherever the chunk boundaries fall (tiny chunks put them everywhere), multi-byte characters included.

const dir = mkdtempSync(join(tmpdir(), "lines-from-end-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function backwards(text: string, chunkBytes: number) {
  const file = join(dir, "lines.ndjson");
  writeFileSync(file, text);
  const fd = openSync(file, "r");
  try {
    return [...linesFromEnd(fd, Buffer.byteLength(text), chunkBytes)].map((l) => ({
      start: l.start,
      text: l.bytes.toString("utf8"),
    }));
  } finally {
    closeSync(fd);
  }
}

/** The expected lines, last first, with the byte offset each starts at. */
function split(text: string) {
  let start = 0;
  return text
    .split("\n")
    .map((line) => {
      const at = start;
      start += Buffer.byteLength(line) + 1;
      return { start: at, text: line };
    })
    .reverse();
}

describe("linesFromEnd", () => {
  it.each([
    ["an empty file", ""],
    ["one line without a newline", "abc"],
    ["lines ending with a newline", "a\nbb\nccc\n"],
    ["a cut-off last line", '{"id":"1"}\n{"id":"2","req'],
    ["empty lines", "\n\na\n\n"],
  ])("%s", (_, text) => {
    for (const chunk of [1, 2, 3, 64 * 1024]) expect(backwards(text, chunk)).toEqual(split(text));
  });

  it("any text, any chunk size (seeded)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.string({ unit: "grapheme", maxLength: 12 }), fc.constant("")), { maxLength: 12 }),
        fc.integer({ min: 1, max: 17 }),
        (lines, chunk) => {
          const text = lines.join("\n");
          expect(backwards(text, chunk)).toEqual(split(text));
        },
      ),
      { seed: 20260115, numRuns: 300 },
    );
  });
});
