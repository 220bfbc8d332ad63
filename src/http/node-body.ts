import type { IncomingMessage, ServerResponse } from "node:http";
import type { BodyRead } from "./read-body.js";

// A request body read straight from a Node request, for the message path on node:http: what readBody does through
// the Node adapter's web Request, with the same limits, decoding and errors.

/**
 * Reads a Node request's body as UTF-8 text (a byte-order mark kept, as readBody keeps it), giving up as soon as it
 * passes `limit` bytes; a declared Content-Length over the limit is refused unread. `contentLength`: the request's
 * header, as readBody takes it.
 */
export function readIncoming(
  incoming: IncomingMessage,
  limit: number,
  contentLength: string | null,
): Promise<BodyRead> {
  const declared = contentLength === null ? Number.NaN : Number(contentLength);
  if (Number.isFinite(declared) && declared > limit) return Promise.resolve({ ok: false, tooLarge: true, limit });
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (read: BodyRead) => {
      incoming.off("data", onData);
      incoming.off("end", onEnd);
      incoming.off("error", onError);
      incoming.off("close", onClose);
      resolve(read);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      // Over the limit: stop reading (what is left is drained after the answer, as the adapter drains it).
      if (size > limit) {
        incoming.pause();
        finish({ ok: false, tooLarge: true, limit });
      } else chunks.push(chunk);
    };
    const onEnd = () => {
      const bytes = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
      finish({ ok: true, text: bytes.toString("utf8") });
    };
    // The adapter's messages: the stream's error, else its own for a connection closed before the end.
    const onError = (error: Error) => {
      if (!recover()) finish({ ok: false, tooLarge: false, error: error.message });
    };
    const onClose = () => {
      if (incoming.readableEnded) return onEnd();
      if (recover()) return;
      finish({
        ok: false,
        tooLarge: false,
        error: incoming.errored?.message ?? "Client connection prematurely closed.",
      });
    };
    /** A body the client sent whole before it reset: read from what Node kept, as the adapter reads it. */
    const recover = () => {
      const kept = keptBeforeReset(incoming, chunks, contentLength);
      if (kept === undefined) return false;
      if (kept instanceof Error) finish({ ok: false, tooLarge: false, error: kept.message });
      else if (kept.byteLength > limit) finish({ ok: false, tooLarge: true, limit });
      else finish({ ok: true, text: kept.toString("utf8") });
      return true;
    };
    incoming.on("data", onData);
    incoming.on("end", onEnd);
    incoming.on("error", onError);
    incoming.on("close", onClose);
    // Read late (after an OAuth2 token was verified), the request may be over already: its events are past.
    if (incoming.readableEnded) onEnd();
    else if (incoming.errored) onError(incoming.errored);
    else if (incoming.destroyed) onClose();
  });
}

/**
 * The adapter's recovery of a request the client sent whole and then reset (Node aborts it, unread, keeping what
 * it had parsed): the body, an Error the adapter would reject with, or undefined where there is nothing to recover.
 */
function keptBeforeReset(
  incoming: IncomingMessage,
  chunks: Buffer[],
  contentLength: string | null,
): Buffer | Error | undefined {
  if (!incoming.complete || !incoming.readableAborted) return undefined;
  const errored = incoming.errored as NodeJS.ErrnoException | null;
  if (errored && errored.code !== "ECONNRESET") return errored;
  const rest = incoming.read() as Buffer | null;
  if (rest !== null) chunks.push(rest);
  const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
  // A body shorter or longer than declared is not the message sent: the adapter's own error.
  if (contentLength !== null && /^\d+$/.test(contentLength) && body.byteLength !== Number(contentLength)) {
    return new TypeError("Body is unusable");
  }
  return body;
}

/** How long, and how much, a body left unread is drained before its connection is closed: the adapter's figures. */
const DRAIN_TIMEOUT_MS = 500;
const MAX_DRAIN_BYTES = 64 * 1024 * 1024;

/**
 * What the Node adapter does with a body the answer left unread (a 413, a refusal before reading): once the answer
 * is done, the rest is read and dropped for up to 500 ms and 64 MiB, then the connection is closed.
 */
export function drainAfterAnswer(incoming: IncomingMessage, outgoing: ServerResponse): void {
  outgoing.once("close", () => {
    if (incoming.readableEnded) return;
    setTimeout(() => {
      if (!incoming.readableEnded) setTimeout(() => drain(incoming));
    });
  });
}

function drain(incoming: IncomingMessage): void {
  if (incoming.destroyed) return;
  let bytesRead = 0;
  const cleanup = () => {
    clearTimeout(timer);
    incoming.off("data", onData);
    incoming.off("end", cleanup);
    incoming.off("error", cleanup);
  };
  const forceClose = () => {
    cleanup();
    const socket = incoming.socket;
    if (socket && !socket.destroyed) socket.destroySoon();
  };
  const timer = setTimeout(forceClose, DRAIN_TIMEOUT_MS);
  timer.unref();
  const onData = (chunk: Buffer) => {
    bytesRead += chunk.length;
    if (bytesRead > MAX_DRAIN_BYTES) forceClose();
  };
  incoming.on("data", onData);
  incoming.on("end", cleanup);
  incoming.on("error", cleanup);
  incoming.resume();
}
