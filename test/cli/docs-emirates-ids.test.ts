import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { luhnValid } from "../support/emirates-id.js";
import { ROOT } from "./cli-process.js";

/**
 * The docs describe Emirates IDs as 784-YYYY-NNNNNNN-C with a Luhn check
 * digit, and the sandbox refuses any other (CONTRACT §11): every example a
 * reader copies from the README, docs/ or the shipped scenarios must pass
 * that check. Checked with the test's own Luhn (test/support/emirates-id.ts).
 */

/** An Emirates ID as written in prose and YAML; dashes optional, not inside a longer number. */
const EMIRATES_ID = /(?<![\d-])784-?\d{4}-?\d{7}-?\d(?![\d-])/g;

function files(dir: string, extension: RegExp): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path, extension);
    return extension.test(name) ? [path] : [];
  });
}

const DOCUMENTS = [
  join(ROOT, "README.md"),
  ...files(join(ROOT, "docs"), /\.md$/),
  ...files(join(ROOT, "scenarios"), /\.ya?ml$/),
];

const examples = DOCUMENTS.flatMap((file) =>
  readFileSync(file, "utf8")
    .split("\n")
    .flatMap((text, i) =>
      [...text.matchAll(EMIRATES_ID)].map((m) => ({ where: `${relative(ROOT, file)}:${i + 1}`, id: m[0] })),
    ),
);

describe("Emirates IDs in the README, docs/ and scenarios/", () => {
  it("are found (the scan reads the documents it should)", () => {
    const where = new Set(examples.map((e) => e.where.split(":")[0]));
    expect(where).toContain("README.md");
    expect(where).toContain("scenarios/00-test-patients.yaml");
    expect(examples.length).toBeGreaterThan(30);
  });

  it("each pass the Luhn check digit the docs describe", () => {
    const failing = examples.filter(({ id }) => !luhnValid(id.replaceAll("-", "")));
    expect(failing).toEqual([]);
  });
});
