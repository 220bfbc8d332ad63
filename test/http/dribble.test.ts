import { afterEach, describe, expect, it, vi } from "vitest";
import { dribbleOut, pieces } from "../../src/http/dribble.js";

afterEach(() => {
  vi.useRealTimers();
});

describe("dribbleOut: a body in pieces over a time (fake timers)", () => {
  it("writes the first piece at once, the others spaced evenly, the last at the given time, then ends", () => {
    vi.useFakeTimers();
    const seen: Array<[number, string]> = [];
    let ended = -1;
    const start = Date.now();
    dribbleOut(
      "abcdefghij",
      { chunks: 5, overMs: 1000 },
      {
        write: (piece) => seen.push([Date.now() - start, Buffer.from(piece).toString()]),
        end: () => {
          ended = Date.now() - start;
        },
        gone: () => undefined,
      },
    );
    vi.advanceTimersByTime(1000);
    // 5 pieces of 2 bytes, 250 ms apart (1000 ms from the first to the last).
    expect(seen).toEqual([
      [0, "ab"],
      [250, "cd"],
      [500, "ef"],
      [750, "gh"],
      [1000, "ij"],
    ]);
    expect(ended).toBe(1000);
  });

  it("stops when the client goes away, and never ends the answer", () => {
    vi.useFakeTimers();
    let stop: () => void = () => undefined;
    const seen: string[] = [];
    let ended = false;
    dribbleOut(
      "abcdef",
      { chunks: 3, overMs: 200 },
      {
        write: (piece) => seen.push(Buffer.from(piece).toString()),
        end: () => {
          ended = true;
        },
        gone: (s) => {
          stop = s;
        },
      },
    );
    vi.advanceTimersByTime(100);
    stop();
    vi.advanceTimersByTime(1000);
    expect(seen).toEqual(["ab", "cd"]);
    expect(ended).toBe(false);
  });

  it("cuts bytes, not characters, and never more pieces than bytes", () => {
    expect(pieces("é", 2).map((p) => p.length)).toEqual([1, 1]);
    expect(pieces("ab", 10)).toHaveLength(2);
    expect(Buffer.concat(pieces("héllo wörld", 4)).toString()).toBe("héllo wörld");
  });
});
