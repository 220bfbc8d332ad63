import { describe, expect, it } from "vitest";
import { oneLineJson } from "../../src/text/one-line-json.js";

// A JSON text as one NDJSON line (issue 21, defect 12): same value, no raw line break, well-formed UTF-16.

/** No character that ends a line for some reader, no lone surrogate. */
const RAW_BREAK_OR_LONE_SURROGATE =
  /[\n\r\u0085\u2028\u2029]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

describe("oneLineJson", () => {
  it.each([
    ["compact JSON, as it is", '{"a":[1,2.50,"x y"]}', '{"a":[1,2.50,"x y"]}'],
    ["pretty-printed: line breaks and indentation go", '{\n  "a": [\n    1,\n    2.50\n  ]\n}\n', '{"a": [1,2.50]}'],
    ["CRLF and tabs", '{\r\n\t"a" :\t1\r\n}', '{"a" :\t1}'],
    ["spaces inside strings kept", '{ "a b" :\n " c\\n d " }\n', '{ "a b" :" c\\n d " }'],
    ["escapes kept as written", '[\n"\\"\\\\\\u00e9\\ud83d\\ude00"\n]\n', '["\\"\\\\\\u00e9\\ud83d\\ude00"]'],
    [
      "big and precise numbers kept as written",
      "[\n12345678901234567890,\n 1.10,\n 1e400]",
      "[12345678901234567890,1.10,1e400]",
    ],
    ["U+2028 and U+2029 in a string", '"a\u2028b\u2029c"', '"a\\u2028b\\u2029c"'],
    // Python's str.splitlines() ends a line at NEL too.
    ["U+0085 (NEL) in a string", '"a\u0085b"', '"a\\u0085b"'],
    ["a lone high surrogate in a string", '["a\ud800"]', '["a\\ud800"]'],
    ["a lone low surrogate in a string", '["\udc00b"]', '["\\udc00b"]'],
    ["a surrogate pair kept", '["\ud83d\ude00"]\n', '["\ud83d\ude00"]'],
    ["a raw line break inside a string (no JSON): still one line", '["a\nb\r c"]', '["abc"]'],
  ])("%s", (_name, text, expected) => {
    expect(oneLineJson(text)).toBe(expected);
  });

  it("gives back the very text when it is one line already", () => {
    const text = JSON.stringify({ content: "x".repeat(10_000), "</script>": "<>&" });
    expect(oneLineJson(text)).toBe(text);
  });

  it("keeps the value of any JSON, however it is laid out", () => {
    const strings = [
      "",
      "plain",
      "line\nbreak",
      "cr\r",
      "\u2028\u2029",
      "\ud800",
      "\udfff",
      "\ud83d\ude00",
      '"\\',
      "</script>",
    ];
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const value = (depth: number): unknown => {
      const kind = random(depth > 3 ? 4 : 6);
      if (kind === 0) return strings[random(strings.length)];
      if (kind === 1) return random(1000) - 500 + random(100) / 100;
      if (kind === 2) return [true, false, null][random(3)];
      if (kind === 3) return `${strings[random(strings.length)]}${random(10)}`;
      if (kind === 4) return Array.from({ length: random(4) }, () => value(depth + 1));
      return Object.fromEntries(
        Array.from({ length: random(4) }, () => [strings[random(strings.length)], value(depth + 1)]),
      );
    };
    const layouts: Array<(v: unknown) => string> = [
      (v) => JSON.stringify(v),
      (v) => JSON.stringify(v, null, 2),
      (v) => `${JSON.stringify(v, null, "\t").replaceAll("\n", "\r\n")}\r\n`,
      (v) => ` ${JSON.stringify(v, null, 1)}\n\n`,
      // JSON.stringify escapes lone surrogates; a client's JSON may hold them raw (valid JSON, not valid UTF-8).
      (v) =>
        JSON.stringify(v, null, 2).replace(/\\u(d[89a-f][0-9a-f]{2})/g, (_, hex) =>
          String.fromCharCode(Number.parseInt(hex, 16)),
        ),
    ];
    for (let i = 0; i < 500; i++) {
      const v = value(0);
      for (const layout of layouts) {
        const text = layout(v);
        const line = oneLineJson(text);
        expect(line).not.toMatch(RAW_BREAK_OR_LONE_SURROGATE);
        expect(JSON.parse(line)).toEqual(JSON.parse(text));
        // Its UTF-8 bytes read back as the same string.
        expect(new TextDecoder("utf-8", { fatal: true }).decode(Buffer.from(line))).toBe(line);
        expect(oneLineJson(line)).toBe(line);
      }
    }
  });

  it("gives one line even for text that is no JSON", () => {
    for (const text of ["\\\n", '"\\\n"', '"\\\ud800"', "a\u2028\n\r\udc00", '"unterminated\n', "\\"]) {
      expect(oneLineJson(text)).not.toMatch(RAW_BREAK_OR_LONE_SURROGATE);
    }
  });

  it("is linear: 1 MB pretty-printed and a 1 MB string of line breaks take milliseconds", () => {
    const pretty = JSON.stringify({ a: Array.from({ length: 50_000 }, (_, i) => ({ i })) }, null, 2);
    const breaks = JSON.stringify("\n\u2028".repeat(500_000));
    for (const text of [pretty, `${breaks}\n`]) {
      const began = performance.now();
      const line = oneLineJson(text);
      expect(performance.now() - began).toBeLessThan(1_000);
      expect(JSON.stringify(JSON.parse(line))).toBe(JSON.stringify(JSON.parse(text)));
    }
  });
});
