import { describe, expect, it } from "vitest";
import { DEFAULT_REDACTED_HEADERS, REDACTED, Redaction } from "../../src/journal/redact.js";

// Redaction.headers skips the copy when no name needs lower-casing and no value is secret, remembers each name's
// verdict, and tests values without trimming them first. Here it is compared with the full walk as it was written
// before (every header lower-cased, tested and copied), over hand-written header sets: secrets in odd cases, odd
// white space, names that say they are secret, values that read like credentials under harmless names.

const SECRET_NAME = /token|secret|password|passwd|session|credential|signature|api[-_]?key|[-_]key$/i;
const SECRET_VALUE =
  /^(?:(?:bearer|basic|digest|token|apikey|negotiate|ntlm|hoba|mutual|dpop|aws4-hmac-sha256)\s+\S|eyJ[\w-]*\.[\w-]*\.)/i;

/** The full redaction as it was: a new object, every name lower-cased, every header tested. */
function reference(extra: readonly string[]) {
  const names = new Set([...DEFAULT_REDACTED_HEADERS, ...extra.map((n) => n.toLowerCase())]);
  const secret = (name: string, value: string) => {
    const lower = name.toLowerCase();
    return names.has(lower) || SECRET_NAME.test(lower) || SECRET_VALUE.test(value.trim());
  };
  return (headers: Record<string, string>, always: readonly string[] = []) => {
    const forced = new Set(always.map((n) => n.toLowerCase()));
    const out: Record<string, string> = {};
    for (const [name, value] of Object.entries(headers)) {
      const key = name.toLowerCase();
      out[key] = forced.has(key) || secret(key, value) ? REDACTED : value;
    }
    return out;
  };
}

const JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl";

const HEADER_SETS: Array<Record<string, string>> = [
  {},
  { "content-type": "application/fhir+json", accept: "*/*", host: "localhost:8080", "content-length": "1234" },
  { authorization: "Bearer abc.def" },
  { Authorization: "Bearer abc.def", "Content-Type": "application/json" },
  { AUTHORIZATION: "basic dXNlcjpwdw==" },
  { "x-request-id": "Bearer hidden-in-a-plain-name" },
  { "x-request-id": "   bearer\tspaced-out" },
  { "x-request-id": "\u00a0\u2003Bearer nbsp-and-em-space" },
  { "x-request-id": "\ufeffBearer after-a-bom" },
  { "x-request-id": "\n\r\tToken t0k3n" },
  { "x-request-id": "Bearer" },
  { "x-request-id": "Bearer   " },
  { "x-request-id": "bearer\u00a0x" },
  { "x-request-id": "BearerNoSpace" },
  { "x-trace": JWT },
  { "x-trace": `  ${JWT}  ` },
  { "x-trace": "eyJ-not-a-jwt" },
  { "x-trace": "eyJa.b" },
  { "x-trace": "eyJa.b." },
  { "x-client-secret": "plain" },
  { "X-Session-Id": "42" },
  { "x-my-key": "v", "x-keyboard": "qwerty", "x-monkey": "banana" },
  { "x-api_key": "1", "x-apikey": "2", "api-key": "3", "X-API-KEY": "4" },
  { "x-custom-credential": "c", "x-passwd": "p", "x-signature-256": "s" },
  { "x-tenant": "t1", "X-Tenant": "t2" },
  { "x-pharmacy-token": "abc", "x-pharmacy-branch": "marina" },
  { "x-team-secret-header": "redact-me-by-flag" },
  { "X-Team-Secret-Header": "any case" },
  { "x-redact-me": "by --redact-header", "x-keep-me": "kept" },
  { "X-Redact-Me": "upper case too" },
  { "x-ünïcode": "value", "x-İstanbul": "dotted capital" },
  { "x-weird!#$%&'*+.^_`|~": "token characters" },
  { "123": "numeric name", "content-type": "text/plain" },
  { cookie: "a=b", "set-cookie": "c=d", "proxy-authorization": "Digest x" },
  { "x-forwarded-for": "10.0.0.1", via: "1.1 proxy", "x-sandbox-workspace": "team-a" },
  { "x-note": "dpop proof", "x-note2": "AWS4-HMAC-SHA256 Credential=x", "x-note3": "NTLM TlRMTVNTUAAB" },
  { "x-note": "negotiate\u2028x", "x-note2": "hoba x", "x-note3": "mutual x", "x-note4": "apikey x" },
  { "x-note": "digest", "x-note2": "token\u3000x", "x-note3": "basic \u0085x" },
];

describe("Redaction.headers without the full walk when nothing is secret", () => {
  for (const extra of [[], ["X-Team-Secret-Header", "x-redact-me"]]) {
    it(`gives what the full walk gives, for every header set (--redact-header ${JSON.stringify(extra)})`, () => {
      const redaction = new Redaction(extra);
      const full = reference(extra);
      // Twice: the second time the names' verdicts are remembered.
      for (let round = 0; round < 2; round++) {
        for (const headers of HEADER_SETS) {
          expect(redaction.headers(headers)).toEqual(full(headers));
          expect(Object.keys(redaction.headers(headers))).toEqual(Object.keys(full(headers)));
          const always = Object.keys(headers).slice(0, 1);
          expect(redaction.headers(headers, always)).toEqual(full(headers, always));
        }
      }
    });
  }

  it("keeps a header set with nothing to redact as it is, and copies one it changes", () => {
    const redaction = new Redaction();
    const plain = { "content-type": "application/json", "x-request-id": "r-1" };
    const secret = { "content-type": "application/json", authorization: "Bearer x" };
    const upper = { "Content-Type": "application/json" };

    expect(redaction.headers(plain)).toBe(plain);
    expect(redaction.headers(secret)).not.toBe(secret);
    expect(secret.authorization).toBe("Bearer x");
    expect(redaction.headers(upper)).toEqual({ "content-type": "application/json" });
    expect(redaction.headers(plain, ["x-request-id"])).toEqual({
      "content-type": "application/json",
      "x-request-id": REDACTED,
    });
  });

  it("tests names longer than it remembers, and any number of names, the same way", () => {
    const redaction = new Redaction();
    const full = reference([]);
    const headers: Record<string, string> = {};
    for (let i = 0; i < 3000; i++) headers[`x-h${i}${i % 7 === 0 ? "-token" : ""}${"a".repeat(i % 100)}`] = `v${i}`;

    expect(redaction.headers(headers)).toEqual(full(headers));
    expect(redaction.headers(headers)).toEqual(full(headers));
  });
});
