import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
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

/** A line of a journal file that is not a call record. */
export interface BadLine {
  line: number;
  reason: string;
}

/** What reading a journal file found besides the calls. */
export interface JournalReadStats {
  lines: number;
  calls: number;
  /** Lines that are not call records (the cut-off last line is not among them). */
  bad: BadLine[];
  /** The last line was cut off (a crash mid-write): skipped. */
  cutOff: boolean;
}

/** Files written by other versions (or by hand) may hold secrets in clear: the default rules apply on reading. */
const redaction = new Redaction();

export const newReadStats = (): JournalReadStats => ({ lines: 0, calls: 0, bad: [], cutOff: false });

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
 * Reads a journal file (NDJSON, one call per line) one line at a time, so a
 * file of any size is read in bounded memory. Lenient: a line that is not a
 * call record is skipped and noted in `stats`; a cut-off last line (the
 * server was killed mid-write) is skipped and flagged as such. Secrets are
 * redacted as the journal does (src/journal/redact.ts), whoever wrote the file.
 *
 * @example
 *   const stats = newReadStats();
 *   for await (const call of readJournal("calls.ndjson", stats)) console.log(call.id);
 */
export async function* readJournal(path: string, stats: JournalReadStats): AsyncGenerator<RecordedCall> {
  const lines = createInterface({
    input: createReadStream(path, { encoding: "utf8" }),
    crlfDelay: Number.POSITIVE_INFINITY,
  });
  let lastBad: BadLine | undefined;
  try {
    for await (const text of lines) {
      stats.lines++;
      if (text.trim() === "") continue;
      let parsed: unknown;
      let call: RecordedCall | string;
      try {
        parsed = JSON.parse(text);
        call = asRecordedCall(parsed);
      } catch (error) {
        call = `not JSON (${(error as Error).message})`;
      }
      if (typeof call === "string") {
        lastBad = { line: stats.lines, reason: call };
        stats.bad.push(lastBad);
        continue;
      }
      stats.calls++;
      yield redaction.recorded(call);
    }
  } finally {
    lines.close();
  }
  // Only the very last line can be a write cut short by a crash: that one is expected, the others are not.
  if (lastBad && lastBad.line === stats.lines && lastBad.reason.startsWith("not JSON")) {
    stats.bad.pop();
    stats.cutOff = true;
  }
}
