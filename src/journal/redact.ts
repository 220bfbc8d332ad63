import { isObject, parseJson } from "../envelope/json.js";
import type { CallDraft } from "./call-record.js";

export const REDACTED = "[redacted]";

/**
 * Headers whose values are always redacted (`--redact-header` adds names).
 * Lower case: names are compared case-insensitively.
 */
export const DEFAULT_REDACTED_HEADERS: readonly string[] = [
  "authorization",
  "proxy-authorization",
  "cookie",
  "set-cookie",
  "x-api-key",
  "api-key",
  "x-auth-token",
  "x-access-token",
  "x-refresh-token",
  "x-csrf-token",
  "x-xsrf-token",
  "x-amz-security-token",
  "x-hub-signature",
  "x-hub-signature-256",
];

/** Names that say they carry a credential, whatever comes around them (x-client-secret, x-session-id, …). */
const SECRET_NAME = /token|secret|password|passwd|session|credential|signature|api[-_]?key|[-_]key$/i;

/**
 * Values that read like a credential whatever the header is called: an auth scheme and its parameter, or a JWT,
 * after leading white space (`\s` is the white space `trim` removes; the end of a value does not matter here).
 */
const SECRET_VALUE =
  /^\s*(?:(?:bearer|basic|digest|token|apikey|negotiate|ntlm|hoba|mutual|dpop|aws4-hmac-sha256)\s+\S|eyJ[\w-]*\.[\w-]*\.)/i;

/**
 * Header names a Redaction remembers the verdict on (names repeat from call to call), and the longest: a client's
 * odd names cost at most this much memory; the rest are tested each time.
 */
const NAMES_REMEMBERED = 1024;
const NAME_REMEMBERED_CHARS = 64;

/** A character other than a lower-case token character: a name with one may change when lower-cased. */
const NOT_LOWER_TOKEN = /[^a-z0-9!#$%&'*+.^_`|~-]/;

/**
 * Form and query parameters whose values are credentials (RFC 6749 §2.3.1 and §4.4, RFC 7521/7523, RFC 6750 §2.3):
 * besides these, any name that says it carries a credential (SECRET_NAME) and any value that reads like a JWT.
 */
const SECRET_PARAMS: ReadonlySet<string> = new Set([
  "client_secret",
  "client_assertion",
  "assertion",
  "access_token",
  "refresh_token",
  "id_token",
  "token",
  "password",
  "code_verifier",
]);

/** Whether a form or query parameter holds a credential: by its name, or by a value that reads like a JWT. */
export function secretParam(name: string, value: string): boolean {
  const lower = name.toLowerCase();
  return SECRET_PARAMS.has(lower) || SECRET_NAME.test(lower) || /^eyJ[\w-]*\.[\w-]*\./.test(value.trim());
}

/**
 * A form-urlencoded text (a body, or a URL's query) with the values of its secret parameters replaced by
 * `[redacted]`; every other pair kept as written. Linear in the text.
 */
export function redactForm(text: string): string {
  if (text === "") return text;
  let changed = false;
  const pairs = text.split("&").map((pair) => {
    const eq = pair.indexOf("=");
    if (eq < 0) return pair;
    const name = decodedPart(pair.slice(0, eq));
    if (!secretParam(name, decodedPart(pair.slice(eq + 1)))) return pair;
    changed = true;
    return `${pair.slice(0, eq)}=${REDACTED}`;
  });
  return changed ? pairs.join("&") : text;
}

function decodedPart(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, " "));
  } catch {
    return text;
  }
}

/**
 * A URL (or a path with a query) whose query's secret parameters are redacted, as form bodies are: a client
 * secret sent in the token endpoint's URL, an access token as `?access_token=` (RFC 6750 §2.3), a pharmacy's
 * `?api_key=`. The text is not parsed as a URL, so even one that does not parse keeps no secret.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf("?");
  if (q < 0) return url;
  const hash = url.indexOf("#", q);
  const query = hash < 0 ? url.slice(q + 1) : url.slice(q + 1, hash);
  const redacted = redactForm(query);
  return redacted === query ? url : `${url.slice(0, q + 1)}${redacted}${hash < 0 ? "" : url.slice(hash)}`;
}

/** Lower-cased header names with their values, for a call record. */
export function headerRecord(headers: Iterable<[string, string]>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of headers) out[name.toLowerCase()] = value;
  return out;
}

/**
 * Every `Subscription.channel.header` value ("Name: value") in a JSON value
 * replaced by `[redacted]`, whatever the header is called: the pharmacy guide
 * has pharmacies put their receiver's credentials there. Looks into message
 * Bundles, bare Subscriptions and `{"content": "<bundle string>"}` envelopes.
 * Returns the value itself when it holds none, else a changed copy.
 *
 * @example
 *   redactSubscriptions({ resourceType: "Subscription", channel: { header: ["X-Auth: s3cr3t"] } })
 *   // → { resourceType: "Subscription", channel: { header: ["X-Auth: [redacted]"] } }
 */
export function redactSubscriptions(value: unknown): unknown {
  if (!isObject(value)) return value;
  if (typeof value.content === "string") {
    const inner = parseJson(value.content);
    if (!inner.ok) return value;
    const redacted = redactSubscriptions(inner.value);
    return redacted === inner.value ? value : { ...value, content: JSON.stringify(redacted) };
  }
  if (value.resourceType === "Subscription") return redactSubscription(value);
  if (value.resourceType !== "Bundle" || !Array.isArray(value.entry)) return value;
  let changed = false;
  const entry = value.entry.map((e: unknown) => {
    if (!isObject(e) || !isObject(e.resource) || e.resource.resourceType !== "Subscription") return e;
    const resource = redactSubscription(e.resource);
    if (resource === e.resource) return e;
    changed = true;
    return { ...e, resource };
  });
  return changed ? { ...value, entry } : value;
}

