import { describe, expect, it } from "vitest";
import { xhtmlProblems } from "../../src/validation/xhtml.js";

const keys = (div: string) => xhtmlProblems(div).map((p) => p.key);

describe("narrative XHTML (R4 narrative.html; txt-1, txt-2)", () => {
  it.each([
    ['<div xmlns="http://www.w3.org/1999/xhtml"><p>Cashew nut allergy</p></div>', []],
    ["<div xmlns='http://www.w3.org/1999/xhtml' lang=\"en\">x</div>", []],
    ["<div><p>no namespace</p></div>", ["txt-1"]],
    ['<p xmlns="http://www.w3.org/1999/xhtml">not a div</p>', ["txt-1"]],
    ['<div xmlns="http://www.w3.org/1999/xhtml"><script>alert(1)</script>x</div>', ["txt-1"]],
    ['<div xmlns="http://www.w3.org/1999/xhtml"><p onclick="x()">x</p></div>', ["txt-1"]],
    ['<div xmlns="http://www.w3.org/1999/xhtml">  <p> </p></div>', ["txt-2"]],
    ['<div xmlns="http://www.w3.org/1999/xhtml"><img src="#a"/></div>', []],
  ])("%s", (div, expected) => {
    expect(keys(div)).toEqual(expected);
  });

  it("judges hostile narratives in one pass: thousands of namespace attributes, a megabyte of '<'", () => {
    const manyNamespaces = `<div ${'xmlns="http://www.w3.org/1999/xhtml" '.repeat(30_000)}>x`;
    expect(keys(manyNamespaces)).toEqual(["txt-1"]);
    // Unescaped '<' is text to this check (it is no XML parser); what matters is that it ends.
    expect(keys(`<div xmlns="http://www.w3.org/1999/xhtml">${"<".repeat(1_000_000)}</div>`)).toEqual([]);
  });
});
