/** A body written in `chunks` pieces spread over `overMs` (a rule's `dribble`): a slow network, or a slow server. */
export interface Dribble {
  chunks: number;
  overMs: number;
}

/** The body's bytes in `chunks` pieces of near-equal size (fewer when the body is shorter). */
export function pieces(text: string, chunks: number): Uint8Array[] {
  const bytes = Buffer.from(text);
  const n = Math.max(1, Math.min(chunks, bytes.length));
  const out: Uint8Array[] = [];
  for (let i = 0; i < n; i++) {
    out.push(bytes.subarray(Math.floor((i * bytes.length) / n), Math.floor(((i + 1) * bytes.length) / n)));
  }
  return out;
}

/**
 * Calls `write` with each piece: the first at once, the others spaced evenly so that the last goes at `overMs`;
 * then `end`. Stops (no `end`) when `gone` calls back (the client went away). The global setTimeout, so that fake
 * timers drive it in tests.
 */
export function dribbleOut(
  text: string,
  dribble: Dribble,
  sink: { write(piece: Uint8Array): void; end(): void; gone(stop: () => void): void },
): void {
  const list = pieces(text, dribble.chunks);
  const gap = list.length > 1 ? dribble.overMs / (list.length - 1) : 0;
  let i = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  sink.gone(() => {
    stopped = true;
    clearTimeout(timer);
  });
  const next = () => {
    if (stopped) return;
    sink.write(list[i++] as Uint8Array);
    if (i < list.length) timer = setTimeout(next, gap);
    else sink.end();
  };
  next();
}

/** A web body stream that dribbles `text` out (the Hono path's answer). */
export function dribbleStream(text: string, dribble: Dribble): ReadableStream<Uint8Array> {
  let stop: (() => void) | undefined;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      dribbleOut(text, dribble, {
        write: (piece) => controller.enqueue(piece),
        end: () => controller.close(),
        gone: (s) => {
          stop = s;
        },
      });
    },
    cancel() {
      stop?.();
    },
  });
}
