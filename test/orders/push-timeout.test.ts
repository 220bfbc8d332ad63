import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app.js";
import { resolveServeConfig } from "../../src/cli/flags.js";
import { admin, listCalls } from "../admin/admin-client.js";
import { subscribe } from "./pharmacy-client.js";

/** CONTRACT §8: "Deliveries time out (default 5 s)". Written here, not read from src. */
const DEFAULT_PUSH_TIMEOUT_MS = 5_000;

afterEach(() => {
  vi.useRealTimers();
});

/** A pharmacy that never answers: the request only ends when the sandbox aborts it. */
const hangingFetch: typeof fetch = (_input, init) =>
  new Promise((_, reject) => {
    init?.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
  });

describe("the default push timeout is 5 s (CONTRACT §8)", () => {
  it("of the CLI, when neither --push-timeout nor PUSH_TIMEOUT is given", () => {
    expect(resolveServeConfig({}, {}).sandbox.pushTimeoutMs).toBe(DEFAULT_PUSH_TIMEOUT_MS);
  });

  it("of createApp: an attempt to a pharmacy that never answers ends after 5 s, not before and not later", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const { app, close } = createApp({ pushAttempts: 1 }, { fetch: hangingFetch });
    try {
      await subscribe(app, "PH-SLOW", "http://127.0.0.1:9/hook");
      expect((await admin(app, "POST", "/orders", { body: {} })).status).toBe(201);

      await vi.advanceTimersByTimeAsync(DEFAULT_PUSH_TIMEOUT_MS - 1);
      expect(await listCalls(app, "direction=outbound")).toEqual([]);

      await vi.advanceTimersByTimeAsync(1);
      const [attempt, ...more] = await listCalls(app, "direction=outbound");
      expect(more).toEqual([]);
      expect(attempt).toMatchObject({
        attempt: 1,
        response: null,
        error: `no answer within ${DEFAULT_PUSH_TIMEOUT_MS} ms`,
      });
    } finally {
      close();
    }
  });
});
