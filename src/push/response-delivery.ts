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
  /** The workspace whose answer it is: its answers not yet delivered count against --max-async-answers. */
  workspace: string;
  /** The workspace's events: its journal records each attempt. */
  events: SandboxEvents;
  /** Wait this long before the first attempt (a rule's `async.delay`). */
  delayMs: number;
  /** True when the message was not accepted after all (its changes could not be saved: answered 503, not 202). */
  withdrawn?: () => boolean;
}

/** An answer not yet delivered as the state file keeps it: sent again after a restart, when it is due. */
export interface SavedDelivery extends Omit<ResponseDelivery, "workspace" | "events" | "delayMs" | "withdrawn"> {
  /** When the first attempt was (or is) due: ISO 8601. */
  dueAt: string;
}

/** Keeps an answer until it is delivered (or given up): `done` forgets it. */
export type KeepAnswer = (saved: SavedDelivery) => { done(): void };

/** How many answers a workspace may hold, and how many of them the dispatcher may carry at once. */
export interface DeliveryLimits {
  /** Answers not yet delivered (waiting for their delay or turn, queued, in flight, backing off): --max-async-answers. */
  perWorkspace: number;
  /** Of one workspace's answers, those handed to the push dispatcher at once: the rest wait their turn here. */
  sendingPerWorkspace: number;
}

/** One answer's place among its workspace's, taken before its message is processed; `release` gives it back. */
export interface AnswerPlace {
  release(): void;
}

/** The asynchronous answers not yet delivered, sandbox-wide (GET /__admin/health, `pushes.asyncAnswers`). */
export interface AsyncAnswerStats {
  /** Answers accepted and not yet delivered or given up, every workspace's. */
  held: number;
  /** Of those, the ones not yet handed to the dispatcher: waiting for their delay, or their workspace's turn. */
  waiting: number;
}

/**
 * Of --push-concurrency, the share one workspace's asynchronous answers may hold at once: a quarter (at least 1), so
 * that a tenant whose answers go to a receiver that never answers slows its own answers, never every workspace's
 * pushes (at the default 32 slots, 8 for one workspace's answers, 24 left to the others).
 */
export const sendingShare = (concurrency: number): number => Math.max(1, Math.floor(concurrency / 4));

const UNLIMITED: DeliveryLimits = {
  perWorkspace: Number.POSITIVE_INFINITY,
  sendingPerWorkspace: Number.POSITIVE_INFINITY,
};

/** One workspace's answers: how many it holds, how many the dispatcher has, and those waiting their turn. */
interface Holding {
  held: number;
  sending: number;
  turns: Array<() => void>;
}

/**
 * Sends asynchronous answers through the push dispatcher, so that they have the pushes' retries, timeouts,
 * allow-list (and, under --auth oauth2, the address check) and journal. `send` returns at once; the answer goes after
 * its delay. A delay's timer does not keep the process alive, and `stop` clears them: a sandbox that stops sends
 * no answer still waiting (a state file keeps them for the next start).
 *
 * Each workspace holds at most `limits.perWorkspace` answers not yet delivered (a place is taken before the message
 * is processed: `reserve`), and hands at most `limits.sendingPerWorkspace` of them to the dispatcher at once: its
 * queue is first come, first served for every workspace's pushes, so one tenant's answers to a receiver that never
 * answers must not fill it.
 */
export class ResponseDeliveries {
  /** Answers waiting for their delay: their workspace, and how to let go of one withdrawn. */
  readonly #waiting = new Map<ReturnType<typeof setTimeout>, { workspace: string; finish(): void }>();
  /** Bumped when a workspace is reset or dropped: an answer taken before then is not sent. */
  readonly #generations = new Map<string, number>();
  readonly #holdings = new Map<string, Holding>();
  #held = 0;
  #sending = 0;
  #stopped = false;

  constructor(
    private readonly dispatcher: PushDispatcher,
    private readonly logger: SandboxLogger,
    private readonly now: () => Date = () => new Date(),
    readonly limits: DeliveryLimits = UNLIMITED,
  ) {}

  /**
   * When a place may free, for a refusal's Retry-After: an answer in flight ends its attempt within the push timeout
   * (it may then back off and try again: a hint, not a promise).
   */
  get retryAfterMs(): number {
    return this.dispatcher.settings.timeoutMs;
  }

