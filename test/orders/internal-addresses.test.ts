import { describe, expect, it } from "vitest";
import { addressRefusal, hostAllowed, literalAddressRefusal, pushAllowProblems } from "../../src/push/push-allow.js";

// Which addresses a push under --auth oauth2 may connect to, written by hand from the RFCs that set ranges
// apart (CONTRACT §15): RFC 1122 §3.2.1.3 (0/8 "this network", 127/8 loopback), RFC 1918 (10/8, 172.16/12,
// 192.168/16), RFC 3927 (169.254/16 link-local), RFC 6598 (100.64/10 shared address space), RFC 4291 §2.5.2–2.5.6
// (::, ::1, IPv4-compatible ::/96, IPv4-mapped ::ffff:0:0/96, fe80::/10), RFC 3879 (fec0::/10, deprecated
// site-local), RFC 4193 (fc00::/7), RFC 6052 (64:ff9b::/96). Each range is tried at both ends and just outside.

const REFUSED: ReadonlyArray<[string, string]> = [
  ["0.0.0.0", "unspecified"],
  ["0.255.255.255", "unspecified"],
  ["10.0.0.0", "private"],
  ["10.255.255.255", "private"],
  ["100.64.0.0", "carrier-grade NAT"],
  ["100.127.255.255", "carrier-grade NAT"],
  ["127.0.0.1", "loopback"],
  ["127.0.0.0", "loopback"],
  ["127.255.255.255", "loopback"],
  ["127.1.2.3", "loopback"],
  ["169.254.0.0", "link-local"],
  ["169.254.169.254", "link-local"],
  ["169.254.255.255", "link-local"],
  ["172.16.0.0", "private"],
  ["172.31.255.255", "private"],
  ["192.168.0.0", "private"],
  ["192.168.255.255", "private"],
  ["::", "unspecified"],
  ["::1", "loopback"],
  ["0:0:0:0:0:0:0:1", "loopback"],
  ["fe80::", "link-local"],
  ["fe80::1%eth0", "link-local"],
  ["febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "link-local"],
  ["fec0::1", "site-local"],
  ["fc00::", "unique-local"],
  ["fd12:3456:789a:1::1", "unique-local"],
  ["fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "unique-local"],
  ["::ffff:127.0.0.1", "loopback"],
  ["::ffff:7f00:1", "loopback"],
  ["::FFFF:7F00:0001", "loopback"],
  ["::ffff:10.1.2.3", "private"],
  ["::ffff:169.254.169.254", "link-local"],
  ["::ffff:100.64.0.1", "carrier-grade NAT"],
  ["::ffff:0.0.0.0", "unspecified"],
  ["::127.0.0.1", "loopback"],
  ["::192.168.1.1", "private"],
  ["64:ff9b::127.0.0.1", "loopback"],
  ["64:ff9b::a9fe:a9fe", "link-local"],
];

const ALLOWED: readonly string[] = [
  "1.0.0.0",
  "8.8.8.8",
  "9.255.255.255",
  "11.0.0.0",
  "100.63.255.255",
  "100.128.0.0",
  "126.255.255.255",
  "128.0.0.0",
  "169.253.255.255",
  "169.255.0.0",
  "172.15.255.255",
  "172.32.0.0",
  "192.167.255.255",
  "192.169.0.0",
  "203.0.113.5",
  "2001:db8::1",
  "2606:4700:4700::1111",
  "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
  "fe00::1",
  "fe7f::1",
  "::ffff:8.8.8.8",
  "::ffff:172.32.0.1",
  "64:ff9b::808:808",
];

describe("internal addresses under --auth oauth2, with no --push-allow", () => {
  it.each(REFUSED)("%s is refused (%s)", (address, kind) => {
    const refusal = addressRefusal(address, address, []);
    expect(refusal).toContain(kind);
    expect(refusal).toContain("--push-allow");
  });

  it.each(ALLOWED)("%s is allowed", (address) => {
    expect(addressRefusal(address, address, [])).toBeNull();
  });

  it("says which name resolved to the address, and how to allow it", () => {
    expect(addressRefusal("127.0.0.1", "receiver.local", [])).toMatch(
      /^receiver\.local resolves to 127\.0\.0\.1, a loopback .*--push-allow receiver\.local or --push-allow 127\.0\.0\.1/,
    );
  });
});

describe("--push-allow naming internal addresses", () => {
  it.each([
    // [address connected to, the URL's host, --push-allow, allowed?]
    ["127.0.0.1", "127.0.0.1", ["127.0.0.1"], true],
    ["127.0.0.1", "127.0.0.1", ["127.0.0.0/8"], true],
    ["127.0.0.2", "127.0.0.2", ["127.0.0.1"], false],
    ["127.0.0.1", "127.0.0.1", ["10.0.0.0/8"], false],
    ["127.0.0.1", "127.0.0.1", ["*"], false],
    ["127.0.0.1", "localhost", ["*"], false],
    ["127.0.0.1", "localhost", ["localhost"], true],
    ["::1", "localhost", ["localhost"], true],
    ["127.0.0.1", "localhost", ["*.localhost"], false],
    ["192.168.1.20", "receiver.lan", ["*.lan"], true],
    ["192.168.1.20", "receiver.lan", ["other.lan"], false],
    ["192.168.1.20", "receiver.lan", ["192.168.1.0/24"], true],
    ["192.168.2.20", "receiver.lan", ["192.168.1.0/24"], false],
    ["::1", "::1", ["::1"], true],
    ["::1", "::1", ["[::1]"], true],
    ["::1", "::1", ["127.0.0.1"], false],
    // An IPv4 entry never names the IPv6 forms of its addresses: allowing is the narrow way.
    ["::ffff:127.0.0.1", "::ffff:7f00:1", ["127.0.0.1"], false],
    ["fd00::5", "fd00::5", ["fd00::/8"], true],
    ["fd00::5", "fd00::5", ["fc00::/8"], false],
    ["10.9.8.7", "10.9.8.7", ["10.0.0.0/8", "*.example.ae"], true],
  ] as const)("%s (host %s) with %j → %s", (address, host, allow, allowed) => {
    expect(addressRefusal(address, host, allow) === null).toBe(allowed);
  });

  it.each([
    ["http://127.0.0.1:9/hook", [], true],
    ["http://[::1]:9/hook", [], true],
    ["http://[::ffff:127.0.0.1]/hook", [], true],
    ["http://2130706433/hook", [], true],
    ["http://127.0.0.1:9/hook", ["127.0.0.1"], false],
    ["http://localhost:9/hook", [], false],
    ["http://pharmacy.example.ae/hook", [], false],
    ["http://8.8.8.8/hook", [], false],
    ["not a url", [], false],
  ] as const)("literalAddressRefusal(%s, %j) refuses: %s", (url, allow, refused) => {
    expect(literalAddressRefusal(url, allow) !== null).toBe(refused);
  });
});

describe("--push-allow entries", () => {
  it.each([
    ["http://10.1.2.3:9000/hook", ["10.0.0.0/8"], true],
    ["http://11.0.0.1/hook", ["10.0.0.0/8"], false],
    ["http://pharmacy.internal/hook", ["10.0.0.0/8"], false],
    ["http://[fd00::5]/hook", ["fd00::/8"], true],
    ["http://[fd00::5]/hook", ["fd00::5"], true],
    ["http://pharmacy.example.ae/hook", ["10.0.0.0/8", "*.example.ae"], true],
  ] as const)("hostAllowed(%s, %j) → %s", (url, allow, allowed) => {
    expect(hostAllowed(url, allow)).toBe(allowed);
  });

  it.each([
    "*",
    "*.example.ae",
    "pharmacy.example.ae",
    "localhost",
    "127.0.0.1",
    "10.0.0.0/8",
    "::1",
    "[::1]",
    "fd00::/8",
  ])("%s is a valid entry", (entry) => {
    expect(pushAllowProblems([entry])).toEqual([]);
  });

  it.each(["127.0.0.1:9000", "http://pharmacy.example.ae", "10.0.0.0/33", "fd00::/129", "10.0.0.0/8/8", "*.", "a b"])(
    "%s is refused at start, saying what the entries may be",
    (entry) => {
      const [problem] = pushAllowProblems([entry]);
      expect(problem).toContain(`"${entry}"`);
      expect(problem).toMatch(/host name, \*\.domain, \*, IP address or CIDR range/);
    },
  );
});
