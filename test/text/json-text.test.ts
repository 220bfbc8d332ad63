import { describe, expect, it } from "vitest";
import { escapeJsonText, jsonText } from "../../src/text/json-text.js";

// CONTRACT §15: JSON text the sandbox writes escapes <, > and & — and means the same values.

describe("jsonText", () => {
  const values: unknown[] = [
    "</script><script>alert(1)</script>",
    '<div xmlns="http://www.w3.org/1999/xhtml"><p>a &amp; b &lt; c</p></div>',
    { "<key>": ["&", ">", "<!--", "-->"], nested: { deep: "\u2028\u2029 \ud800 lone surrogate" } },
    "already escaped in the text: \\u003c stays a backslash and u003c",
    "",
    42,
    null,
  ];

  it.each(values.map((value) => ({ value })))(
    "$value: no raw <, > or &, and parses back to the same value",
    ({ value }) => {
      const text = jsonText(value);
      expect(text).not.toMatch(/[<>&]/);
      expect(JSON.parse(text)).toEqual(value);
    },
  );

  it("writes the escapes RFC 8259 §7 allows, as \\u003c, \\u003e, \\u0026", () => {
    expect(jsonText({ a: "<>&" })).toBe('{"a":"\\u003c\\u003e\\u0026"}');
  });

  it("text without markup comes back as it was", () => {
    const text = JSON.stringify({ resourceType: "Bundle", entry: [{ fullUrl: "urn:uuid:1" }] });
    expect(escapeJsonText(text)).toBe(text);
  });
});
