import type { SandboxEvents } from "../events.js";
import type { SandboxLogger } from "../log/logger.js";
import { counted } from "../text/plural.js";
import type { PushDispatcher, PushResult } from "./dispatcher.js";

/** One asynchronous answer (`$process-message?async=true`): the response message and where it goes. */
export interface ResponseDelivery {
  /** response-url, or the message's MessageHeader.source.endpoint. */
  target: string;
  /** The response message exactly as the synchronous call would have answered it. */
  body: string;
  contentType: string;
  /** The operation answered, and the MessageHeader id of the message answered: the journal's operation and messageId. */
  operation: string;
  messageId: string;
  /** The journal id of the inbound call answered 202. */
  respondsTo: string;
  /** The workspace's events: its journal records each attempt. */
  events: SandboxEvents;
  /** Wait this long before the first attempt (a rule's `async.delay`). */
  delayMs: number;
  /** True when the message was not accepted after all (its changes could not be saved: answered 503, not 202). */
  withdrawn?: () => boolean;
}

/** An answer not yet delivered as the state file keeps it: sent again after a restart, when it is due. */
export interface SavedDelivery extends Omit<ResponseDelivery, "events" | "delayMs" | "withdrawn"> {
  /** When the first attempt was (or is) due: ISO 8601. */
  dueAt: string;
}

/** Keeps an answer until it is delivered (or given up): `done` forgets it. */
export type KeepAnswer = (saved: SavedDelivery) => { done(): void };

/**
 * Sends asynchronous answers through the push dispatcher, so that they have the pushes' retries, timeouts,
 * allow-list (and, under --auth oauth2, the address check) and journal. `send` returns at once; the answer goes after
 * its delay. A delay's timer does not keep the process alive, and `stop` clears them: a sandbox that stops sends
 * no answer still waiting (a state file keeps them for the next start).
 */
export class ResponseDeliveries {
  readonly #waiting = new Set<ReturnType<typeof setTimeout>>();
  #stopped = false;

  constructor(
    private readonly dispatcher: PushDispatcher,
    private readonly logger: SandboxLogger,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /**
   * Why an answer may not go to `target`, checked before the message is accepted (so a refusal changes nothing): not
   * an absolute http(s) URL, credentials in it, a host --push-allow does not name, or (under --auth oauth2) an
   * internal address written as such. A name that resolves to an internal address is refused when it is resolved,
   * at delivery, as for every push. Null when it may.
   */
  refusal(target: string): string | null {
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      return `${JSON.stringify(target)} is not an absolute URL`;
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      return `${target} is not an http:// or https:// URL`;
    }
    if (url.username || url.password) return `${url.protocol}//${url.host}… names credentials, which are never sent`;
    return this.dispatcher.refusal(target);
  }

  /**
   * Sends the answer after its delay; how it went is in the journal (each attempt) and the log (a failure). `keep`
   * holds it meanwhile (the state file, so that a restart sends it), until its delivery ends.
   */
  send(answer: ResponseDelivery, keep?: KeepAnswer): void {
    const { events: _events, delayMs, withdrawn, ...rest } = answer;
    if (this.#stopped) return;
    const kept = keep?.({ ...rest, dueAt: new Date(this.now().getTime() + Math.max(0, delayMs)).toISOString() });
    const go = () => {
      if (withdrawn?.()) {
        kept?.done();
        return;
      }
      this.dispatcher
        .deliver({
          target: answer.target,
          headers: {},
          body: answer.body,
          contentType: answer.contentType,
          event: answer.operation,
          messageId: answer.messageId,
          events: answer.events,
          respondsTo: answer.respondsTo,
        })
        .then((result) => {
          kept?.done();
          this.#failed(answer, result);
        });
    };
    const timer = setTimeout(
      () => {
        this.#waiting.delete(timer);
        go();
      },
      Math.max(0, answer.delayMs),
    );
    timer.unref();
    this.#waiting.add(timer);
  }

  /** The sandbox stops: answers still waiting for their delay are not sent (attempts under way end on their own). */
  stop(): void {
    this.#stopped = true;
    for (const timer of this.#waiting) clearTimeout(timer);
    this.#waiting.clear();
  }

  #failed(answer: ResponseDelivery, result: PushResult): void {
    if (result.delivered) return;
    // Each attempt is a line of the request log; this says the answer as a whole is given up.
    this.logger.warn(
      `call ${answer.respondsTo}: the asynchronous answer to ${answer.target} failed after ${counted(result.attempts, "attempt")}: ${result.error ?? `answered ${result.status}`}`,
      {
        event: "async-answer-failed",
        call: answer.respondsTo,
        target: answer.target,
        attempts: result.attempts,
        status: result.status,
        error: result.error,
      },
    );
  }
}
