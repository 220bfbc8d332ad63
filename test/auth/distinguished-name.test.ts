import { describe, expect, it } from "vitest";
import { parseDistinguishedName, sameName } from "../../src/auth/distinguished-name.js";

// tls_client_auth_subject_dn (RFC 8705 §2.1.2) is an RFC 4514 string; Node prints a certificate's subject one
// attribute per line, most significant first, with the same escapes. The expected values are RFC 4514's own.
describe("distinguished names (RFC 4514)", () => {
  it.each([
    ["CN=pharmacy-backend", [["CN", "pharmacy-backend"]]],
    [
      "CN=Steve Kille,O=Isode Limited,C=GB",
      [
        ["CN", "Steve Kille"],
        ["O", "Isode Limited"],
        ["C", "GB"],
      ],
    ],
    // RFC 4514 §4 examples: an escaped comma, a multi-valued RDN, a hex-escaped UTF-8 value.
    [
      "CN=L. Eagle,O=Sue\\, Grabbit and Runn,C=GB",
      [
        ["CN", "L. Eagle"],
        ["O", "Sue, Grabbit and Runn"],
        ["C", "GB"],
      ],
    ],
    [
      "OU=Sales+CN=J. Smith,DC=example,DC=net",
      [
        ["OU", "Sales"],
        ["CN", "J. Smith"],
        ["DC", "example"],
        ["DC", "net"],
      ],
    ],
    ["CN=Lu\\C4\\8Di\\C4\\87", [["CN", "Lučić"]]],
    ["cn=lower", [["CN", "lower"]]],
  ])("%s", (text, attributes) => {
    expect(parseDistinguishedName(text)).toEqual(attributes);
  });

  it.each(["pharmacy backend", "=x", "CN=a,,O=b", "CN=a\\"])("refuses %j", (text) => {
    expect(parseDistinguishedName(text)).toBeNull();
  });

  it("compares Node's multi-line subject with an RFC 4514 string, in either order", () => {
    const node = parseDistinguishedName('C=AE\nO=Al Noor\nCN=clinic\\, \\"north\\"');
    const registered = parseDistinguishedName('CN=clinic\\, \\"north\\",O=Al Noor,C=AE');
    expect(node && registered && sameName(node, registered)).toBe(true);
    const other = parseDistinguishedName("CN=clinic,O=Al Noor,C=AE");
    expect(node && other && sameName(node, other)).toBe(false);
  });
});
