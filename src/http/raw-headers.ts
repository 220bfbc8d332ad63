// A request's headers without a framework: what both the Hono edge and a plain Node handler read them with.

import { headerRecord } from "../journal/redact.js";

/**
 * A request's headers as the sandbox reads them: a web `Headers` (in-process), or the lighter view of a Node
 * request's raw header list. Both answer `get` and iterate alike: names lower-cased in name order, a repeated
 * header one value joined with ", " ("; " for Cookie), each Set-Cookie on its own.
 */
export interface RequestHeaders extends Iterable<[string, string]> {
  get(name: string): string | null;
}

/** HTTP whitespace around a value, which `Headers` drops. */
const OUTER_WHITESPACE = /^[\t\n\r ]+|[\t\n\r ]+$/g;

/** A header value without the HTTP whitespace around it, as `Headers` keeps it. */
export function httpTrim(value: string): string {
  const first = value.charCodeAt(0);
  const last = value.charCodeAt(value.length - 1);
  const outer = (code: number) => code === 32 || code === 9 || code === 10 || code === 13;
  return value.length > 0 && (outer(first) || outer(last)) ? value.replace(OUTER_WHITESPACE, "") : value;
}

/**
 * The headers of a request served by the Node adapter, read from the socket's raw list (`rawHeaders`): reading the
 * request's `Headers` would make the adapter build a full web `Headers` for every call. Merged on first use.
 */
export class RawHeaders implements RequestHeaders {
  #merged: Map<string, string> | undefined;
  #cookies: string[] = [];

  constructor(private readonly raw: readonly string[]) {}

  #map(): Map<string, string> {
    if (this.#merged) return this.#merged;
    const merged = new Map<string, string>();
    for (let i = 0; i + 1 < this.raw.length; i += 2) {
      const name = this.raw[i] as string;
      // HTTP/2 pseudo-headers (:method, :path, …) are not headers.
      if (name.startsWith(":")) continue;
      const key = name.toLowerCase();
      const value = httpTrim(this.raw[i + 1] as string);
      if (key === "set-cookie") this.#cookies.push(value);
      const before = merged.get(key);
      merged.set(key, before === undefined ? value : `${before}${key === "cookie" ? "; " : ", "}${value}`);
    }
    this.#merged = merged;
    return merged;
  }

  get(name: string): string | null {
    return this.#map().get(name.toLowerCase()) ?? null;
  }

  *[Symbol.iterator](): Iterator<[string, string]> {
    const merged = this.#map();
    for (const key of sortedKeys(merged)) {
      if (key === "set-cookie") for (const cookie of this.#cookies) yield [key, cookie];
      else yield [key, merged.get(key) as string];
    }
  }

  /** What headerRecord makes of these headers (the last Set-Cookie kept), without a pair built for each. */
  record(): Record<string, string> {
    const merged = this.#map();
    const out: Record<string, string> = {};
    for (const key of sortedKeys(merged)) {
      out[key] = key === "set-cookie" ? (this.#cookies.at(-1) as string) : (merged.get(key) as string);
    }
    return out;
  }
}

/**
 * Puts `key` into `keys`, kept in code-unit order (Array#sort's): a few header names are sorted by insertion, as
 * `sort` allocates a work area each time.
 */
export function insertInOrder(keys: string[], key: string): void {
  let at = keys.length;
  keys.push(key);
  while (at > 0 && (keys[at - 1] as string) > key) {
    keys[at] = keys[at - 1] as string;
    at--;
  }
  keys[at] = key;
}

/** A map's keys in code-unit order. */
function sortedKeys(map: ReadonlyMap<string, unknown>): string[] {
  const keys: string[] = [];
  for (const key of map.keys()) insertInOrder(keys, key);
  return keys;
}

/** A request's headers as the journal records them (headerRecord's record). */
export function requestHeaderRecord(headers: RequestHeaders): Record<string, string> {
  return headers instanceof RawHeaders ? headers.record() : headerRecord(headers);
}

/** One header of a Node request's raw list, repeated ones joined as `Headers` joins them; undefined when absent. */
export function rawHeader(raw: readonly string[], name: string): string | undefined {
  const lower = name.toLowerCase();
  let found: string | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const key = raw[i] as string;
    if (key.length !== lower.length || key.toLowerCase() !== lower) continue;
    const value = httpTrim(raw[i + 1] as string);
    found = found === undefined ? value : `${found}${lower === "cookie" ? "; " : ", "}${value}`;
  }
  return found;
}

/**
 * An answer's web `Headers` as the Node adapter writes them with `writeHead`: one value per name in name order, the
 * Set-Cookie headers last, as a list.
 */
export function nodeHeaders(headers: Headers): Record<string, string | string[] | number> {
  const out: Record<string, string | string[] | number> = {};
  const cookies: string[] = [];
  for (const [name, value] of headers) {
    if (name === "set-cookie") cookies.push(value);
    else out[name] = value;
  }
  if (cookies.length > 0) out["set-cookie"] = cookies;
  return out;
}
