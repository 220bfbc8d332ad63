import { REDACTED, secretParam } from "../journal/redact.js";
import { type OAuthError, oauthError } from "./oauth-error.js";

/**
 * The most parameters a token request may have. A client-credentials request needs at most six (grant_type,
 * scope, client_id, client_secret or client_assertion_type and client_assertion); the rest of the room is for
 * what client libraries add (audience, resource, …). Past it the form is refused before it is decoded, so a
 * megabyte of distinct keys costs one scan of the text (CONTRACT §15).
 */
export const MAX_TOKEN_PARAMS = 32;

export type TokenForm =
  | { ok: true; params: URLSearchParams; journalText: string }
  | { ok: false; error: OAuthError; journalText: string };

/** A form as the journal keeps it: each parameter once more encoded, credentials redacted (the journal's rule). */
const journalText = (params: Iterable<[string, string]>): string =>
  [...params].map(([k, v]) => `${k}=${secretParam(k, v) ? REDACTED : encodeURIComponent(v)}`).join("&");

/**
 * Reads a token request's application/x-www-form-urlencoded body (RFC 6749 §4.4.2) in time linear in its
 * length: the parameters are counted first (refused past MAX_TOKEN_PARAMS), then decoded once, and a parameter
 * given twice (RFC 6749 §3.2: "MUST NOT be included more than once") is found with one Set.
 */
export function readTokenForm(text: string): TokenForm {
  // The pieces URLSearchParams would decode: between '&'s, empty ones skipped.
  let count = 0;
  for (let start = 0; start <= text.length; ) {
    const amp = text.indexOf("&", start);
    const end = amp === -1 ? text.length : amp;
    if (end > start) count++;
    start = end + 1;
  }
  if (count > MAX_TOKEN_PARAMS) {
    // The journal keeps the first parameters (redacted) and how many more came; decoding them all is the cost
    // the limit is there to avoid.
    const first = new URLSearchParams(
      text
        .split("&", MAX_TOKEN_PARAMS * 2)
        .filter(Boolean)
        .slice(0, MAX_TOKEN_PARAMS)
        .join("&"),
    );
    return {
      ok: false,
      error: oauthError(
        "invalid_request",
        `The token request has ${count} parameters; the token endpoint takes at most ${MAX_TOKEN_PARAMS}. Send grant_type, the client's credentials and scope only.`,
      ),
      journalText: `${journalText(first)}&… (${count - MAX_TOKEN_PARAMS} more parameters not kept)`,
    };
  }
  const params = new URLSearchParams(text);
  const seen = new Set<string>();
  const repeated = new Set<string>();
  for (const key of params.keys()) (seen.has(key) ? repeated : seen).add(key);
  const kept = journalText(params);
  if (repeated.size > 0) {
    return {
      ok: false,
      error: oauthError(
        "invalid_request",
        `Parameter ${[...repeated].join(", ")} is given more than once; give each once.`,
      ),
      journalText: kept,
    };
  }
  return { ok: true, params, journalText: kept };
}
