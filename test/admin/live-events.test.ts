import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { DEFAULT_LIVE_SETTINGS, LiveEvents } from "../../src/admin/live-events.js";
import { createApp } from "../../src/app.js";
import { SandboxEvents } from "../../src/events.js";
import type { CallRecord } from "../../src/journal/call-record.js";
import { createSandbox } from "../../src/sandbox.js";
import { startServer } from "../../src/server/start-server.js";
import { subscriptionMessage } from "../orders/pharmacy-client.js";
import { post } from "../support/messages.js";
import { refusedUrl } from "../support/receiver.js";
import { within } from "../support/within.js";
import { addAllergy } from "../ui/messages.js";
import { admin } from "./admin-client.js";

// GET /__admin/events: the dashboard's server-sent events (text/event-stream, WHATWG HTML §9.2).

interface Frame {
  event: string;
  id?: string;
  data?: unknown;
  comment?: string;
  retry?: number;
}

/** Reads a text/event-stream body frame by frame (blank-line separated), with a bounded wait for each. */
function frames(body: ReadableStream<Uint8Array>) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  return {
    reader,
    async next(): Promise<Frame | null> {
      for (;;) {
        const end = buffer.indexOf("\n\n");
        if (end >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const frame: Frame = { event: "message" };
          for (const line of block.split("\n")) {
            if (line.startsWith(":")) frame.comment = line.slice(1).trim();
            else if (line.startsWith("event: ")) frame.event = line.slice(7);
            else if (line.startsWith("id: ")) frame.id = line.slice(4);
            else if (line.startsWith("retry: ")) frame.retry = Number(line.slice(7));
            else if (line.startsWith("data: ")) frame.data = JSON.parse(line.slice(6));
          }
          return frame;
        }
        const { done, value } = await within(reader.read(), "the next event");
        if (done) return null;
        buffer += decoder.decode(value, { stream: true });
      }
    },
  };
}

/** The next frame that is not a keep-alive comment or the greeting. */
async function nextEvent(stream: ReturnType<typeof frames>): Promise<Frame | null> {
  for (;;) {
    const frame = await stream.next();
    if (frame === null || (frame.comment === undefined && frame.event !== "ready")) return frame;
  }
}

const QUIET = { info: () => undefined, error: () => undefined };

afterEach(() => {
  vi.useRealTimers();
});

describe("GET /__admin/events", () => {
  it("is an event stream that starts with retry and ready, then a call event per recorded call", async () => {
    const { app } = createApp({}, { logger: QUIET });
    const res = await app.request("/__admin/events");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("no-store");
    const stream = frames(res.body as ReadableStream<Uint8Array>);
    // Reconnect after a second (the SSE retry field), and "ready": the client fetches what it may have missed.
    expect(await stream.next()).toEqual({ event: "ready", retry: 1000, data: {} });

    const reply = await post(app, addAllergy());
    const call = await nextEvent(stream);
    const callId = reply.headers.get("x-sandbox-call-id");
    expect(call?.event).toBe("call");
    expect(call?.id).toBe(callId);
    expect(call?.data).toMatchObject({
      id: callId,
      direction: "inbound",
      operation: "add-allergy",
      status: 200,
      code: "ok",
      rule: null,
    });
    await stream.reader.cancel();
  });

  it("tells of a cleared journal, of orders as they change and of scenario reloads", async () => {
    const folder = mkdtempSync(join(tmpdir(), "uae-fhir-sandbox-events-"));
    const { app } = createApp({ scenarios: folder }, { logger: QUIET });
    const res = await app.request("/__admin/events");
    const stream = frames(res.body as ReadableStream<Uint8Array>);
    expect((await stream.next())?.event).toBe("ready");

    expect((await admin(app, "DELETE", "/calls")).status).toBe(200);
    expect((await nextEvent(stream))?.event).toBe("calls-cleared");

    // A pharmacy whose endpoint refuses: the order is still created (and its delivery fails later).
    const licence = "PH-EVENTS-1";
    expect((await post(app, subscriptionMessage(licence, await refusedUrl()))).status).toBe(200);
    expect((await nextEvent(stream))?.event).toBe("call");
    const created = await admin(app, "POST", "/orders", { body: { pharmacies: [licence] } });
    expect(created.status).toBe(201);
    const order = await nextEvent(stream);
    expect(order?.event).toBe("order");
    expect(order?.data).toMatchObject({ id: created.body.id, state: "open" });

    expect((await admin(app, "POST", "/scenarios/reload")).status).toBe(200);
    for (let frame = await nextEvent(stream); ; frame = await nextEvent(stream)) {
      if (frame?.event === "scenarios") {
        expect(frame.data).toEqual({ ok: true, problems: [] });
        break;
      }
      // Pushes to the refusing pharmacy may come in between.
      expect(["call", "order"]).toContain(frame?.event);
    }

    // Scenario states put back in Started by hand (none were moved: 0).
    expect((await admin(app, "DELETE", "/scenarios/states?scenario=flow")).status).toBe(200);
    for (let frame = await nextEvent(stream); ; frame = await nextEvent(stream)) {
      if (frame?.event === "scenario-states") {
        expect(frame.data).toEqual({ reset: 0, scenario: "flow", key: null });
        break;
      }
      expect(["call", "order"]).toContain(frame?.event);
    }
    await stream.reader.cancel();
    rmSync(folder, { recursive: true });
  });

  it("needs the admin token when the sandbox has one", async () => {
    const { app } = createApp({ adminToken: "s3cret" }, { logger: QUIET });
    expect((await app.request("/__admin/events")).status).toBe(401);
    const res = await app.request("/__admin/events", { headers: { authorization: "Bearer s3cret" } });
    expect(res.status).toBe(200);
    await res.body?.cancel();
  });
});

