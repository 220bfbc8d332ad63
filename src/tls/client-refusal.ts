/** Why a client's TLS connection was refused, for the log line that says which. */
export interface ClientRefusal {
  reason: "no-certificate" | "unknown-ca" | "expired" | "not-yet-valid" | "invalid" | "plain-http";
  /** OpenSSL's or Node's code, e.g. CERT_HAS_EXPIRED. */
  code: string;
  message: string;
}

// OpenSSL's verification results (X509_V_ERR_*, as Node names them in authorizationError) that mean "another CA".
const UNKNOWN_CA = new Set([
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "CERT_SIGNATURE_FAILURE",
]);

/**
 * The refusal of a client certificate that failed verification (a socket's authorizationError), in words.
 *
 * @example
 *   certificateRefusal("CERT_HAS_EXPIRED").message // "an expired client certificate (CERT_HAS_EXPIRED)"
 */
export function certificateRefusal(code: string): ClientRefusal {
  if (UNKNOWN_CA.has(code)) {
    return {
      reason: "unknown-ca",
      code,
      message: `a client certificate not signed by the --tls-client-ca CA (${code})`,
    };
  }
  if (code === "CERT_HAS_EXPIRED")
    return { reason: "expired", code, message: `an expired client certificate (${code})` };
  if (code === "CERT_NOT_YET_VALID") {
    return { reason: "not-yet-valid", code, message: `a client certificate not valid yet (${code})` };
  }
  return { reason: "invalid", code, message: `a client certificate that does not verify (${code})` };
}

/** A connection without a client certificate where one is required. */
export const NO_CERTIFICATE: ClientRefusal = {
  reason: "no-certificate",
  code: "ERR_SSL_PEER_DID_NOT_RETURN_A_CERTIFICATE",
  message: "a client without a certificate (--tls-client-auth required)",
};

/** Plain HTTP sent to the HTTPS port: the commonest mistake, said so. */
export const PLAIN_HTTP: ClientRefusal = {
  reason: "plain-http",
  code: "ERR_SSL_HTTP_REQUEST",
  message: "a plain-HTTP request on the HTTPS port (use https://)",
};
