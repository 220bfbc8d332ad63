import { describe, expect, it } from "vitest";
import { primitiveCheck } from "../../src/validation/primitives.js";

/** R4's own expression for base64Binary (datatypes.html#base64Binary), the reference for the one-pass reader. */
const R4_BASE64 = /^(?:(\s*([0-9a-zA-Z+/=]){4}\s*)+)$/;

describe("base64Binary", () => {
  it.each(["QUJD", "QUJDRA==", " QUJD RA== ", "QUJD\nRA==", "QUJ", "QU JD", "", "QUJD!", "QUJDR", "    "])(
    "%j is read as R4's regular expression reads it",
    (value) => {
      const problem = value.trim() === "" ? "blank" : primitiveCheck("base64Binary")(value);
      if (value.trim() !== "") expect(problem === undefined).toBe(R4_BASE64.test(value));
    },
  );

  it("a long whitespace-heavy value is judged (R4's expression, run as a regular expression, would backtrack for ages)", () => {
    const hostile = `${"QUJD    ".repeat(100_000)}!`;
    expect(primitiveCheck("base64Binary")(hostile)).toMatchObject({ code: "value" });
  });
});
