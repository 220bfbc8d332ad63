import { describe, expect, it } from "vitest";
import { primitiveCheck } from "../../src/validation/primitives.js";

/** R4's own expression for base64Binary (datatypes.html#base64Binary), the reference for the one-pass reader. */
const R4_BASE64 = /^(?:(\s*([0-9a-zA-Z+/=]){4}\s*)+)$/;

describe("base64Binary", () => {
  it.each(["QUJD", "QUJDRA==", " QUJD RA== ", "QUJD\nRA==", "QUJ", "QU JD", "", "QUJD!", "QUJDR", "    "])(
    "%j is read as R4's regular expression reads it",
    (value) => {
      const problem = primitiveCheck("base64Binary")(value);
      expect(problem === undefined).toBe(R4_BASE64.test(value));
      // R4's expression needs at least one group of four, and JSON forbids empty values (json.html): refused as a value.
      if (value.trim() === "") expect(problem).toMatchObject({ code: "value" });
    },
  );

  it("a long whitespace-heavy value is judged (R4's expression, run as a regular expression, would backtrack for ages)", () => {
    const hostile = `${"QUJD    ".repeat(100_000)}!`;
    expect(primitiveCheck("base64Binary")(hostile)).toMatchObject({ code: "value" });
  });
});

describe("a message of many mistakes", () => {
  it("is answered with the first 100 problems and a count of the rest, not megabytes (CONTRACT §15)", async () => {
    const { createApp } = await import("../../src/app.js");
    const { messageBundle, post } = await import("../support/messages.js");
    const unknown = Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`x${i}`, 1]));
    const reply = await post(
      createApp().app,
      messageBundle("view-patient-profile", [{ resourceType: "Patient", id: "p1", ...unknown } as never]),
    );
    expect(reply.status).toBe(400);
    const issues = reply.body.issue as Array<{ code: string; severity: string; diagnostics: string }>;
    expect(issues).toHaveLength(101);
    expect(issues[0]?.diagnostics).toMatch(/^"x0" is not an element of Patient/);
    expect(issues.at(-1)).toMatchObject({ code: "too-costly", severity: "error" });
    // The walk stops at 1,000 problems (docs/validation.md): 900 more than the 100 shown, and maybe others.
    expect(issues.at(-1)?.diagnostics).toMatch(
      /^…and at least 900 more issues not shown: an answer lists the first 100, and validation stopped before the end of the message/,
    );
  });

  it("of fewer than 1,000 problems, is answered with an exact count of the rest", async () => {
    const { createApp } = await import("../../src/app.js");
    const { messageBundle, post } = await import("../support/messages.js");
    const unknown = Object.fromEntries(Array.from({ length: 900 }, (_, i) => [`x${i}`, 1]));
    const reply = await post(
      createApp().app,
      messageBundle("view-patient-profile", [{ resourceType: "Patient", id: "p1", ...unknown } as never]),
    );
    const issues = reply.body.issue as Array<{ diagnostics: string }>;
    expect(issues).toHaveLength(101);
    expect(issues.at(-1)?.diagnostics).toMatch(/^…and 800 more issues not shown: an answer lists the first 100\. /);
  });
});
