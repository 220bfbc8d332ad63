import { readSync } from "node:fs";

/** One line of a file, without its "\n", and where it starts. */
export interface FileLine {
  /** Byte offset of the line's first byte. */
  start: number;
  bytes: Buffer;
}

const NEWLINE = 0x0a;

/**
 * The lines of the first `size` bytes of an open file, last first, read
 * backwards in chunks: memory holds one line and one chunk, however large
 * the file. The first line yielded is what follows the last "\n" (empty when
 * the file ends with one); a line longer than a chunk is pieced together.
 *
 * @example
 *   for (const line of linesFromEnd(fd, fstatSync(fd).size)) if (line.bytes.length > 0) return line;
 */
export function* linesFromEnd(fd: number, size: number, chunkBytes = 64 * 1024): Generator<FileLine> {
  // Pieces of the line being read, in file order; they lie after the chunk being scanned.
  let tail: Buffer[] = [];
  let position = size;
  while (position > 0) {
    const length = Math.min(chunkBytes, position);
    position -= length;
    const chunk = Buffer.alloc(length);
    let read = 0;
    while (read < length) {
      const n = readSync(fd, chunk, read, length - read, position + read);
      if (n === 0) throw new Error(`the file is shorter than ${size} bytes: it changed while being read`);
      read += n;
    }
    let end = length;
    for (let i = length - 1; i >= 0; i--) {
      if (chunk[i] !== NEWLINE) continue;
      yield { start: position + i + 1, bytes: Buffer.concat([chunk.subarray(i + 1, end), ...tail]) };
      tail = [];
      end = i;
    }
    tail.unshift(chunk.subarray(0, end));
  }
  yield { start: 0, bytes: Buffer.concat(tail) };
}
