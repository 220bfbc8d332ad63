import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { R4 } from "../../src/validation/r4/definitions.js";

const ROOT = new URL("../../", import.meta.url);

describe("the compiled R4 definitions", () => {
  it("are what scripts/compile-r4-definitions.mjs makes of the installed HL7 definitions (regenerate when they change)", () => {
    const out = execFileSync(process.execPath, ["scripts/compile-r4-definitions.mjs", "--check"], {
      cwd: ROOT,
      encoding: "utf8",
    });
    expect(out).toMatch(/is up to date/);
  });

  it("hold R4 4.0.1 only: no R4B resource, no element Medplum adds for its own server", () => {
    expect(R4.fhirVersion).toBe("4.0.1");
    expect(R4.types.SubscriptionStatus).toBeUndefined();
    expect(Object.keys(R4.types.Meta?.elements ?? {}).sort()).toEqual(
      // R4 Meta (datatypes.html#Meta): id, extension, versionId, lastUpdated, source, profile, security, tag.
      ["extension", "id", "lastUpdated", "profile", "security", "source", "tag", "versionId"],
    );
    expect(R4.types.Binary?.elements.url).toBeUndefined();
  });

  it("docs/validation.md lists every value set that cannot be expanded, and no other", () => {
    const doc = readFileSync(new URL("docs/validation.md", ROOT), "utf8");
    const section = doc.slice(doc.indexOf("**Value sets that cannot be checked.**"), doc.indexOf("SNOMED CT, LOINC"));
    const listed = [...section.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]).sort();
    const unexpandable = Object.entries(R4.valueSets)
      .filter(([, v]) => "unexpandable" in v)
      .map(([url]) => url)
      .sort();
    expect(listed).toEqual(unexpandable);
  });
});
