import { parseJson } from "../envelope/json.js";
import { redactSubscriptions } from "../journal/redact.js";
import { DEFAULT_OPERATIONS } from "../routing/default-operations.js";
import { type Comparison, compareAnswers, type ObservedAnswer } from "./compare.js";
import type { RecordedCall } from "./read-journal.js";

export interface ReplayOptions {
  /** Base URL of the target, e.g. http://localhost:8080 (a path prefix is kept). */
  target: string;
  /** The target's base path: message paths are sent under it instead of the recorded one. */
  basePath?: string | undefined;
  /** Extra request headers (recorded credentials are redacted, so they are given here). */
  headers: Record<string, string>;
  /** Per-call timeout. */
  timeoutMs: number;
  fetch?: typeof fetch;
}

/** One replayed call: what was recorded, what the target answers now, and how they differ. */
export interface ReplayResult {
  /** 1, 2, … in replay order. */
  n: number;
  call: RecordedCall;
  then: ObservedAnswer;
  now: ObservedAnswer;
  comparison: Comparison;
  durationMs: number;
}

/** The message paths every catalogue starts from; the part of a recorded path before one is its base path. */
const MESSAGE_PATHS = [...new Set(DEFAULT_OPERATIONS.map((op) => op.path))].sort((a, b) => b.length - a.length);

/** Where a recorded call goes on the target: its path (under `basePath` when given) and query. */
export function replayUrl(call: RecordedCall, options: Pick<ReplayOptions, "target" | "basePath">): string {
  let path = call.request.path;
  if (options.basePath !== undefined) {
    const base = options.basePath.replace(/\/+$/, "");
    const known = MESSAGE_PATHS.find((p) => path.endsWith(p));
    path = `${base}${known ?? path}`;
  }
  let search = "";
  try {
    search = new URL(call.request.url, "http://recorded.invalid").search;
  } catch {
    // A recorded URL that does not parse carries no query worth replaying.
  }
  return `${options.target.replace(/\/+$/, "")}${path}${search}`;
}

const bodyText = (body: unknown): string =>
  typeof body === "string" ? body : body === null || body === undefined ? "" : JSON.stringify(body);

/** A body as the journal shows it: parsed JSON when it is JSON, else the text; null when empty. */
function shown(text: string): unknown {
  if (text === "") return null;
  const parsed = parseJson(text);
  return parsed.ok ? parsed.value : text;
}

function failure(error: unknown, timeoutMs: number): string {
  const e = error as Error & { cause?: { code?: string; message?: string } };
  if (e.name === "TimeoutError") return `no answer within ${timeoutMs} ms`;
  return e.cause?.code ?? e.cause?.message ?? e.message;
}

/** Sends one recorded call as it was sent (method, path, content type, body) and reads the answer. */
export async function sendRecorded(call: RecordedCall, options: ReplayOptions): Promise<ObservedAnswer> {
  const { method } = call.request;
  const headers: Record<string, string> = {};
  const contentType = call.request.headers["content-type"];
  if (contentType !== undefined) headers["content-type"] = contentType;
  Object.assign(headers, options.headers);
  const hasBody = method !== "GET" && method !== "HEAD";
  try {
    const res = await (options.fetch ?? fetch)(replayUrl(call, options), {
      method,
      headers,
      ...(hasBody ? { body: bodyText(call.request.body) } : {}),
      redirect: "manual",
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    const text = await res.text();
    // The target may echo a Subscription with values the report must not show.
    return { status: res.status, body: redactSubscriptions(shown(text)) };
  } catch (error) {
    return { status: null, body: null, error: failure(error, options.timeoutMs) };
  }
}

/** The recorded answer of a call. */
export function recordedAnswer(call: RecordedCall): ObservedAnswer {
  if (call.response) return { status: call.response.status, body: call.response.body };
  return { status: null, body: null, error: call.error ?? call.fault ?? "no answer recorded" };
}

/**
 * Re-sends recorded inbound calls to a target one after the other, in
 * recorded order, and compares each answer with the recorded one
 * (compareAnswers: volatile ids, fullUrls and timestamps ignored). Outbound
 * calls (pushes) are not replayed. Yields each result as it completes.
 *
 * @example
 *   for await (const r of replayCalls(readJournal(file, stats), { target, headers: {}, timeoutMs: 10_000 }))
 *     console.log(r.n, r.call.operation, r.comparison.same);
 */
export async function* replayCalls(
  calls: AsyncIterable<RecordedCall>,
  options: ReplayOptions,
  onStart?: (n: number, call: RecordedCall) => void,
): AsyncGenerator<ReplayResult> {
  let n = 0;
  for await (const call of calls) {
    if (call.direction !== "inbound") continue;
    n++;
    onStart?.(n, call);
    const started = performance.now();
    const now = await sendRecorded(call, options);
    const then = recordedAnswer(call);
    yield {
      n,
      call,
      then,
      now,
      comparison: compareAnswers(then, now),
      durationMs: Math.round(performance.now() - started),
    };
  }
}
