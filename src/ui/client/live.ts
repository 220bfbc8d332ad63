import { useEffect, useRef, useState } from "hono/jsx/dom";
import { apiUrl, authHeaders, SIGN_IN_NEEDED } from "./api.js";

/** An event of GET /__admin/events: `ready` (connected: fetch again what may have been missed), `call`, `order`… */
export interface LiveEvent {
  event: string;
  data: unknown;
}

export type LiveStatus = "connecting" | "live" | "reconnecting" | "stopped";

type Listener = (event: LiveEvent) => void;

/**
 * One server-sent event stream for the page, read with fetch (EventSource
 * cannot send the bearer token), reconnecting on its own after the delay the
 * server asks for. On every (re)connection subscribers get `ready` and fetch
 * their data again, so nothing missed while away stays missing.
 */
class LiveConnection {
  readonly #listeners = new Set<Listener>();
  readonly #statusListeners = new Set<(status: LiveStatus) => void>();
  #status: LiveStatus = "connecting";
  #started = false;
  #retryMs = 1000;

  get status(): LiveStatus {
    return this.#status;
  }

  subscribe(listener: Listener): () => void {
    this.#listeners.add(listener);
    this.#start();
    return () => this.#listeners.delete(listener);
  }

  onStatus(listener: (status: LiveStatus) => void): () => void {
    this.#statusListeners.add(listener);
    return () => this.#statusListeners.delete(listener);
  }

  #setStatus(status: LiveStatus): void {
    this.#status = status;
    for (const l of this.#statusListeners) l(status);
  }

  #start(): void {
    if (this.#started) return;
    this.#started = true;
    void this.#run();
  }

  async #run(): Promise<void> {
    for (;;) {
      try {
        const res = await fetch(apiUrl("events"), {
          headers: { ...authHeaders(), accept: "text/event-stream" },
          cache: "no-store",
        });
        if (res.status === 401) {
          // Started again by the next subscriber, once signed in.
          this.#started = false;
          this.#setStatus("stopped");
          window.dispatchEvent(new CustomEvent(SIGN_IN_NEEDED, { detail: "The admin token was not accepted." }));
          return;
        }
        if (res.ok && res.body) await this.#read(res.body);
      } catch {
        // The server went away or the network broke: reconnect below.
      }
      this.#setStatus("reconnecting");
      await new Promise((resolve) => setTimeout(resolve, this.#retryMs));
    }
  }

  async #read(body: ReadableStream<Uint8Array>): Promise<void> {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
        this.#dispatch(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
      }
    }
  }

  #dispatch(block: string): void {
    let event = "message";
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
      else if (field === "retry" && /^\d+$/.test(value)) this.#retryMs = Number(value);
    }
    if (data.length === 0) return;
    if (event === "ready") this.#setStatus("live");
    let parsed: unknown;
    try {
      parsed = JSON.parse(data.join("\n"));
    } catch {
      return;
    }
    for (const l of [...this.#listeners]) l({ event, data: parsed });
  }
}

const connection = new LiveConnection();

/** Calls `onEvent` for every live event while the component is mounted (the latest `onEvent`, without resubscribing). */
export function useLive(onEvent: Listener): void {
  const latest = useRef(onEvent);
  latest.current = onEvent;
  useEffect(() => connection.subscribe((e) => latest.current?.(e)), []);
}

/** The connection's state, for the indicator in the header. */
export function useLiveStatus(): LiveStatus {
  const [status, setStatus] = useState<LiveStatus>(connection.status);
  useEffect(() => connection.onStatus(setStatus), []);
  return status;
}
