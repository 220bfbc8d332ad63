import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { type MessageValidation, validateMessage } from "../../src/validation/validate-message.js";
import { issueCases, outcomeOf, POLICIES } from "./issue-cases.js";

/**
 * The validator gives exactly the issues (code, severity, expression,
 * diagnostics, order) it gave before its walk was made to allocate less:
 * the snapshot was written by the validator of an independent build
 * (main's dist/, before that change), over every HL7 example, every
 * mutation of them, the sandbox's example messages and hand-broken
 * messages (issue-cases.ts). To write it again from a build:
 *   VALIDATION_REFERENCE=/path/to/dist npx vitest run test/validation/issues-unchanged.test.ts
 */

const SNAPSHOT = fileURLToPath(new URL("../fixtures/validation-issues.json", import.meta.url));
type Outcomes = Record<string, Record<string, ReturnType<typeof outcomeOf>>>;

function outcomesBy(validate: typeof validateMessage): Outcomes {
  const out: Outcomes = {};
  for (const c of issueCases()) {
    const byPolicy: Outcomes[string] = {};
    for (const [name, policy] of Object.entries(POLICIES)) {
      if (name !== "strict" && !c.allPolicies) continue;
      byPolicy[name] = outcomeOf(validate(c.bundle(), policy) as MessageValidation);
    }
    out[c.name] = byPolicy;
  }
  return out;
}

const reference = process.env.VALIDATION_REFERENCE;

describe.runIf(reference)("writing the snapshot from a reference build", () => {
  it("writes test/fixtures/validation-issues.json", async () => {
    const module = (await import(`${reference}/validation/validate-message.js`)) as {
      validateMessage: typeof validateMessage;
    };
    // One case a line: a change shows as the cases it changes.
    const lines = Object.entries(outcomesBy(module.validateMessage)).map(
      ([name, outcomes]) => `${JSON.stringify(name)}: ${JSON.stringify(outcomes)}`,
    );
    writeFileSync(SNAPSHOT, `{\n${lines.join(",\n")}\n}\n`);
  }, 120_000);
});

describe.skipIf(reference)("the issues are those of the snapshot", () => {
  it("every case, every policy: the same errors and warnings, in the same order", () => {
    expect(existsSync(SNAPSHOT)).toBe(true);
    const expected = JSON.parse(readFileSync(SNAPSHOT, "utf8")) as Outcomes;
    const actual = outcomesBy(validateMessage);
    expect(Object.keys(actual)).toEqual(Object.keys(expected));
    for (const name of Object.keys(expected)) expect(actual[name], name).toEqual(expected[name]);
  }, 120_000);

  it("the snapshot is not vacuous: it holds many errors, warnings, and every rule family", () => {
    const expected = JSON.parse(readFileSync(SNAPSHOT, "utf8")) as Outcomes;
    const issues = Object.values(expected).flatMap((p) =>
      Object.values(p).flatMap((o) => [...o.errors, ...o.warnings]),
    );
    expect(Object.keys(expected).length).toBeGreaterThan(500);
    const codes = new Set(issues.map((i) => i.code));
    for (const code of ["structure", "required", "value", "code-invalid", "invariant", "not-found"]) {
      expect(codes, code).toContain(code);
    }
    expect(issues.filter((i) => i.severity === "warning").length).toBeGreaterThan(100);
    expect(issues.length).toBeGreaterThan(1_500);
  });
});
