import { createReadStream } from "node:fs";
import { isObject } from "../envelope/json.js";
import { Redaction } from "../journal/redact.js";

/**
 * A recorded call as GET /__admin/calls, GET /__admin/calls/export and
 * `--journal-file` show it (src/journal/call-view.ts): bodies are parsed JSON
 * when they were JSON, else the text (null for an empty body).
 */
export interface RecordedCall {
  id: string;
  direction: "inbound" | "outbound";
  at: string;
  operation: string | null;
  messageId: string | null;
  rule?: string | null;
  duplicate?: boolean;
  fault?: string;
  upstream?: string;
  request: { method: string; url: string; path: string; headers: Record<string, string>; body: unknown };
  response: { status: number; headers: Record<string, string>; body: unknown } | null;
  error?: string;
}

/** What reading a journal file found besides the calls. */
export interface JournalReadStats {
  lines: number;
  calls: number;
  /** The last line was cut off (a crash mid-write, before that call was answered): skipped. */
  cutOff: boolean;
}

/**
 * A line of a journal file that is no recorded call: the file cannot be read whole, and a report, a replay or a
 * scenario made of the rest would leave calls out without saying so.
 */
export class JournalLineError extends Error {
  constructor(
    readonly file: string,
    readonly line: number,
    readonly reason: string,
  ) {
    super(
      `${file}:${line}: not a recorded call (${reason}). Each line of a journal file must be one call as JSON, as --journal-file and GET /__admin/calls/export write it: fix or remove this line.${
        reason.startsWith("not JSON")
          ? " (Builds of the sandbox before 0.1.0 split a call whose request body held line breaks over several lines: record such calls again.)"
          : ""
      }`,
    );
  }
}

/** Files written by other versions (or by hand) may hold secrets in clear: the default rules apply on reading. */
const redaction = new Redaction();

export const newReadStats = (): JournalReadStats => ({ lines: 0, calls: 0, cutOff: false });

/** The request/response shape of a call record, or why a parsed line is not one. */
export function asRecordedCall(value: unknown): RecordedCall | string {
  if (!isObject(value)) return "not a JSON object";
  if (value.direction !== "inbound" && value.direction !== "outbound") return 'no "direction" (inbound or outbound)';
  const request = value.request;
  if (!isObject(request) || typeof request.method !== "string" || typeof request.path !== "string") {
    return 'no "request" with method and path';
  }
  const response = value.response;
  if (response !== null && response !== undefined && !(isObject(response) && typeof response.status === "number")) {
    return '"response" is neither null nor {status, body}';
  }
  return {
    ...(value as unknown as RecordedCall),
    id: String(value.id ?? ""),
    operation: typeof value.operation === "string" ? value.operation : null,
    messageId: typeof value.messageId === "string" ? value.messageId : null,
    request: {
      method: request.method,
      path: request.path,
      url: typeof request.url === "string" ? request.url : request.path,
      headers: isObject(request.headers) ? (request.headers as Record<string, string>) : {},
      body: request.body ?? null,
    },
    response: isObject(response)
      ? {
          status: response.status as number,
          headers: isObject(response.headers) ? (response.headers as Record<string, string>) : {},
          body: response.body ?? null,
        }
      : null,
  };
}

/**
 * The lines of a file as they come, split at "\n" only (as NDJSON is; a "\r" before it is dropped, for a file that
 * went through a Windows editor), each with whether a "\n" ended it: only the last line can lack one.
 */
async function* fileLines(path: string): AsyncGenerator<{ text: string; terminated: boolean }> {
  let rest = "";
  for await (const chunk of createReadStream(path, { encoding: "utf8" }) as AsyncIterable<string>) {
    let start = 0;
    for (let end = chunk.indexOf("\n"); end !== -1; end = chunk.indexOf("\n", start)) {
      const text = rest + chunk.slice(start, end);
      yield { text: text.endsWith("\r") ? text.slice(0, -1) : text, terminated: true };
      rest = "";
      start = end + 1;
    }
    rest += chunk.slice(start);
  }
  if (rest !== "") yield { text: rest, terminated: false };
}

/**
 * Reads a journal file (NDJSON, one call per line) one line at a time, so a
 * file of any size is read in bounded memory. Strict: a line that is not a
 * call record throws a JournalLineError naming the file and the line, since
 * whatever is made of the rest would silently lack that call. Only a last
 * line without its "\n" that is no JSON is skipped (and flagged in `stats`):
 * the server was killed while writing it, before that call was answered.
 * Blank lines are skipped. Secrets are redacted as the journal does
 * (src/journal/redact.ts), whoever wrote the file.
 *
 * @example
 *   const stats = newReadStats();
 *   for await (const call of readJournal("calls.ndjson", stats)) console.log(call.id);
 */
export async function* readJournal(path: string, stats: JournalReadStats): AsyncGenerator<RecordedCall> {
  for await (const { text, terminated } of fileLines(path)) {
    stats.lines++;
    if (text.trim() === "") continue;
    let call: RecordedCall | string;
    try {
      call = asRecordedCall(JSON.parse(text));
    } catch (error) {
      if (!terminated) {
        stats.cutOff = true;
        return;
      }
      call = `not JSON (${(error as Error).message})`;
    }
    if (typeof call === "string") throw new JournalLineError(path, stats.lines, call);
    stats.calls++;
    yield redaction.recorded(call);
  }
}
