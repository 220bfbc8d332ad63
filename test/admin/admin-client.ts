import type { Hono } from "hono";
import type { Reply } from "../support/messages.js";

/** Calls the admin API in-process: a body is sent as JSON (a string as is), the answer parsed when it is JSON. */
export async function admin(
  app: Hono,
  method: string,
  path: string,
  options: {
    body?: unknown;
    token?: string;
    headers?: Record<string, string>;
    /** Before /__admin, e.g. a workspace's /w/team-a. */
    prefix?: string;
  } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  let body: string | undefined;
  if (options.body !== undefined) {
    headers["content-type"] ??= "application/json";
    body = typeof options.body === "string" ? options.body : JSON.stringify(options.body);
  }
  const res = await app.request(`${options.prefix ?? ""}/__admin${path}`, {
    method,
    headers,
    ...(body !== undefined ? { body } : {}),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text === "" ? null : JSON.parse(text);
  } catch {
    // Left as text: the test asserts on it.
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

/** The journal as GET /__admin/calls shows it (query string without the "?"). */
export async function listCalls(app: Hono, query = "", token?: string) {
  const reply = await admin(app, "GET", `/calls${query ? `?${query}` : ""}`, token === undefined ? {} : { token });
  if (reply.status !== 200)
    throw new Error(`GET /__admin/calls answered ${reply.status}: ${JSON.stringify(reply.body)}`);
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary call JSON
  return reply.body.calls as any[];
}

/** A clock the test moves by hand: `createApp({}, { now: clock.now })`. */
export function manualClock(start: string) {
  let current = new Date(start);
  return {
    now: () => new Date(current),
    set: (iso: string) => {
      current = new Date(iso);
    },
  };
}
