/**
 * Token endpoint errors as RFC 6749 §5.2 defines them: a JSON object with
 * `error` and `error_description`, status 400 unless said otherwise.
 */

export type OAuthErrorCode =
  | "invalid_request"
  | "invalid_client"
  | "invalid_grant"
  | "unauthorized_client"
  | "unsupported_grant_type"
  | "invalid_scope"
  /** RFC 6749 §4.1.2.1's code for a server that cannot answer now: the rate-limited magic client's 429. */
  | "temporarily_unavailable"
  /** RFC 6749 §4.1.2.1: the authorization endpoint's answer; this server has no response type at all. */
  | "unsupported_response_type";

export interface OAuthError {
  status: number;
  error: OAuthErrorCode;
  description: string;
  headers: Record<string, string>;
}

export const oauthError = (
  error: OAuthErrorCode,
  description: string,
  status = 400,
  headers: Record<string, string> = {},
): OAuthError => ({ status, error, description, headers });

/** Token answers carry credentials or say why there are none: never cached (RFC 6749 §5.1). */
export const NO_STORE = { "cache-control": "no-store", pragma: "no-cache" } as const;
