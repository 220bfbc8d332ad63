import type { Patient } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { messageBundle, post } from "../support/messages.js";

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
});
