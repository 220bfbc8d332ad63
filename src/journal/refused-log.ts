import type { SandboxEvents } from "../events.js";
import type { CallDraft } from "./call-record.js";
import type { Redaction } from "./redact.js";

/** How many refused calls are kept, and how much of each body (UTF-8 bytes). */
export interface RefusedLogLimits {
  maxCalls: number;
  maxBodyBytes: number;
}

/** Small on purpose: the log says who knocked, it is no second journal anonymous callers could fill. */
export const REFUSED_LOG_LIMITS: RefusedLogLimits = { maxCalls: 200, maxBodyBytes: 2 * 1024 };

/** One side's body as kept: its first bytes, and how long it was. */
interface KeptBody {
  body: string;
  bodyBytes: number;
  truncated: boolean;
}

/** A refused call as the refused log keeps it: headers redacted as the journal's, bodies cut short. */
export interface RefusedCall {
  id: string;
  at: string;
  durationMs: number;
  /** The workspace the request named (its prefix or header; default when none), null when the name was no name. */
  workspace: string | null;
  /** The operation, when the refusal could tell it (a message path's 401 names it). */
  operation: string | null;
  request: { method: string; url: string; path: string; headers: Record<string, string> } & KeptBody;
  /** The answer; null when a scripted fault sent none. */
  response: ({ status: number; headers: Record<string, string> } & KeptBody) | null;
}

/** What health shows of the log. */
export interface RefusedCounts {
  /** Refused calls since the start. */
  refused: number;
  /** Calls of callers without a valid token that were answered (discovery, the capability statement): counted only. */
  answered: number;
  /** Refused calls held now, and the most held. */
  kept: number;
  maxCalls: number;
}

/** The first `max` UTF-8 bytes of `text` (never a broken character), and how long it was. */
export function cutBody(text: string, max: number): KeptBody {
  // A character is at most 4 bytes: measure only what could be kept, never a whole 1 MiB body twice.
  const bodyBytes = Buffer.byteLength(text);
  if (bodyBytes <= max) return { body: text, bodyBytes, truncated: false };
  const head = Buffer.from(text.slice(0, max), "utf8").subarray(0, max).toString("utf8");
  return { body: head.replace(/\uFFFD$/, ""), bodyBytes, truncated: true };
}

/**
 * The sandbox-wide log of calls that belong to no workspace (CONTRACT §15):
 * those of callers without a valid token under --auth oauth2 (a message's
 * 401, a failed token request, a read of an unknown workspace) and those
 * refused before any workspace took them (a bad workspace name, no room).
 * It observes `call:anonymous`, as a workspace's journal observes
 * `call:completed`: the same recorder, another destination. It keeps the
 * last `maxCalls` refusals with bodies cut to `maxBodyBytes`, and counts
 * the rest; nothing it holds is a team's.
 *
 * @example
 *   const log = new RefusedLog(REFUSED_LOG_LIMITS, events, redaction);
 *   log.list("team-b"); // the refusals that named team-b, oldest first
 */
export class RefusedLog {
  readonly #calls: RefusedCall[] = [];
  #refused = 0;
  #answered = 0;

  constructor(
    readonly limits: RefusedLogLimits,
    events: SandboxEvents,
    private readonly redaction: Redaction,
  ) {
    events.on("call:anonymous", ({ workspace, call }) => this.#record(workspace, call));
  }

  #record(workspace: string | null, draft: CallDraft): void {
    const status = draft.response?.status;
    // An answered read (discovery, metadata) costs nobody anything: counted, not kept.
    if (status !== undefined && status < 400) {
      this.#answered++;
      return;
    }
    this.#refused++;
    const call = this.redaction.call(draft);
    const max = this.limits.maxBodyBytes;
    this.#calls.push({
      id: call.id ?? "",
      at: call.at.toISOString(),
      durationMs: call.durationMs,
      workspace,
      operation: call.operation,
      request: {
        method: call.request.method,
        url: call.request.url,
        path: call.request.path,
        headers: call.request.headers,
        ...cutBody(call.request.body, max),
      },
      response: call.response
        ? { status: call.response.status, headers: call.response.headers, ...cutBody(call.response.body, max) }
        : null,
    });
    if (this.#calls.length > this.limits.maxCalls) this.#calls.splice(0, this.#calls.length - this.limits.maxCalls);
  }

  /** The refusals held, oldest first; given a workspace, only those that named it. */
  list(workspace?: string): RefusedCall[] {
    return workspace === undefined ? [...this.#calls] : this.#calls.filter((c) => c.workspace === workspace);
  }

  /** Sandbox-wide counts. */
  counts(): RefusedCounts {
    return {
      refused: this.#refused,
      answered: this.#answered,
      kept: this.#calls.length,
      maxCalls: this.limits.maxCalls,
    };
  }
}
