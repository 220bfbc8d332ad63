import { describe, expect, it } from "vitest";
import { compileLinearRegex, MAX_PROGRAM, MAX_STEPS } from "../../src/text/linear-regex.js";

// The linear-time engine reads JavaScript's syntax with JavaScript's meaning: on patterns that cannot backtrack
// badly, V8's own RegExp is the independent oracle. Each pattern is tried on every text.
const TEXTS = [
  "",
  "DHA-1234",
  "id DHA-1234 x",
  "a\nb",
  "a\rb",
  "a\u2028b",
  "a b",
  "a\u00a0b",
  "a\u3000b",
  "a\tb",
  "a\vb",
  "ABC abc",
  "x/y",
  "[:alpha:]",
  "back\\slash",
  "ctrl\u000aJ",
  "é É",
  "{1,2}",
  "tab\there",
];

const PATTERNS = [
  "^DHA-[0-9]{4}$",
  "DHA-\\d{4}",
  "a.b",
  "a\\sb",
  "a\\Sb",
  "[\\s]",
  "^\\S+$",
  "[^]",
  "[]",
  "a[^]b",
  "\\cJ",
  "\\u00e9",
  "\\x41",
  "(?<word>[a-z]+) (?<other>\\w+)",
  "\\bABC\\b",
  "[\\b]",
  "x\\/y",
  "[[:alpha:]]",
  "\\\\",
  "^$",
  "\\a",
  "\\z",
  "a{",
  "\\{1,2\\}",
  "(?:ab|c)+",
  "[A-Z]+?",
  "\\0",
  "é",
];

describe("compileLinearRegex reads JavaScript patterns as JavaScript does", () => {
  it.each(PATTERNS)("%s", (pattern) => {
    const compiled = compileLinearRegex(pattern);
    if (!compiled.ok) throw new Error(compiled.problem);
    for (const text of TEXTS) expect([text, compiled.regex.test(text)]).toEqual([text, new RegExp(pattern).test(text)]);
  });

  it.each([
    ["abc", "i"],
    ["^b", "m"],
    ["a.b", "s"],
    ["\\u{1F600}", "u"],
    ["\\p{Lu}", "u"],
  ])("%s with the flags %s", (pattern, flags) => {
    const compiled = compileLinearRegex(pattern, {
      ignoreCase: flags.includes("i"),
      multiline: flags.includes("m"),
      dotAll: flags.includes("s"),
      unicode: flags.includes("u"),
    });
    if (!compiled.ok) throw new Error(compiled.problem);
    // One known difference, documented: with `m`, ^ and $ meet lines at \n only (RE2), not at a lone \r or U+2028.
    const texts = [...TEXTS, "ABC", "x\nb", "😀", "Éx"].filter((t) => !flags.includes("m") || !/[\r\u2028]/.test(t));
    for (const text of texts)
      expect([text, compiled.regex.test(text)]).toEqual([text, new RegExp(pattern, flags).test(text)]);
  });

  it("replaceAll expands as String.prototype.replace with /g does", () => {
    const cases: Array<[string, string, string]> = [
      ["(a)(b)?", "xaby a", "[$1|$2|$&|$$]"],
      ["x*", "abc", "-"],
      ["(?<d>\\d+)", "a1b22", "<$<d>>"],
    ];
    for (const [pattern, text, replacement] of cases) {
      const compiled = compileLinearRegex(pattern);
      if (!compiled.ok) throw new Error(compiled.problem);
      expect(compiled.regex.replaceAll(text, replacement)).toBe(text.replace(new RegExp(pattern, "g"), replacement));
    }
  });
});

describe("what the linear-time engine refuses, with the reason", () => {
  it.each([
    ["(a)\\1", /\\1 is a backreference/],
    ["(?<x>a)\\k<x>", /\\k<x> is a backreference/],
    ["a(?=b)", /\(\?=…\) is a lookahead/],
    ["a(?!b)", /\(\?!…\) is a lookahead/],
    ["(?<=a)b", /\(\?<=…\) is a lookbehind/],
    ["(?<!a)b", /\(\?<!…\) is a lookbehind/],
    ["(", /is not a valid regular expression/],
    ["a{1001}", /refuses it: invalid repeat count/],
    [`x{${MAX_PROGRAM}}`, /is too large: it compiles to \d+ instructions, at most 1000/],
  ])("%s", (pattern, says) => {
    const compiled = compileLinearRegex(pattern);
    expect(compiled.ok).toBe(false);
    if (!compiled.ok) expect(compiled.problem).toMatch(says);
  });

  it("a run that would cost more than its budget is refused, not run", () => {
    const compiled = compileLinearRegex("[ab]{200}$");
    if (!compiled.ok) throw new Error(compiled.problem);
    expect(() => compiled.regex.test("ab".repeat(MAX_STEPS / 100))).toThrow(
      /characters long, more than this pattern may search/,
    );
    expect(compiled.regex.test("ab".repeat(100))).toBe(true);
  });

  it("the issue's ^(a+)+$ against 40 a's and a '!' takes milliseconds", () => {
    const compiled = compileLinearRegex("^(a+)+$");
    if (!compiled.ok) throw new Error(compiled.problem);
    const start = performance.now();
    expect(compiled.regex.test(`${"a".repeat(40)}!`)).toBe(false);
    expect(compiled.regex.test(`${"a".repeat(100_000)}!`)).toBe(false);
    expect(performance.now() - start).toBeLessThan(1_000);
  });
});
