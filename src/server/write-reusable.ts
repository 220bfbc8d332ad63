import type { ServerResponse } from "node:http";
import { nodeHeaders } from "../http/raw-headers.js";
import type { ReusableBody } from "../http/reusable-body.js";

/**
 * Bytes written in one turn of the event loop before the rest waits for the next: a listing of a whole journal
 * (tens of MiB) does not hold up the messages of other callers until it is written.
 */
const TURN_BYTES = 256 * 1024;

/**
 * How many buffers writeReusable has made, chunks it has written, times it waited for a slow reader, and answers it
 * finished: for tests.
 */
export const reusableStats = { buffers: 0, chunks: 0, drainWaits: 0, ended: 0 };

/**
 * Writes an answer whose body is reusable on the socket itself: each chunk's buffer comes back once Node has written
 * it and takes the next chunk. A whole journal read as a web stream needs a new 64 KiB buffer for each chunk, and
 * making them (fresh memory, and the collections that memory outside V8's heap sets off) cost a third of its time.
 * Waits for `drain` when the client reads slowly; stops when the connection closes.
 */
export function writeReusable(
  outgoing: ServerResponse,
  status: number,
  headers: Headers,
  body: ReusableBody,
  /** Told of a fault in making the body (a bug): the connection is then cut, the answer unfinished. */
  onError: (error: Error) => void,
): void {
  const ours = new WeakSet<ArrayBufferLike>();
  const free: Buffer[] = [];
  const fresh = (): Buffer => {
    const buffer = free.pop();
    if (buffer) return buffer;
    reusableStats.buffers++;
    // Of its own, never a view into Node's shared pool, so that giving it back gives back no one else's bytes.
    const made = Buffer.allocUnsafeSlow(body.bufferBytes);
    ours.add(made.buffer);
    return made;
  };
  const giveBack = (chunk: Buffer) => {
    // A chunk cut from one of our buffers (a larger text's chunk has a buffer of its own, left to the collector).
    if (ours.has(chunk.buffer)) free.push(Buffer.from(chunk.buffer, 0, body.bufferBytes));
  };
  let closed = false;
  outgoing.once("close", () => {
    closed = true;
  });
  // Without a Content-Length: sent chunked, as the adapter sends a stream (and every listing names its content type).
  outgoing.writeHead(status, nodeHeaders(headers));

  const write = (): void => {
    let wrote = 0;
    // A turn's chunks go to the socket together, in one system call. The socket itself is corked, not the answer:
    // corked, the answer would hand its chunks on in separate writes at uncork, none large enough for the socket to
    // promise a `drain` once the kernel's buffer is full, and a wait for the answer's `drain` could last forever.
    const socket = outgoing.socket;
    socket?.cork();
    try {
      while (!closed && !body.done && wrote < TURN_BYTES) {
        for (const chunk of body.next(fresh)) {
          reusableStats.chunks++;
          wrote += chunk.length;
          outgoing.write(chunk, () => giveBack(chunk));
        }
      }
    } catch (thrown) {
      // A fault in making the body (a bug): the answer cannot be finished, and a cut connection says so.
      const error = thrown instanceof Error ? thrown : new Error(String(thrown));
      onError(error);
      outgoing.destroy(error);
      return;
    } finally {
      socket?.uncork();
    }
    if (closed) return;
    if (body.done) {
      reusableStats.ended++;
      outgoing.end();
    }
    // What the socket did not take at once is waited for. The next turn's chunks come after other callers' work
    // either way: a drain can come on the same turn (process.nextTick, when the kernel took all at once), and
    // writing on from it would hold the event loop for the whole listing.
    else if (outgoing.writableNeedDrain) {
      reusableStats.drainWaits++;
      outgoing.once("drain", later);
    } else later();
  };
  const later = () => setImmediate(write);
  write();
}
