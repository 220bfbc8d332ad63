import type { ServerResponse } from "node:http";
import type { ReusableBody } from "../http/reusable-body.js";

/**
 * Bytes written in one turn of the event loop before the rest waits for the next: a listing of a whole journal
 * (tens of MiB) does not hold up the messages of other callers until it is written.
 */
const TURN_BYTES = 256 * 1024;

/** How many buffers writeReusable has made, chunks it has written, and times it waited for a slow reader: for tests. */
export const reusableStats = { buffers: 0, chunks: 0, drainWaits: 0 };

/**
 * An answer's headers as Node writes them, as the Hono adapter writes them: one value per name, `set-cookie` a list.
 */
function headerRecord(headers: Headers): Record<string, string | string[]> {
  const record: Record<string, string | string[]> = {};
  for (const [name, value] of headers) if (name !== "set-cookie") record[name] = value;
  const cookies = headers.getSetCookie();
  if (cookies.length > 0) record["set-cookie"] = cookies;
  return record;
}

/**
 * Writes an answer whose body is reusable on the socket itself: each chunk's buffer comes back once Node has written
 * it and takes the next chunk. A whole journal read as a web stream needs a new 64 KiB buffer for each chunk, and
 * making them (fresh memory, and the collections that memory outside V8's heap sets off) cost a third of its time.
 * Waits for `drain` when the client reads slowly; stops when the connection closes.
 */
export function writeReusable(outgoing: ServerResponse, status: number, headers: Headers, body: ReusableBody): void {
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
  outgoing.writeHead(status, headerRecord(headers));

  const write = (): void => {
    let wrote = 0;
    // A turn's chunks go to the socket together, in one system call, when it takes them at once.
    outgoing.cork();
    try {
      while (!closed && !body.done && wrote < TURN_BYTES) {
        for (const chunk of body.next(fresh)) {
          reusableStats.chunks++;
          wrote += chunk.length;
          outgoing.write(chunk, () => giveBack(chunk));
        }
      }
    } catch (error) {
      // A fault in making the body (a bug): the answer cannot be finished, and a cut connection says so.
      outgoing.destroy(error instanceof Error ? error : new Error(String(error)));
      return;
    } finally {
      outgoing.uncork();
    }
    if (closed) return;
    if (body.done) outgoing.end();
    // What the socket did not take at once is waited for; else the next turn's chunks after other callers' work.
    else if (outgoing.writableNeedDrain) {
      reusableStats.drainWaits++;
      outgoing.once("drain", write);
    } else setImmediate(write);
  };
  write();
}