/** A recorded call as the journal hands it to observers, with a body of `size` bytes. */
function recorded(id: number, size = 10): CallRecord {
  return {
    id: String(id),
    direction: "inbound",
    at: new Date("2026-01-01T00:00:00Z"),
    durationMs: 1,
    operation: "add-allergy",
    messageId: `m-${id}`,
    rule: null,
    request: { method: "POST", url: "http://x/p", path: "/p", headers: {}, body: "x".repeat(size) },
    response: { status: 200, headers: {}, body: "" },
    workspace: "default",
    size,
  };
}

describe("LiveEvents: one stream per client", () => {
  it("holds at most maxQueuedBytes for a client that does not read, then drops them for one overflow event", async () => {
    const events = new SandboxEvents();
    const live = new LiveEvents(events, { ...DEFAULT_LIVE_SETTINGS, maxQueuedBytes: 4096 });
    const stream = frames(live.stream());
    expect((await stream.next())?.event).toBe("ready");
    // Each call event is about 300 bytes: 1,000 of them are far past 4 KiB.
    for (let i = 1; i <= 1000; i++) events.emit("call:recorded", recorded(i));

    const overflow = (await stream.next()) as Frame;
    expect(overflow.event).toBe("overflow");
    // What was dropped, then everything after the overflow: the latest events, within the bound.
    const after: Frame[] = [];
    events.emit("journal:cleared");
    for (let f = await stream.next(); f?.event !== "calls-cleared"; f = await stream.next()) after.push(f as Frame);
    const kept = after.map((f) => Number((f.data as { id: string }).id));
    expect(kept.length).toBeLessThan(20);
    expect(kept.at(-1)).toBe(1000);
    expect((overflow.data as { dropped: number }).dropped + kept.length).toBe(1000);
    await stream.reader.cancel();
  });

  it("stops listening when the client goes away: no listener, no open stream left", async () => {
    const events = new SandboxEvents();
    const before = events.listenerCount("call:recorded");
    const live = new LiveEvents(events);
    const streams = [frames(live.stream()), frames(live.stream()), frames(live.stream())];
    for (const s of streams) expect((await s.next())?.event).toBe("ready");
    expect(live.open).toBe(3);
    expect(events.listenerCount("call:recorded")).toBe(before + 3);

    for (const s of streams) await s.reader.cancel();
    expect(live.open).toBe(0);
    for (const name of [
      "call:recorded",
      "journal:cleared",
      "order:updated",
      "scenarios:loaded",
      "sandbox:changed",
    ] as const)
      expect(events.listenerCount(name), name).toBe(0);
  });

  it("ends every stream on close(), after what was queued", async () => {
    const events = new SandboxEvents();
    const live = new LiveEvents(events);
    const stream = frames(live.stream());
    events.emit("call:recorded", recorded(1));
    live.close();
    expect((await stream.next())?.event).toBe("ready");
    expect((await stream.next())?.event).toBe("call");
    expect(await stream.next()).toBeNull();
    expect(events.listenerCount("call:recorded")).toBe(0);
  });

  it("sends a keep-alive comment every heartbeatMs", async () => {
    vi.useFakeTimers();
    const live = new LiveEvents(new SandboxEvents(), { ...DEFAULT_LIVE_SETTINGS, heartbeatMs: 15_000 });
    const stream = frames(live.stream());
    expect((await stream.next())?.event).toBe("ready");
    vi.advanceTimersByTime(15_000);
    expect((await stream.next())?.comment).toBe("keep-alive");
    await stream.reader.cancel();
  });
});

describe("over a socket", () => {
  it("forgets a client that disconnects", async () => {
    const sandbox = await createSandbox({ deps: { logger: QUIET } });
    try {
      const leaving = new AbortController();
      const gone = await fetch(`${sandbox.url}/__admin/events`, { signal: leaving.signal });
      const staying = await fetch(`${sandbox.url}/__admin/events`);
      const health = async () =>
        ((await (await fetch(`${sandbox.url}/__admin/health`)).json()) as { liveClients: number }).liveClients;
      await expect.poll(health, { timeout: 5000 }).toBe(2);
      await gone.body?.getReader().read();
      leaving.abort();
      await expect.poll(health, { timeout: 5000 }).toBe(1);
      await staying.body?.cancel();
    } finally {
      await sandbox.close();
    }
  });

  it("does not hold a stop: open streams end at once, none is cut off at the end of the grace", async () => {
    const sandbox = createApp({}, { logger: QUIET });
    // A grace far longer than the test: a stop that waited for the stream would time the test out.
    const running = await startServer(sandbox, { port: 0, host: "127.0.0.1", limits: { shutdownGraceMs: 600_000 } });
    try {
      const res = await fetch(`${running.url}/__admin/events`);
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      await within(reader.read(), "the greeting");
      expect(await within(running.close(), "the stop")).toEqual({ cutOff: 0 });
      expect((await within(reader.read(), "the end of the stream")).done).toBe(true);
    } finally {
      await running.close(0);
      sandbox.close();
    }
  });
});
