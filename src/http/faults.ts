import { setTimeout as sleep } from "node:timers/promises";
import type { Context } from "hono";
import type { Fault } from "../scenarios/schema.js";
import { callState } from "./call-context.js";
import type { EdgeEnv } from "./edge-env.js";
import { FHIR_JSON } from "./fhir-response.js";

/** Longest a `timeout` fault holds a connection the client never gives up on. */
export const TIMEOUT_FAULT_CAP_MS = 5 * 60_000;

/**
 * Thrown in-process (no socket to break) so that `app.request` rejects the
 * way `fetch` does on a network failure. The app's error handler rethrows it.
 */
export class SimulatedNetworkFault extends Error {
  constructor(readonly fault: Fault) {
    super(`simulated network fault: ${fault}`);
    this.name = "SimulatedNetworkFault";
  }
}

/** Waits `ms`, or less if the client goes away first; undefined when there is nothing to wait for. */
export function delay(c: Context<EdgeEnv>, ms: number): Promise<void> | undefined {
  // No delay asks nothing of the request: reading its signal would build an AbortController for every message, and
  // a promise to await would cost the answer a turn.
  if (ms <= 0) return undefined;
  const signal = c.req.raw.signal;
  if (signal.aborted) return undefined;
  return waitUnlessGone(ms, (done) => {
    signal.addEventListener("abort", done, { once: true });
    return () => signal.removeEventListener("abort", done);
  });
}

/**
 * Waits `ms`, or less if `whenGone` calls back first (the client went away); `whenGone` subscribes and returns its
 * unsubscribe. The edge's delay and the timeout fault's wait, on a web request's signal or a Node response's close.
 */
export function waitUnlessGone(ms: number, whenGone: (done: () => void) => () => void): Promise<void> {
  // The global setTimeout, not node:timers/promises: test fake timers (vi.useFakeTimers) only replace the global.
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      unsubscribe();
      resolve();
    };
    const timer = setTimeout(done, ms);
    const unsubscribe = whenGone(done);
  });
}

/** Resolves when the client gives up on the request (its connection closes or it aborts). */
function clientGoneOrCap(c: Context<EdgeEnv>): Promise<void> {
  return sleep(TIMEOUT_FAULT_CAP_MS, undefined, { signal: c.req.raw.signal }).then(
    () => undefined,
    () => undefined,
  );
}

/** What a scripted answer cut short sends: no body (empty-body) or JSON cut off (malformed-json). */
export function faultBody(fault: "empty-body" | "malformed-json"): string | null {
  return fault === "empty-body" ? null : MALFORMED_JSON;
}

const MALFORMED_JSON = '{"resourceType":"Bundle","type":"message","entry":[{"fullUrl":"urn:uuid:';

/**
 * Stages a scripted fault as a real client sees it: a TCP reset, a 200 with
 * an empty or cut-off body, or no answer at all until the client gives up.
 */
export async function stageFault(
  c: Context<EdgeEnv>,
  fault: Fault,
  status: number,
  headers: Record<string, string>,
): Promise<Response> {
  callState(c).fault = fault;
  const socket = c.env?.incoming?.socket;
  switch (fault) {
    case "empty-body":
    case "malformed-json": {
      const text = faultBody(fault);
      if (text !== null) callState(c).responseText = text;
      return new Response(text, { status, headers: { "content-type": FHIR_JSON, ...headers } });
    }
    case "timeout":
      await clientGoneOrCap(c);
      if (!socket) throw new SimulatedNetworkFault(fault);
      socket.destroy();
      return new Response(null, { status: 504 });
    case "connection-reset":
      if (!socket) throw new SimulatedNetworkFault(fault);
      // RST instead of FIN: the client sees ECONNRESET, as with a crashed peer.
      socket.resetAndDestroy();
      return new Response(null, { status: 502 });
  }
}