function redactSubscription(subscription: Record<string, unknown>): Record<string, unknown> {
  const { channel } = subscription;
  if (!isObject(channel) || !Array.isArray(channel.header) || channel.header.length === 0) return subscription;
  const header = channel.header.map((line: unknown) => {
    if (typeof line !== "string") return REDACTED;
    const colon = line.indexOf(":");
    return colon > 0 ? `${line.slice(0, colon)}: ${REDACTED}` : REDACTED;
  });
  return { ...subscription, channel: { ...channel, header } };
}

/** A body as text with its Subscriptions redacted; unchanged (same string) when it holds none. */
export function redactBodyText(text: string): string {
  // Cheap test first: most bodies hold no Subscription and are not parsed again.
  if (!text.includes("Subscription")) return text;
  const parsed = parseJson(text);
  if (!parsed.ok) return text;
  const redacted = redactSubscriptions(parsed.value);
  return redacted === parsed.value ? text : JSON.stringify(redacted);
}

/**
 * What of a call may be kept, by rule rather than by look: the sandbox's one
 * place that decides it. The journal applies it to every call before storing
 * it, so the admin API, verify and wait, exports and `--journal-file` show
 * only what it let through; the journal file readers (export, replay) apply
 * it again to files written by other versions.
 */
export class Redaction {
  readonly #names: ReadonlySet<string>;
  /** Lower-cased header names and whether the name alone makes a value secret (on the list, or saying so). */
  readonly #secretName = new Map<string, boolean>();

  /** `extra`: header names redacted besides the defaults (--redact-header), any case. */
  constructor(extra: readonly string[] = []) {
    this.#names = new Set([...DEFAULT_REDACTED_HEADERS, ...extra.map((n) => n.toLowerCase())]);
  }

  /** Whether a header's value is secret: its name is on the list or says so, or its value reads like a credential. */
  secret(name: string, value: string): boolean {
    return this.#nameIsSecret(name.toLowerCase()) || SECRET_VALUE.test(value);
  }

  #nameIsSecret(lower: string): boolean {
    let secret = this.#secretName.get(lower);
    if (secret === undefined) {
      secret = this.#names.has(lower) || SECRET_NAME.test(lower);
      if (lower.length > NAME_REMEMBERED_CHARS) return secret;
      if (this.#secretName.size >= NAMES_REMEMBERED) this.#secretName.clear();
      this.#secretName.set(lower, secret);
    }
    return secret;
  }

  /**
   * Headers with names lower-cased and secret values replaced; `always` names (any case) are secret whatever they
   * hold. The headers themselves when they need neither (the usual call: names lower-cased by headerRecord, no
   * credential): a record of a call keeps them as they are, no copy.
   */
  headers(headers: Record<string, string>, always: readonly string[] = []): Record<string, string> {
    if (always.length === 0 && this.#keptAsTheyAre(headers)) return headers;
    const forced = new Set(always.map((n) => n.toLowerCase()));
    const out: Record<string, string> = {};
    for (const [name, value] of Object.entries(headers)) {
      const key = name.toLowerCase();
      out[key] = forced.has(key) || this.secret(key, value) ? REDACTED : value;
    }
    return out;
  }

  /** No header name to lower-case and no value to redact. */
  #keptAsTheyAre(headers: Record<string, string>): boolean {
    for (const name in headers) {
      if (NOT_LOWER_TOKEN.test(name) || this.#nameIsSecret(name) || SECRET_VALUE.test(headers[name] as string))
        return false;
    }
    return true;
  }

  /**
   * A call as it may be stored: headers of both sides, credentials in the URL's query and Subscriptions in both
   * bodies redacted.
   */
  call(draft: CallDraft): CallDraft {
    const { secretHeaders = [], kept: _kept, ...rest } = draft;
    return {
      ...rest,
      ...(draft.upstream !== undefined ? { upstream: redactUrl(draft.upstream) } : {}),
      request: {
        ...draft.request,
        url: redactUrl(draft.request.url),
        path: redactUrl(draft.request.path),
        headers: this.headers(draft.request.headers, secretHeaders),
        body: redactBodyText(draft.request.body),
      },
      response: draft.response
        ? {
            ...draft.response,
            headers: this.headers(draft.response.headers),
            body: redactBodyText(draft.response.body),
          }
        : null,
    };
  }

  /** A recorded call read back from a journal file (bodies parsed): the same rules. */
  recorded<
    T extends {
      upstream?: string;
      request: { url: string; path: string; headers: Record<string, string>; body: unknown };
      response: RecordedSide | null;
    },
  >(call: T): T {
    return {
      ...call,
      ...(call.upstream !== undefined ? { upstream: redactUrl(call.upstream) } : {}),
      request: {
        ...call.request,
        url: redactUrl(call.request.url),
        path: redactUrl(call.request.path),
        headers: this.headers(call.request.headers),
        body: redactSubscriptions(call.request.body),
      },
      response: call.response
        ? {
            ...call.response,
            headers: this.headers(call.response.headers),
            body: redactSubscriptions(call.response.body),
          }
        : null,
    };
  }
}

interface RecordedSide {
  headers: Record<string, string>;
  body: unknown;
}
