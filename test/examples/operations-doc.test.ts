import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Bundle } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { renderOperationsDoc } from "../../src/examples/operations-doc.js";
import { ROOT } from "../cli/cli-process.js";
import { CONTRACT_OPERATION_IDS } from "../support/contract-operations.js";
import { r4Problems } from "../support/validator.js";

// docs/operations.md is generated from the code (npm run docs:operations) and kept equal to it here.

const DOC = readFileSync(join(ROOT, "docs/operations.md"), "utf8");

const OPERATIONS = CONTRACT_OPERATION_IDS;

describe("docs/operations.md", { timeout: 60_000 }, () => {
  it("is what the code generates (run npm run docs:operations after a change), the same on every run", async () => {
    const rendered = await renderOperationsDoc();
    expect(rendered).toBe(await renderOperationsDoc());
    expect(DOC).toBe(rendered);
  });

  it("has each of the 18 operations, a valid R4 request and an ok answer for each", () => {
    const sections = DOC.split(/^## /m).slice(1);
    expect(sections.map((s) => s.slice(0, s.indexOf("\n")))).toEqual(OPERATIONS);
    for (const section of sections) {
      const name = section.slice(0, section.indexOf("\n"));
      const request = /^Request .*\n\n```json\n([\s\S]*?)\n```/m.exec(section)?.[1];
      expect(request, name).toBeDefined();
      const bundle = JSON.parse(request as string) as Bundle;
      expect(bundle.entry?.[0]?.resource, name).toMatchObject({
        resourceType: "MessageHeader",
        eventCoding: { code: name },
      });
      expect(r4Problems(bundle), name).toEqual([]);
      expect(section, name).toMatch(/^Answer: `200`, a response message \(`response\.code`: `ok`\)/m);
    }
  });
});
