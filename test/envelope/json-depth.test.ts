import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH, parseJson } from "../../src/envelope/json.js";
import { envelope, exampleFiles, messageBundle } from "../support/messages.js";

// parseJson reads the nesting from the text (no allocation) and walks the parsed value only when the text nests too
// deep. The reference: the depth of the parsed value, counted recursively as the README counts it (the outermost
// object or array is level 1), refused past the limit.

const EXAMPLES = fileURLToPath(new URL("../fixtures/fhir-examples/", import.meta.url));

const depthOf = (value: unknown): number =>
  value !== null && typeof value === "object"
    ? 1 + Math.max(0, ...Object.values(value as Record<string, unknown>).map(depthOf))
    : 0;

/** What parseJson must answer, by the reference. */
function expected(text: string, maxDepth: number): { ok: boolean; reason?: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: (error as Error).message };
  }
  return depthOf(value) > maxDepth ? { ok: false, reason: `nesting deeper than ${maxDepth} levels` } : { ok: true };
}

const nested = (open: string, close: string, levels: number, inner = "1") =>
  `${open.repeat(levels)}${inner}${close.repeat(levels)}`;

const TABLE: Array<[string, string, number]> = [
  ["a number", "1", 0],
  ["a string", '"x"', 0],
  ["null", "null", 0],
  ["an empty object", "{}", 0],
  ["an empty object, limit 1", "{}", 1],
  ["an empty array, limit 1", "[]", 1],
  ["two levels, limit 1", "[[]]", 1],
  ["arrays at the limit", nested("[", "]", MAX_JSON_DEPTH, ""), MAX_JSON_DEPTH],
  ["arrays one past the limit", nested("[", "]", MAX_JSON_DEPTH + 1, ""), MAX_JSON_DEPTH],
  ["objects at the limit", nested('{"a":', "}", MAX_JSON_DEPTH), MAX_JSON_DEPTH],
  ["objects one past the limit", nested('{"a":', "}", MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH],
  ["brackets inside a string", '{"a":"[[[[{{{{"}', 2],
  ["closing brackets inside a string", '[["]]]]"],[[1]]]', 3],
  ["an escaped quote inside a string", '{"a":"x\\"[[[[","b":[[1]]}', 3],
  ["an escaped backslash before the closing quote", '{"a":"x\\\\","b":[[[1]]]}', 3],
  ["an escaped backslash before the closing quote, limit 3", '{"a":"x\\\\","b":[[[1]]]}', 4],
  ["three backslashes and a quote", '["\\\\\\"[[[",[[1]]]', 2],
  ["a key with brackets", '{"[[[[":{"{{{{":1}}', 2],
  ["whitespace between tokens", "[ [ [\n1 ] ]\t]", 3],
  ["whitespace between tokens, limit 2", "[ [ [\n1 ] ]\t]", 2],
  ["siblings deep in turn", '{"a":[[1]],"b":{"c":{"d":[]}}}', 3],
  ["siblings deep in turn, limit 4", '{"a":[[1]],"b":{"c":{"d":[]}}}', 4],
  ["a deep member a later duplicate key replaced", `{"a":${nested("[", "]", 10)},"a":1}`, 3],
  ["a deep member a later duplicate key replaced by a deep one", `{"a":${nested("[", "]", 10)},"a":[[1]]}`, 2],
  ["an envelope: the content is one string", JSON.stringify({ content: nested("[", "]", 500) }), 2],
  ["unicode and escapes", '{"a":"\\u005b\\u005b é 😀 \u2028","b":[1]}', 2],
  ["not JSON", "[[[", 2],
  ["empty text", "", 2],
];

describe("parseJson's nesting limit", () => {
  it.each(TABLE)("%s", (_name, text, maxDepth) => {
    const parsed = parseJson(text, maxDepth);
    const want = expected(text, maxDepth);
    expect(parsed.ok).toBe(want.ok);
    if (!parsed.ok) expect(parsed.reason).toBe(want.reason);
    else expect(parsed.value).toEqual(JSON.parse(text));
  });

  it("answers as the reference for every HL7 example and its message, at, below and above its depth", () => {
    for (const file of exampleFiles()) {
      const text = readFileSync(`${EXAMPLES}${file}`, "utf8");
      const resource = JSON.parse(text);
      const message = JSON.stringify(messageBundle("add-allergy", [resource]));
      for (const candidate of [text, message, envelope(JSON.parse(message))]) {
        const depth = depthOf(JSON.parse(candidate));
        for (const limit of [1, depth - 1, depth, depth + 1, MAX_JSON_DEPTH]) {
          expect(parseJson(candidate, limit).ok, `${file} at limit ${limit}`).toBe(expected(candidate, limit).ok);
        }
      }
    }
  });
});
