/**
 * How the HTTP server treats slow, idle and too many clients, and how long a
 * stop waits for calls in flight: settings of the Node shell, not of the app.
 */
export interface ServerLimits {
  /** Longest a client may take to send a request's headers; then a 408 and the connection closes (slow-loris). */
  headersTimeoutMs: number;
  /** Longest a client may take to send a whole request, body included; then a 408. The time to answer it is not limited. */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this (Node waits about a second longer). */
  keepAliveTimeoutMs: number;
  /** Connections open at once; further ones are closed as they arrive until one ends. */
  maxConnections: number;
  /** On a stop, how long calls in flight may take to finish before their connections are cut. */
  shutdownGraceMs: number;
}

export const DEFAULT_SERVER_LIMITS: ServerLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxConnections: 1_000,
  shutdownGraceMs: 5_000,
};
