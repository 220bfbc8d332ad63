/**
 * Magic clients: built in whenever --auth oauth2 is on, beside the clients
 * file's, so that an integrator can rehearse the unhappy paths of getting a
 * token without any set-up — like a payment sandbox's test cards. Listed in
 * docs/auth.md; every one has the secret MAGIC_SECRET and every scope.
 */

export type MagicBehaviour = "expired-token" | "rate-limited" | "disabled";

export interface MagicClient {
  id: string;
  behaviour: MagicBehaviour;
}

export const MAGIC_SECRET = "magic-secret";

/** Seconds a rate-limited token request is told to wait (Retry-After). */
export const RATE_LIMIT_RETRY_AFTER_SECONDS = 5;

export const MAGIC_CLIENTS: readonly MagicClient[] = [
  /** Gets tokens as usual, but each is expired when issued: the message paths answer 401. */
  { id: "magic-expired-token", behaviour: "expired-token" },
  /** Every token request is answered 429 with Retry-After. */
  { id: "magic-rate-limited", behaviour: "rate-limited" },
  /** Every token request is refused with invalid_client: the client is disabled. */
  { id: "magic-disabled", behaviour: "disabled" },
];
