import type { ObservedCall } from "../step-context.js";

/**
 * Reading the journal calls of a receiver session: what a push's first attempt was answered, whether the sandbox
 * accepted a pharmacy's message, and how to say so in one line.
 */

/** The Bundle a call carried: the `{"content": …}` envelope unwrapped, or the body itself; null when unreadable. */
export function bundleOf(body: string | undefined): Record<string, unknown> | null {
  if (!body) return null;
  try {
    let value: unknown = JSON.parse(body);
    const content = (value as { content?: unknown } | null)?.content;
    if (typeof content === "string") value = JSON.parse(content);
    else if (content && typeof content === "object") value = content;
    return value && typeof value === "object" ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

type Entry = { resource?: Record<string, unknown> };
const entriesOf = (bundle: Record<string, unknown> | null): Entry[] =>
  Array.isArray(bundle?.entry) ? (bundle.entry as Entry[]) : [];

/** The id of the Task a push is about (its first Task entry). */
export function pushedTaskId(call: ObservedCall): string | undefined {
  const task = entriesOf(bundleOf(call.record.request.body)).find((e) => e.resource?.resourceType === "Task");
  return typeof task?.resource?.id === "string" ? task.resource.id : undefined;
}

/** The answer's MessageHeader.response.code (null: the answer is no response message). */
export function responseCode(call: ObservedCall): string | null {
  const known = call.record.responseCode;
  if (known !== undefined) return known;
  const header = entriesOf(bundleOf(call.record.response?.body))[0]?.resource;
  const code = (header?.response as { code?: unknown } | undefined)?.code;
  return header?.resourceType === "MessageHeader" && typeof code === "string" ? code : null;
}

/** The first diagnostics of the answer's OperationOutcome (bare, or in a response message). */
export function answerDiagnostics(call: ObservedCall): string | null {
  const body = bundleOf(call.record.response?.body);
  const outcome =
    body?.resourceType === "OperationOutcome"
      ? body
      : entriesOf(body).find((e) => e.resource?.resourceType === "OperationOutcome")?.resource;
  const issues = (outcome?.issue ?? []) as Array<{ diagnostics?: string }>;
  return issues.find((i) => i.diagnostics)?.diagnostics ?? null;
}

/** The sandbox processed and accepted the message: 200 with a response message coded ok. */
export function accepted(call: ObservedCall): boolean {
  return call.record.response?.status === 200 && responseCode(call) === "ok";
}

/** How the sandbox answered a message, in a few words: `ok`, or `refused (400): why`. */
export function verdictOf(call: ObservedCall): string {
  if (accepted(call)) return "accepted (ok)";
  const status = call.record.response?.status;
  const code = responseCode(call);
  const why = answerDiagnostics(call);
  return `refused (${status ?? "no answer"}${code ? ` ${code}` : ""})${why ? `: ${why}` : ""}`;
}

/** Whether the call's request names one of these ids (a Task's, a request's): UUIDs, so a plain search does. */
export function mentions(call: ObservedCall, ids: readonly string[]): boolean {
  const body = call.record.request.body;
  return ids.some((id) => body.includes(id));
}

/** A duration for people: `12 ms`, `1.5 s`. */
export function seconds(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${Number((ms / 1000).toFixed(2))} s`;
}

/** A push attempt's answer in a few words: `200 after 12 ms`, or `no answer (ECONNREFUSED …) after 5 s`. */
export function attemptAnswer(call: ObservedCall): string {
  const after = `after ${seconds(call.record.durationMs)}`;
  const status = call.record.response?.status;
  return status === undefined
    ? `no answer (${call.record.error ?? "nothing came back"}) ${after}`
    : `${status} ${after}`;
}

/** The id a message's call carries in its MessageHeader, shortened for messages. */
export const short = (id: string | null | undefined): string => (id ? `${id.slice(0, 8)}…` : "(none)");
