/**
 * A header name as HTTP allows it (RFC 9110 token): what --redact-header accepts, and what a scripted answer's
 * header may be called. Fetch's `Headers` and Node refuse any other.
 */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
