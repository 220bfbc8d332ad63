import type { Bundle, Patient } from "fhir/r4.js";
import type { Hono } from "hono";
import { http, PROCESS_TIMEOUT_MS } from "../cli/cli-process.js";
import { envelope, messageBundle, STANDARD } from "../support/messages.js";

/** A call of the load that got an answer: what the client saw. */
export interface Answered {
  status: number;
  /** X-Sandbox-Call-Id: the journal id the sandbox gave the call. */
  callId: string;
  /** The request's MessageHeader id. */
  messageId: string;
  /** X-Sandbox-Rule, when a scenario rule answered. */
  rule: string | null;
}

export const LOAD_PATIENT: Patient = {
  resourceType: "Patient",
  identifier: [{ system: "urn:ae:emirates-id", value: "784-1990-1234567-6" }],
};

/** A view-patient-profile message with a fresh MessageHeader id, as each call of the load sends. */
export const profileMessage = (): Bundle => messageBundle("view-patient-profile", [LOAD_PATIENT]);

/** Sends one message to a running sandbox and returns what the client saw. */
export async function sendMessage(
  url: string,
  bundle: Bundle,
  headers: Record<string, string> = {},
): Promise<Answered> {
  const reply = await http(`${url}${STANDARD}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: envelope(bundle),
  });
  return {
    status: reply.status,
    callId: reply.headers.get("x-sandbox-call-id") ?? "",
    messageId: bundle.entry?.[0]?.resource?.id ?? "",
    rule: reply.headers.get("x-sandbox-rule"),
  };
}

export interface Load {
  /** Every call answered so far, in the order the answers came. */
  answered: Answered[];
  /** Why loops ended early (the server went away): one entry per loop at most. */
  failures: string[];
  /** Resolves once `n` calls were answered; rejects if every loop ended first. */
  reached(n: number): Promise<void>;
  /** Ends the loops after their current call; resolves when they have all ended. */
  stop(): Promise<void>;
}

/**
 * Load on a running sandbox: `workers` concurrent loops, each sending
 * messages with fresh MessageHeader ids one after the other. A loop ends at
 * `stop()`, at its first failed send (the server stopped), or when the loops
 * together have sent `maxCalls`: bounded whatever happens.
 */
export function startLoad(
  url: string,
  options: { workers?: number; maxCalls?: number; message?: () => Bundle } = {},
): Load {
  const { workers = 4, maxCalls = 5_000, message = profileMessage } = options;
  const answered: Answered[] = [];
  const failures: string[] = [];
  const waiters: Array<{ n: number; resolve: () => void }> = [];
  let sent = 0;
  let stopped = false;
  const notify = () => {
    for (const w of [...waiters]) {
      if (answered.length < w.n) continue;
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
  };
  const loop = async () => {
    while (!stopped && sent < maxCalls) {
      sent++;
      try {
        answered.push(await sendMessage(url, message()));
      } catch (error) {
        failures.push(String((error as Error).cause ?? error));
        return;
      }
      notify();
    }
  };
  const done = Promise.all(Array.from({ length: workers }, loop));
  return {
    answered,
    failures,
    reached(n) {
      if (answered.length >= n) return Promise.resolve();
      return new Promise((resolve, reject) => {
        waiters.push({ n, resolve });
        void done.then(() => reject(new Error(`the load ended after ${answered.length} answers, before ${n}`)));
      });
    },
    async stop() {
      stopped = true;
      await done;
    },
  };
}

/**
 * A running sandbox seen the way the in-process helpers see an app:
 * `request(path, init)` becomes a fetch over HTTP, so the pharmacy helpers
 * (test/orders/pharmacy-client.ts) drive the real CLI as they drive createApp.
 */
export function remoteApp(url: string): Hono {
  const request = (path: string, init: RequestInit = {}) =>
    fetch(`${url}${path}`, { signal: AbortSignal.timeout(PROCESS_TIMEOUT_MS), ...init });
  return { request } as unknown as Hono;
}

/**
 * Asks `probe` until it returns a value (not undefined), each time after the
 * previous answer: waits on the server's own state changes, bounded by
 * `timeoutMs`, without sleeping.
 */
export async function eventually<T>(
  probe: () => Promise<T | undefined>,
  what: string,
  timeoutMs = PROCESS_TIMEOUT_MS,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
  }
  throw new Error(`${what}: not within ${timeoutMs} ms`);
}
