export type BodyRead =
  | { ok: true; text: string }
  | { ok: false; tooLarge: true; limit: number }
  /** The body did not arrive in full: the client went away, or the server's request timeout ended it. */
  | { ok: false; tooLarge: false; error: string };

/** What an answer says of a body that did not arrive in full (Node has already answered the client 408). */
export const incompleteBody = (error: string) =>
  `The request body did not arrive in full (${error}): the client went away, or took longer to send it than the server's request timeout (--request-timeout).`;

/**
 * Reads a stream as UTF-8 text, stopping (and cancelling the stream) as soon
 * as it passes `limit` bytes; `over` tells whether it did.
 */
export async function readCapped(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
): Promise<{ text: string; over: boolean }> {
  if (!body) return { text: "", over: false };
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      return { text: Buffer.concat(chunks).toString("utf8"), over: true };
    }
    chunks.push(value);
  }
  return { text: Buffer.concat(chunks).toString("utf8"), over: false };
}

/**
 * Reads a request body as UTF-8 text, giving up as soon as it passes
 * `limit` bytes (a declared Content-Length over the limit is refused unread).
 * `contentLength`: the request's Content-Length, when the caller has read its headers already (reading
 * `request.headers` would make the Node adapter build a web `Headers`).
 */
export async function readBody(
  request: Request,
  limit: number,
  contentLength: string | null = request.headers.get("content-length"),
): Promise<BodyRead> {
  const length = contentLength;
  const declared = length === null ? Number.NaN : Number(length);
  if (Number.isFinite(declared) && declared > limit) return { ok: false, tooLarge: true, limit };
  try {
    if (Number.isFinite(declared)) {
      // A declared length within the limit: read it whole. On the Node adapter arrayBuffer() reads the socket
      // directly, where touching request.body builds a web Request and stream (a tenth of a message's cost).
      // Decoded as readCapped does (a byte-order mark kept, so it is refused as before).
      const bytes = await request.arrayBuffer();
      if (bytes.byteLength > limit) return { ok: false, tooLarge: true, limit };
      return { ok: true, text: Buffer.from(bytes).toString("utf8") };
    }
    const read = await readCapped(request.body, limit);
    return read.over ? { ok: false, tooLarge: true, limit } : { ok: true, text: read.text };
  } catch (error) {
    // Not a sandbox bug: the request's stream was aborted under it.
    return { ok: false, tooLarge: false, error: (error as Error).message };
  }
}