  /** Answers `workspace` holds not yet delivered (its places taken, its messages still being processed included). */
  held(workspace: string): number {
    return this.#holdings.get(workspace)?.held ?? 0;
  }

  stats(): AsyncAnswerStats {
    return { held: this.#held, waiting: this.#held - this.#sending };
  }

  /**
   * A place for one more answer of `workspace`, or null when it holds --max-async-answers already: taken before
   * the message is processed (so that messages processed at once cannot pass the limit together), handed to `send`
   * or released.
   */
  reserve(workspace: string): AnswerPlace | null {
    if (this.held(workspace) >= this.limits.perWorkspace) return null;
    return this.#take(workspace);
  }

  #take(workspace: string): AnswerPlace {
    let holding = this.#holdings.get(workspace);
    if (!holding) {
      holding = { held: 0, sending: 0, turns: [] };
      this.#holdings.set(workspace, holding);
    }
    const own = holding;
    own.held++;
    this.#held++;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        own.held--;
        this.#held--;
        // Nothing of it left (no place, so nothing sending or waiting its turn): it is forgotten.
        if (own.held === 0) this.#holdings.delete(workspace);
      },
    };
  }

  /** Runs `job` once fewer than its workspace's share of answers are with the dispatcher; a freed turn passes on. */
  async #inTurn<T>(workspace: string, job: () => Promise<T>): Promise<T> {
    // The answer's place keeps its workspace's holding until this ends.
    const holding = this.#holdings.get(workspace) as Holding;
    if (holding.sending >= this.limits.sendingPerWorkspace) {
      await new Promise<void>((resolve) => holding.turns.push(resolve));
    } else {
      holding.sending++;
      this.#sending++;
    }
    try {
      return await job();
    } finally {
      const next = this.#stopped ? undefined : holding.turns.shift();
      // The turn goes straight to the next answer (no gap another could slip into); else it is given back.
      if (next) next();
      else {
        holding.sending--;
        this.#sending--;
      }
    }
  }

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
  send(answer: ResponseDelivery, keep?: KeepAnswer, place?: AnswerPlace): void {
    const { events: _events, delayMs, withdrawn, workspace, ...rest } = answer;
    if (this.#stopped) {
      place?.release();
      return;
    }
    // An answer a state file brought back takes its place whatever the workspace holds: it was accepted already.
    const held = place ?? this.#take(workspace);
    const generation = this.#generations.get(workspace) ?? 0;
    const current = () => (this.#generations.get(workspace) ?? 0) === generation;
    const kept = keep?.({ ...rest, dueAt: new Date(this.now().getTime() + Math.max(0, delayMs)).toISOString() });
    const finish = () => {
      kept?.done();
      held.release();
    };
    const go = () => {
      if (withdrawn?.() || !current()) {
        finish();
        return;
      }
      // Checked again when its turn comes: the workspace may have been reset while it waited.
      this.#inTurn(workspace, async () => {
        if (!current()) return null;
        return this.dispatcher.deliver({
          target: answer.target,
          headers: {},
          body: answer.body,
          contentType: answer.contentType,
          event: answer.operation,
          messageId: answer.messageId,
          events: answer.events,
          respondsTo: answer.respondsTo,
        });
      }).then((result) => {
        finish();
        if (result) this.#failed(answer, result);
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
    this.#waiting.set(timer, { workspace, finish });
  }

  /**
   * The workspace was reset or dropped: its answers not yet handed to the dispatcher are not sent (an attempt under
   * way ends on its own), and their places are free at once. A test suite that resets between cases gets no answer
   * of an earlier case.
   */
  withdraw(workspace: string): void {
    this.#generations.set(workspace, (this.#generations.get(workspace) ?? 0) + 1);
    for (const [timer, waiting] of this.#waiting) {
      if (waiting.workspace !== workspace) continue;
      clearTimeout(timer);
      this.#waiting.delete(timer);
      waiting.finish();
    }
  }

  /**
   * The sandbox stops: answers still waiting for their delay or their turn are not sent (attempts under way end on
   * their own).
   */
  stop(): void {
    this.#stopped = true;
    for (const timer of this.#waiting.keys()) clearTimeout(timer);
    this.#waiting.clear();
    for (const holding of this.#holdings.values()) holding.turns.length = 0;
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
