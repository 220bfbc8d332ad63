import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Patient } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { nextIdAfter } from "../../src/journal/journal-file.js";
import { messageBundle, post } from "../support/messages.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("call ids are handed out when a call starts", () => {
  it("calls that overlap keep the ids of their start, whatever order they end in", async () => {
    const { app, journal } = createApp();
    const slow = post(
      app,
      messageBundle("view-patient-profile", [
        {
          resourceType: "Patient",
          identifier: [{ system: "urn:ae:emirates-id", value: "784-1980-1212121-0" }],
        } as Patient,
      ]),
    );
    const fast = post(app, "not json");
    await Promise.all([slow, fast]);
    const byOperation = Object.fromEntries(journal.list().map((c) => [c.operation ?? "unreadable", c.id]));
    expect(byOperation).toEqual({ "view-patient-profile": "1", unreadable: "2" });
  });

  it("--journal-file continues after the highest id of the file, not the last line's", () => {
    const dir = mkdtempSync(join(tmpdir(), "call-ids-"));
    dirs.push(dir);
    const file = join(dir, "calls.ndjson");
    writeFileSync(
      file,
      `${JSON.stringify({ id: "1" })}\n${JSON.stringify({ id: "3" })}\n${JSON.stringify({ id: "2" })}\n`,
    );
    expect(nextIdAfter(file)).toBe(4);
  });
});
