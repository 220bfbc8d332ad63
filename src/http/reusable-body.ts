/**
 * A body made a chunk at a time into buffers its writer provides. Read as a web stream, each chunk needs a buffer
 * of its own (the reader keeps it); a writer on the socket itself knows when each chunk has been written and gives
 * its buffer back for the next one (`writeReusable`).
 */
export interface ReusableBody {
  /** Whether every chunk has been taken. */
  readonly done: boolean;
  /** The size of the buffers `next` writes into. */
  readonly bufferBytes: number;
  /**
   * The next chunks, written into buffers of `bufferBytes` from `fresh` (cut to what was written) or into buffers of
   * their own.
   */
  next(fresh: () => Buffer): Buffer[];
}

const bodies = new WeakMap<Response, ReusableBody>();

/**
 * `response`, whose body is `body` as a web stream (read only when asked: a stream that filled its queue on its own
 * would take chunks a writer of `body` then misses), marked so that a Node server may write `body` instead.
 */
export function withReusableBody(response: Response, body: ReusableBody): Response {
  bodies.set(response, body);
  return response;
}

/** The reusable body of an answer made by withReusableBody, taken (at most once). */
export function takeReusableBody(response: Response): ReusableBody | undefined {
  const body = bodies.get(response);
  bodies.delete(response);
  return body;
}
