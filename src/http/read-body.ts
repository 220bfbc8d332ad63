export type BodyRead = { ok: true; text: string } | { ok: false; tooLarge: true; limit: number };

/**
 * Reads a request body as UTF-8 text, giving up as soon as it passes
 * `limit` bytes (a declared Content-Length over the limit is refused unread).
 */
export async function readBody(request: Request, limit: number): Promise<BodyRead> {
  const declared = Number(request.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > limit) return { ok: false, tooLarge: true, limit };
  if (!request.body) return { ok: true, text: "" };
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      return { ok: false, tooLarge: true, limit };
    }
    chunks.push(value);
  }
  return { ok: true, text: Buffer.concat(chunks).toString("utf8") };
}
